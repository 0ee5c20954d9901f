package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// CRUDConfig configures `listwatch bench crud`: how fast the server starts,
// what it costs idle, and create and get throughput from concurrent clients.
type CRUDConfig struct {
	Clients  int
	Duration time.Duration // of each phase (creates, then gets)
	Size     int
	Kind     string // KindConfigMaps ("") or KindPods
	// Target is the server; with an empty URL a child is started from
	// Server (and only then is its start-up timed).
	Target Process
	Server ServerOptions
}

// MaxClients bounds a CRUD run's concurrent clients.
const MaxClients = 1024

// CRUDReport is the outcome of a CRUD run.
type CRUDReport struct {
	Config  CRUDConfig
	Ready   time.Duration // from exec to the first 200 from /readyz (0 for --server)
	IdleRSS int64         // after start-up, before any request
	Creates Throughput
	Gets    Throughput
	HWM     int64 // peak RSS over the run
	// CreateCommits are the server's store commits over the creates; nil
	// when it does not export them (etcd, an older binary).
	CreateCommits *StoreCommits
}

// Throughput is one phase's operations, rate, latency and server CPU.
type Throughput struct {
	Ops, Failed int64
	PerSecond   float64
	Latency     Latency
	CPUPerOp    time.Duration // the server's
	// ClientCPUPerOp is the load generator's own CPU per operation: the two
	// share the machine, so a costly generator lowers the rate it can reach.
	ClientCPUPerOp time.Duration
}

// CRUD starts (or uses) a server and measures it.
func CRUD(ctx context.Context, cfg CRUDConfig) (*CRUDReport, error) {
	switch {
	case cfg.Clients < 1 || cfg.Clients > MaxClients:
		return nil, fmt.Errorf("--clients %d: must be in [1, %d]", cfg.Clients, MaxClients)
	case cfg.Duration <= 0 || cfg.Duration > MaxDuration:
		return nil, fmt.Errorf("--duration %v: must be in (0, %v]", cfg.Duration, MaxDuration)
	case cfg.Size < 0 || cfg.Size > MaxSize:
		return nil, fmt.Errorf("--size %d: must be in [0, %d]", cfg.Size, MaxSize)
	}
	rep := &CRUDReport{Config: cfg}
	p := cfg.Target
	if p.URL == "" {
		ch, started, ready, err := startTimed(ctx, cfg.Server)
		if err != nil {
			return nil, err
		}
		defer ch.stop()
		p, rep.Ready = started, ready
	}
	return rep, crud(ctx, rep, p)
}

// startTimed starts a server like startServer, polling /readyz every
// millisecond so that the time to ready is measured to the millisecond.
func startTimed(ctx context.Context, o ServerOptions) (*child, Process, time.Duration, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, Process{}, 0, err
	}
	start := time.Now()
	ch, err := startChild(o.Binary, o.Env, nil, func(dir string) []string {
		return append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data")}, o.Args...)
	})
	if err != nil {
		return nil, Process{}, 0, err
	}
	p := Process{URL: "http://" + addr, PID: ch.pid()}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for !probe(ctx, http.DefaultClient, p.URL+"/readyz") {
		select {
		case <-ch.done:
			return nil, Process{}, 0, ch.failure(errors.New("the server exited before it was ready"))
		case <-ctx.Done():
			ch.stop()
			return nil, Process{}, 0, fmt.Errorf("waiting for the server: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return ch, p, time.Since(start), nil
}

func crud(ctx context.Context, rep *CRUDReport, p Process) error {
	u, err := ReadUsage(p.PID)
	if err != nil {
		return err
	}
	rep.IdleRSS = u.RSS
	k, err := kindFor(rep.Config.Kind)
	if err != nil {
		return err
	}
	a := newAPIClient(p, k)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return err
	}
	addr := hostPort(p.URL)
	conns := make([]rawConn, rep.Config.Clients) // client c's own connection
	for i := range conns {
		conns[i].tls, conns[i].auth = p.clientTLS(), authorization(p.Token)
	}
	defer func() {
		for i := range conns {
			conns[i].close()
		}
	}()
	created := make([]atomic.Int64, rep.Config.Clients) // client c created c<c>-0 .. c<c>-<n-1>
	create := func(ctx context.Context, client, i int) error {
		body := k.object(fmt.Sprintf("c%d-%d", client, i), rep.Config.Size, time.Now())
		if err := conns[client].send(ctx, addr, http.MethodPost, k.path, body); err != nil {
			return err
		}
		created[client].Store(int64(i) + 1)
		return nil
	}
	commits, _ := a.commitBuckets(ctx)
	if rep.Creates, err = phase(ctx, p.PID, rep.Config, create); err != nil {
		return err
	}
	rep.CreateCommits = a.storeCommits(ctx, commits)
	owners := readOwners(created)
	get := func(ctx context.Context, client, i int) error {
		owner := owners[client]
		n := max(created[owner].Load(), 1)
		name := "c" + strconv.Itoa(owner) + "-" + strconv.FormatInt(int64(i)%n, 10)
		return conns[client].send(ctx, addr, http.MethodGet, k.path+"/"+name, nil)
	}
	if rep.Gets, err = phase(ctx, p.PID, rep.Config, get); err != nil {
		return err
	}
	u, err = ReadUsage(p.PID)
	rep.HWM = u.HWM
	return err
}

// readOwners gives each client the client whose objects it reads: its
// own, unless it created none in time (a slow first connection), so that
// its gets do not fail on names that were never created.
func readOwners(created []atomic.Int64) []int {
	owners := make([]int, len(created))
	for c := range owners {
		owners[c] = c
		for k := 1; created[owners[c]].Load() == 0 && k < len(owners); k++ {
			owners[c] = (c + k) % len(owners)
		}
	}
	return owners
}

// phase runs op from every client for the configured duration and measures it.
func phase(ctx context.Context, pid int, cfg CRUDConfig, op func(ctx context.Context, client, i int) error) (Throughput, error) {
	u0, err := ReadUsage(pid)
	if err != nil {
		return Throughput{}, err
	}
	self0, err := readCPU(os.Getpid())
	if err != nil {
		return Throughput{}, err
	}
	var h histogram
	var ops, failed atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				t := time.Now()
				if err := op(ctx, c, i); err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				h.record(c, time.Since(t))
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	u1, err := ReadUsage(pid)
	if err != nil {
		return Throughput{}, err
	}
	self1, err := readCPU(os.Getpid())
	if err != nil {
		return Throughput{}, err
	}
	t := Throughput{Ops: ops.Load(), Failed: failed.Load(), PerSecond: float64(ops.Load()) / elapsed.Seconds(), Latency: h.summary()}
	if t.Ops > 0 {
		t.CPUPerOp = (u1.CPU - u0.CPU) / time.Duration(t.Ops)
		t.ClientCPUPerOp = (self1 - self0) / time.Duration(t.Ops)
	}
	return t, nil
}

// rawConn is one client's keep-alive HTTP/1.1 connection. It writes each
// request itself and reads the response with http.ReadResponse: net/http's
// Transport costs the load generator about as much CPU again as the server
// spends on a get (two goroutines and their hand-offs per connection), and
// the generator shares the server's cores.
type rawConn struct {
	tls      *tls.Config // for https
	auth     string      // the Authorization header line, if any
	conn     net.Conn
	r        *bufio.Reader
	w        *bufio.Writer
	deadline time.Time
}

// requestTimeout bounds one request, as the other benchmarks' clients do.
const requestTimeout = 30 * time.Second

// send makes one request (dialling addr if the connection is not open) and
// fails unless it answers 2xx. A failed connection is closed; the next
// request dials again.
func (c *rawConn) send(ctx context.Context, addr, method, path string, body []byte) error {
	err := c.roundTrip(ctx, addr, method, path, body)
	if err == nil {
		return nil
	}
	c.close()
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		// Cut short by the phase's end: its timer may not have fired yet.
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (c *rawConn) roundTrip(ctx context.Context, addr, method, path string, body []byte) error {
	if c.conn == nil {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		if c.tls != nil {
			t, err := handshakeHTTP1(ctx, conn, addr, c.tls)
			if err != nil {
				conn.Close()
				return err
			}
			conn = t
		}
		c.conn, c.r, c.w, c.deadline = conn, bufio.NewReader(conn), bufio.NewWriter(conn), time.Time{}
	}
	// The phase's end cuts a request short, as a cancelled context would.
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > requestTimeout {
		deadline = time.Now().Add(requestTimeout)
	}
	if !deadline.Equal(c.deadline) {
		if err := c.conn.SetDeadline(deadline); err != nil {
			return err
		}
		c.deadline = deadline
	}
	c.w.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n" + c.auth)
	if body != nil {
		c.w.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	c.w.WriteString("\r\n")
	c.w.Write(body)
	if err := c.w.Flush(); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
	case resp.Close:
		c.close()
	}
	return nil
}

func (c *rawConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// Print writes the CRUD report.
func (r *CRUDReport) Print(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "crud: %d clients, %d B objects, %v per phase\n", c.Clients, c.Size, c.Duration)
	if r.Ready > 0 {
		fmt.Fprintf(w, "ready after %s; idle RSS %.1f MiB\n", ms(r.Ready), mib(r.IdleRSS))
	}
	for _, ph := range []struct {
		name string
		t    Throughput
	}{{"create", r.Creates}, {"get", r.Gets}} {
		fmt.Fprintf(w, "%-6s %8d ok %5d failed  %9.0f/s  p50 %s  p99 %s  server CPU %.1f µs/op  load generator CPU %.1f µs/op\n",
			ph.name, ph.t.Ops, ph.t.Failed, ph.t.PerSecond, ms(ph.t.Latency.P50), ms(ph.t.Latency.P99), us(ph.t.CPUPerOp), us(ph.t.ClientCPUPerOp))
		if ph.name == "create" && r.CreateCommits != nil {
			fmt.Fprintf(w, "%-6s store commit p99 / max <= %s\n", "", r.CreateCommits)
		}
	}
	_, err := fmt.Fprintf(w, "peak RSS %.1f MiB\n", mib(r.HWM))
	return err
}
