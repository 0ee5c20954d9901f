package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
}

// Throughput is one phase's operations, rate, latency and server CPU.
type Throughput struct {
	Ops, Failed int64
	PerSecond   float64
	Latency     Latency
	CPUPerOp    time.Duration
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
	for !probe(ctx, p.URL+"/readyz") {
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
	u, err := readUsage(p.PID)
	if err != nil {
		return err
	}
	rep.IdleRSS = u.RSS
	a := newAPIClient(p.URL)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: rep.Config.Clients, MaxConnsPerHost: rep.Config.Clients}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	created := make([]atomic.Int64, rep.Config.Clients) // client c created c<c>-0 .. c<c>-<n-1>
	create := func(ctx context.Context, client, i int) error {
		body := configMap(fmt.Sprintf("c%d-%d", client, i), rep.Config.Size, time.Now())
		if err := send(ctx, hc, http.MethodPost, p.URL+configMaps, body); err != nil {
			return err
		}
		created[client].Store(int64(i) + 1)
		return nil
	}
	if rep.Creates, err = phase(ctx, p.PID, rep.Config, create); err != nil {
		return err
	}
	get := func(ctx context.Context, client, i int) error {
		n := max(created[client].Load(), 1)
		name := "c" + strconv.Itoa(client) + "-" + strconv.FormatInt(int64(i)%n, 10)
		return send(ctx, hc, http.MethodGet, p.URL+configMaps+"/"+name, nil)
	}
	if rep.Gets, err = phase(ctx, p.PID, rep.Config, get); err != nil {
		return err
	}
	u, err = readUsage(p.PID)
	rep.HWM = u.HWM
	return err
}

// phase runs op from every client for the configured duration and measures it.
func phase(ctx context.Context, pid int, cfg CRUDConfig, op func(ctx context.Context, client, i int) error) (Throughput, error) {
	u0, err := readUsage(pid)
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
	u1, err := readUsage(pid)
	if err != nil {
		return Throughput{}, err
	}
	t := Throughput{Ops: ops.Load(), Failed: failed.Load(), PerSecond: float64(ops.Load()) / elapsed.Seconds(), Latency: h.summary()}
	if t.Ops > 0 {
		t.CPUPerOp = (u1.CPU - u0.CPU) / time.Duration(t.Ops)
	}
	return t, nil
}

// send makes one request and fails unless it answers 2xx.
func send(ctx context.Context, hc *http.Client, method, url string, body []byte) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d", method, url, resp.StatusCode)
	}
	return nil
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
		fmt.Fprintf(w, "%-6s %8d ok %5d failed  %9.0f/s  p50 %s  p99 %s  server CPU %.1f µs/op\n",
			ph.name, ph.t.Ops, ph.t.Failed, ph.t.PerSecond, ms(ph.t.Latency.P50), ms(ph.t.Latency.P99), us(ph.t.CPUPerOp))
	}
	_, err := fmt.Fprintf(w, "peak RSS %.1f MiB\n", mib(r.HWM))
	return err
}
