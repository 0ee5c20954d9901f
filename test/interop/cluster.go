package interop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/rest"
)

// Cluster is listwatch as it runs where one machine is not enough: a
// three-member etcd cluster, listwatch servers on it, and a TCP balancer in
// front of the servers. Everything runs on loopback and stops when the test
// ends; Kill methods make a member or a server fail in the middle of a run.
type Cluster struct {
	Etcd     *EtcdCluster
	Servers  []*Listwatch // in the order started; the first two are behind Balancer
	Balancer *Balancer

	t    testing.TB
	bin  string
	args []string // every server's flags
}

// StartCluster starts a three-member etcd cluster, two listwatch servers
// (bin, with args) on it, each given all three members' endpoints and the
// same service account signing key, and a balancer in front of the two. It
// returns a client configuration for the balancer.
func StartCluster(t testing.TB, bin string, args ...string) (*rest.Config, *Cluster) {
	t.Helper()
	ec := StartEtcdCluster(t, 3)
	c := &Cluster{Etcd: ec, t: t, bin: bin, args: append([]string{
		"--storage", "etcd",
		"--etcd-endpoints", strings.Join(ec.Endpoints(), ","),
		"--service-account-signing-key-file", writeSigningKey(t),
	}, args...)}
	a, b := c.StartServer(), c.StartServer()
	c.Balancer = StartBalancer(t, hostPort(t, a.URL), hostPort(t, b.URL))
	return &rest.Config{Host: "http://" + c.Balancer.Addr}, c
}

// StartServer starts another server on the cluster, not behind the
// balancer, and returns it.
func (c *Cluster) StartServer() *Listwatch {
	c.t.Helper()
	lw := StartListwatch(c.t, c.bin, c.args...)
	c.Servers = append(c.Servers, lw)
	return lw
}

// KillServer ends server i with SIGKILL, as a crash would: the balancer's
// connections to it end as the kernel closes its sockets, and new ones skip
// it, refused.
func (c *Cluster) KillServer(i int) {
	c.t.Helper()
	if err := c.Servers[i].Kill(); err != nil {
		c.t.Fatalf("kill server %d: %v", i, err)
	}
}

// writeSigningKey writes a new ECDSA key for service account tokens: the
// servers of one cluster must sign with the same key, or a token one
// issues fails on the others.
func writeSigningKey(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "service-account.key")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostPort is the host:port of a URL.
func hostPort(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("server URL %q: %v", rawURL, err)
	}
	return u.Host
}

// EtcdCluster is an etcd cluster whose members run in this process. Clients
// reach each member through a Balancer of its own (its front), so that
// killing a member cuts its clients' connections at once, as a machine
// that dies does, rather than as etcd's graceful shutdown does.
type EtcdCluster struct {
	members []*etcdMember
}

type etcdMember struct {
	cfg    *embed.Config
	etcd   *embed.Etcd
	front  *Balancer
	killed bool
	closed chan struct{} // closed when etcd.Close has returned
}

// StartEtcdCluster starts a cluster of n members on free loopback ports,
// their data in t.TempDir(), and waits until each serves. It stops when t
// ends.
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	var (
		ec  *EtcdCluster
		err error
	)
	// Free ports may be taken before etcd listens on them: try again.
	for range 3 {
		if ec, err = startEtcdCluster(t, n); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("start an etcd cluster of %d: %v", n, err)
	}
	t.Cleanup(ec.close)
	for _, m := range ec.members {
		m.front = StartBalancer(t, m.etcd.Clients[0].Addr().String())
	}
	return ec
}

// Restart starts killed member i again, on its data and ports and behind a
// front at its old address: it rejoins the cluster and catches up, and its
// clients find it where it was.
func (ec *EtcdCluster) Restart(t testing.TB, i int) {
	t.Helper()
	m := ec.members[i]
	<-m.closed
	e, err := embed.StartEtcd(m.cfg)
	if err != nil {
		t.Fatalf("restart etcd member %d: %v", i, err)
	}
	m.etcd, m.killed, m.closed = e, false, make(chan struct{})
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd member %d failed while restarting: %v", i, err)
	case <-time.After(etcdStartTimeout):
		t.Fatalf("etcd member %d not ready %v after its restart", i, etcdStartTimeout)
	}
	m.front = startBalancerAt(t, m.front.Addr, e.Clients[0].Addr().String())
}

func startEtcdCluster(t testing.TB, n int) (*EtcdCluster, error) {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	cfgs := make([]*embed.Config, n)
	initial := make([]string, n)
	for i := range cfgs {
		cfgs[i] = memberConfig(t, fmt.Sprintf("m%d", i), ports[2*i], ports[2*i+1])
		initial[i] = cfgs[i].Name + "=" + cfgs[i].AdvertisePeerUrls[0].String()
	}
	ec := &EtcdCluster{}
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "listwatch-test"
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			ec.close()
			return nil, err
		}
		ec.members = append(ec.members, &etcdMember{cfg: cfg, etcd: e, closed: make(chan struct{})})
	}
	// A member is ready once the cluster has a leader and it has joined.
	deadline := time.After(etcdStartTimeout)
	for _, m := range ec.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case err := <-m.etcd.Err():
			ec.close()
			return nil, fmt.Errorf("etcd member %s failed while starting: %w", m.etcd.Config().Name, err)
		case <-deadline:
			ec.close()
			return nil, fmt.Errorf("etcd cluster not ready after %v", etcdStartTimeout)
		}
	}
	return ec, nil
}

// Endpoints are the members' client URLs, as clients should be given them.
func (ec *EtcdCluster) Endpoints() []string {
	out := make([]string, len(ec.members))
	for i := range ec.members {
		out[i] = ec.Endpoint(i)
	}
	return out
}

// Endpoint is member i's client URL.
func (ec *EtcdCluster) Endpoint(i int) string { return "http://" + ec.members[i].front.Addr }

// Leader is the index of the member that leads the cluster, waiting up to
// etcdStartTimeout for an election to end (a loaded machine can miss a
// heartbeat and start one).
func (ec *EtcdCluster) Leader() (int, error) {
	deadline := time.Now().Add(etcdStartTimeout)
	for {
		for i, m := range ec.members {
			if !m.killed && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no live member has led the cluster for %v", etcdStartTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KillLeader kills (see Kill) the member that leads the cluster and
// returns its index.
func (ec *EtcdCluster) KillLeader(t testing.TB) int {
	t.Helper()
	i, err := ec.Leader()
	if err != nil {
		t.Fatal(err)
	}
	ec.Kill(i)
	return i
}

// Kill makes member i fail as a crash would: its clients' connections are
// cut and new ones refused, and its raft node stops at once, without
// handing leadership over. The rest of its shutdown (closing its listeners
// and files) runs in the background, done before the test ends.
func (ec *EtcdCluster) Kill(i int) {
	m := ec.members[i]
	m.front.Close()
	m.stop()
}

// stop stops the member's raft node at once, and closes the rest in the
// background.
func (m *etcdMember) stop() {
	m.killed = true
	m.etcd.Server.HardStop()
	go func() {
		defer close(m.closed)
		m.etcd.Close()
	}()
}

// close stops every member and waits until they are closed. Stopping
// their raft nodes first spares each a leadership transfer to members
// already gone, which waits for etcd's request timeout (7 s).
func (ec *EtcdCluster) close() {
	for _, m := range ec.members {
		if !m.killed {
			m.stop()
		}
	}
	for _, m := range ec.members {
		<-m.closed
	}
}

// balancerDialTimeout bounds a connect to one backend. On loopback a live
// backend accepts and a dead one refuses at once; the bound is for a
// machine so loaded that neither happens soon.
const balancerDialTimeout = 5 * time.Second

// Balancer is a TCP load balancer on a loopback port, as an L4 balancer in
// front of several servers: each connection it accepts is proxied to the
// next backend in turn that accepts one (one that refuses is skipped), and
// the proxied connection ends, both sides, when either side ends it, so
// that a backend's death ends its clients' connections.
type Balancer struct {
	Addr string // host:port clients connect to

	ln net.Listener
	wg sync.WaitGroup // the accept loop and the connections' goroutines

	mu sync.Mutex
	// guarded by mu:
	backends []string
	next     int                   // where the next connection's search starts
	conns    map[net.Conn]struct{} // both ends of every proxied connection
	closed   bool
}

// StartBalancer starts a balancer on a free loopback port in front of
// backends (host:port). It stops when t ends.
func StartBalancer(t testing.TB, backends ...string) *Balancer {
	t.Helper()
	return startBalancerAt(t, "127.0.0.1:0", backends...)
}

func startBalancerAt(t testing.TB, addr string, backends ...string) *Balancer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("balancer: %v", err)
	}
	b := &Balancer{Addr: ln.Addr().String(), ln: ln, backends: backends, conns: map[net.Conn]struct{}{}}
	b.wg.Go(b.accept)
	t.Cleanup(b.Close)
	return b
}

// SetBackends replaces the backends that new connections go to; the
// connections open stay where they are.
func (b *Balancer) SetBackends(backends ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = backends
}

// Close stops accepting, ends every proxied connection and waits for
// their goroutines.
func (b *Balancer) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.ln.Close()
		for c := range b.conns {
			c.Close()
		}
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *Balancer) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return // closed
		}
		b.wg.Go(func() { b.proxy(c) })
	}
}

// proxy copies between client and a backend until either side ends.
func (b *Balancer) proxy(client net.Conn) {
	backend := b.dial()
	if backend == nil || !b.track(client, backend) {
		client.Close()
		if backend != nil {
			backend.Close()
		}
		return
	}
	defer b.untrack(client, backend)
	end := func() {
		client.Close()
		backend.Close()
	}
	var up sync.WaitGroup
	up.Go(func() {
		io.Copy(backend, client)
		end()
	})
	io.Copy(client, backend)
	end()
	up.Wait()
}

// dial connects to the next backend that accepts, or returns nil if none
// does.
func (b *Balancer) dial() net.Conn {
	b.mu.Lock()
	backends, start := b.backends, b.next
	b.next++
	b.mu.Unlock()
	for i := range backends {
		c, err := net.DialTimeout("tcp", backends[(start+i)%len(backends)], balancerDialTimeout)
		if err == nil {
			return c
		}
	}
	return nil
}

func (b *Balancer) track(conns ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	for _, c := range conns {
		b.conns[c] = struct{}{}
	}
	return true
}

func (b *Balancer) untrack(conns ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range conns {
		delete(b.conns, c)
	}
}
