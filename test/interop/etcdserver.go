package interop

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/listwatch/listwatch/storage"
)

// etcdStartTimeout bounds an embedded member's start; a single member with no
// fsync is ready in well under a second, but the race detector and a loaded
// 2-core machine slow it down several times.
const etcdStartTimeout = 30 * time.Second

// RunEtcd starts a single-member etcd in this process on free loopback ports,
// with its data in t.TempDir(), and returns a client of it. Both are closed
// when t ends. The member accepts requests big enough for a value of
// storage.MaxValueSize; configure, if given, changes its configuration
// before it starts.
func RunEtcd(t testing.TB, configure ...func(*embed.Config)) *clientv3.Client {
	t.Helper()
	var (
		e   *embed.Etcd
		err error
	)
	// A free port found by listening may be taken before etcd listens on it
	// (by a concurrent test process): try again with new ports.
	for range 3 {
		if e, err = startEtcd(t, configure); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{e.Clients[0].Addr().String()},
		DialTimeout: etcdStartTimeout,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// startEtcd starts one member and waits until it serves.
func startEtcd(t testing.TB, configure []func(*embed.Config)) (*embed.Etcd, error) {
	cfg, err := etcdConfig(t)
	if err != nil {
		return nil, err
	}
	for _, f := range configure {
		f(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(etcdStartTimeout):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after %v", etcdStartTimeout)
	}
}

// etcdConfig is a fast, quiet single-member configuration on free ports.
func etcdConfig(t testing.TB) (*embed.Config, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := memberConfig(t, embed.DefaultName, ports[0], ports[1])
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	return cfg, nil
}

// memberConfig is a fast, quiet configuration of the member name, serving
// clients and peers on the loopback ports given; the caller sets its
// InitialCluster.
func memberConfig(t testing.TB, name string, clientPort, peerPort int) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = t.TempDir()
	cfg.UnsafeNoFsync = true
	cfg.MaxRequestBytes = storage.MaxValueSize + storage.MaxKeySize + 64*1024
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(
		zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel)).Named("etcd-" + name))
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	return cfg
}

// FreePorts returns n loopback ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
