package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// Limits of every run.
const (
	MaxWatchers = 20_000
	MaxDuration = 10 * time.Minute
	MaxRate     = 10_000
	MaxSize     = 1 << 20
)

// FanoutConfig configures `listwatch bench fanout`.
type FanoutConfig struct {
	Watchers  int
	Rate      int    // writes per second
	Size      int    // bytes of each object's JSON
	Kind      string // KindConfigMaps ("") or KindPods
	Duration  time.Duration
	Transport string // TransportHTTP1, TransportH2C, or with TLS TransportH2
	// Reader is ReaderGoroutine or ReaderEpoll (http1 without TLS, on
	// Linux); "" picks epoll where it can, and Fanout reports what it used.
	// The bare baseline is read by the same reader.
	Reader string
	// TLS serves the started child (and the bare baseline) over TLS with a
	// certificate made for the run; with a Target URL, it must be https.
	TLS bool
	// Target is the server; with an empty URL a child is started from Server.
	Target Process
	Server ServerOptions
	// Baseline also runs the bare socket server (from Server.Binary), with
	// frames the size of the server's events.
	Baseline bool
	// Drain bounds the wait for deliveries after the last write.
	Drain time.Duration
	// Rounds repeats the server's run and the baseline's, one after the
	// other, so that the ratio's spread on a noisy machine shows; 0 or 1
	// runs them once.
	Rounds int
}

// MaxRounds bounds FanoutConfig.Rounds.
const MaxRounds = 10

// validate checks c's bounds and resolves its Reader.
func (c *FanoutConfig) validate() error {
	switch {
	case c.Watchers < 1 || c.Watchers > MaxWatchers:
		return fmt.Errorf("--watchers %d: must be in [1, %d]", c.Watchers, MaxWatchers)
	case c.Rate < 1 || c.Rate > MaxRate:
		return fmt.Errorf("--rate %d: must be in [1, %d]", c.Rate, MaxRate)
	case c.Size < 0 || c.Size > MaxSize:
		return fmt.Errorf("--size %d: must be in [0, %d]", c.Size, MaxSize)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("--duration %v: must be in (0, %v]", c.Duration, MaxDuration)
	case c.Rate*int(c.Duration/time.Millisecond) < 1000:
		return fmt.Errorf("--rate %d for %v makes no write", c.Rate, c.Duration)
	case c.Drain <= 0 || c.Drain > MaxDuration:
		return fmt.Errorf("drain %v: must be in (0, %v]", c.Drain, MaxDuration)
	case c.Rounds < 0 || c.Rounds > MaxRounds:
		return fmt.Errorf("--rounds %d: must be in [0, %d] (0 or 1: once)", c.Rounds, MaxRounds)
	case c.Rounds > 1 && !c.Baseline:
		return errors.New("--rounds repeats the run and its baseline: it needs the baseline")
	case c.Target.URL == "" && c.Server.Binary == "", c.Baseline && c.Server.Binary == "":
		return errors.New("no server: give its URL or the listwatch binary")
	}
	if err := checkTLS(c.Target, c.TLS); err != nil {
		return err
	}
	if err := checkTransport(c.Transport, c.TLS); err != nil {
		return err
	}
	var err error
	c.Reader, err = resolveReader(c.Reader, c.Transport, c.TLS)
	return err
}

// Result is one target's fan-out measurement.
type Result struct {
	Target       string
	Writes       int64   // acknowledged writes (the server) or frames (bare)
	WritesFailed int64   // writes the server refused or failed
	WriteRate    float64 // achieved writes/s
	Expected     int64   // watchers x writes
	Received     int64
	Missed       int64 // Expected - Received, after the drain
	Duplicates   int64
	Errors       int64 // ERROR events, unparsable lines
	Elapsed      time.Duration
	PerSecond    float64       // deliveries/s over Elapsed
	Latency      Latency       // write to delivery
	WriteLatency Latency       // write request to response (the server only)
	EventBytes   int64         // mean bytes of an event line
	CPU          time.Duration // the target's, over Elapsed
	CPUPerEvent  time.Duration // CPU / Received
	RSS, HWM     int64         // the target's, at the end
	ClientCPU    time.Duration // this process's, over Elapsed
	// StoreCommits are the server's store commits over the run; nil when
	// it does not export them (etcd, an older binary) and for the bare.
	StoreCommits *StoreCommits
}

// FanoutReport is a fan-out run: the server and, with a baseline, the bare
// socket server under the same load; with several rounds, the last round's,
// and every round's CPU per delivery.
type FanoutReport struct {
	Config FanoutConfig
	Server Result
	Bare   *Result
	// Ratio is the server's CPU per delivery over the bare server's.
	Ratio float64
	// Rounds are every round's figures when there were several.
	Rounds []Round
}

// Round is one round's CPU per delivery, the server's and the bare
// server's, and their ratio.
type Round struct {
	Server, Bare time.Duration
	Ratio        float64
}

// Fanout measures the server's fan-out, then the bare baseline, as many
// rounds as configured.
func Fanout(ctx context.Context, cfg FanoutConfig) (*FanoutReport, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var cert *certificate
	if cfg.TLS && (cfg.Target.URL == "" || cfg.Baseline) {
		var err error
		if cert, err = newCertificate(); err != nil {
			return nil, err
		}
		defer cert.remove()
	}
	rep := &FanoutReport{Config: cfg}
	for i := range max(1, cfg.Rounds) {
		if err := fanoutRound(ctx, cfg, cert, rep); err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		if cfg.Rounds > 1 {
			rep.Rounds = append(rep.Rounds, Round{Server: rep.Server.CPUPerEvent, Bare: rep.Bare.CPUPerEvent, Ratio: rep.Ratio})
		}
	}
	return rep, nil
}

// fanoutRound measures the server's fan-out, then the bare baseline, into
// rep.
func fanoutRound(ctx context.Context, cfg FanoutConfig, cert *certificate, rep *FanoutReport) error {
	res, err := withServer(ctx, cfg.Target, cfg.Server, cert, func(p Process) (Result, error) {
		return fanoutServer(ctx, cfg, p)
	})
	if err != nil {
		return err
	}
	rep.Server = res
	if !cfg.Baseline {
		return nil
	}
	if res.EventBytes > 0 {
		cfg.Size = int(res.EventBytes) // the same bytes on the wire as the server's events
	}
	bare, err := fanoutBare(ctx, cfg, cert)
	if err != nil {
		return fmt.Errorf("bare baseline: %w", err)
	}
	rep.Bare, rep.Ratio = &bare, 0
	if bare.CPUPerEvent > 0 {
		rep.Ratio = float64(res.CPUPerEvent) / float64(bare.CPUPerEvent)
	}
	return nil
}

// withServer runs f against target, or against a child server it starts
// (serving cert over TLS unless it is nil) and stops when target has no
// URL.
func withServer[T any](ctx context.Context, target Process, o ServerOptions, cert *certificate, f func(Process) (T, error)) (T, error) {
	if target.URL != "" {
		return f(target)
	}
	ch, p, err := startServer(ctx, o, cert)
	if err != nil {
		var zero T
		return zero, err
	}
	defer ch.stop()
	return f(p)
}

// settle lets a target finish the work of opening watches before a
// measurement starts.
const settle = time.Second

// fanoutServer opens the watches on p, writes, drains and measures.
func fanoutServer(ctx context.Context, cfg FanoutConfig, p Process) (Result, error) {
	k, err := kindFor(cfg.Kind)
	if err != nil {
		return Result{}, err
	}
	a := newAPIClient(p, k)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return Result{}, err
	}
	if err := createObjects(ctx, a, writeObjects, cfg.Size); err != nil && !isConflict(err) {
		return Result{}, fmt.Errorf("creating the objects: %w", err)
	}
	rv, err := a.listRevision(ctx)
	if err != nil {
		return Result{}, err
	}
	commits, _ := a.commitBuckets(ctx) // the setup's commits, to leave out
	spec := watchSpec{base: p.URL, path: watchPath(k, rv, cfg), transport: cfg.Transport, tls: p.clientTLS(), token: p.Token, startRV: rv, reader: cfg.Reader}
	m := measure{pid: p.PID}
	var w *writes
	err = m.run(ctx, spec, cfg.Watchers, func() (int64, error) {
		w = runWriter(ctx, a, cfg.Rate, cfg.Duration, cfg.Size)
		return w.ok.Load(), nil
	}, cfg.Drain)
	if err != nil {
		return Result{}, err
	}
	if w.ok.Load() == 0 {
		return Result{}, fmt.Errorf("no write succeeded: %w", *w.firstErr.Load())
	}
	r := m.result("listwatch serve ("+transportLabel(cfg.Transport, cfg.TLS)+")", w.ok.Load())
	r.WritesFailed = w.failed.Load()
	r.WriteRate = float64(w.ok.Load()) / w.elapsed.Seconds()
	r.WriteLatency = w.latency.summary()
	r.StoreCommits = a.storeCommits(ctx, commits)
	return r, nil
}

// isConflict reports a 409: the object already exists.
func isConflict(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusConflict
}

// watchPath is a watch of the benchmark's objects of kind k from rv,
// lasting well beyond the run.
func watchPath(k kind, rv int64, cfg FanoutConfig) string {
	timeout := int64((cfg.Duration + cfg.Drain + time.Minute).Seconds())
	return k.path + "?watch=true&resourceVersion=" + strconv.FormatInt(rv, 10) + "&timeoutSeconds=" + strconv.FormatInt(timeout, 10)
}

// measure runs one fan-out: watches, a writer, a drain, and the CPU and
// memory of the target and of this process over it.
type measure struct {
	pid      int
	d        deliveries
	watchers int
	u0, u1   Usage
	self     [2]time.Duration
	elapsed  time.Duration
}

// run opens the watches, settles, then calls write (which returns how many
// writes every watcher should see) and waits up to drain for them.
func (m *measure) run(ctx context.Context, spec watchSpec, watchers int, write func() (int64, error), drain time.Duration) error {
	m.watchers = watchers
	ws, err := openWatches(ctx, spec, watchers, &m.d)
	if err != nil {
		return err
	}
	defer ws.close()
	if err := wait.Sleep(ctx, settle); err != nil {
		return err
	}
	if m.u0, err = ReadUsage(m.pid); err != nil {
		return err
	}
	m.self[0], _ = readCPU(os.Getpid())
	start := time.Now()
	n, err := write()
	if err != nil {
		return err
	}
	waitReceived(ctx, &m.d, n*int64(watchers), drain)
	m.elapsed = time.Since(start)
	m.self[1], _ = readCPU(os.Getpid())
	if m.u1, err = ReadUsage(m.pid); err != nil {
		return err
	}
	return ctx.Err()
}

// result summarises the run for n writes.
func (m *measure) result(target string, n int64) Result {
	r := Result{
		Target: target, Writes: n, Expected: n * int64(m.watchers),
		Received: m.d.received.Load(), Duplicates: m.d.duplicates.Load(), Errors: m.d.errors.Load(),
		Elapsed: m.elapsed, Latency: m.d.latency.summary(),
		CPU: m.u1.CPU - m.u0.CPU, RSS: m.u1.RSS, HWM: m.u1.HWM, ClientCPU: m.self[1] - m.self[0],
	}
	r.Missed = r.Expected - r.Received
	r.PerSecond = float64(r.Received) / m.elapsed.Seconds()
	if r.Received > 0 {
		r.EventBytes = m.d.bytes.Load() / (r.Received + r.Duplicates)
		r.CPUPerEvent = r.CPU / time.Duration(r.Received)
	}
	return r
}
