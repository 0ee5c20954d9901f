package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/bench"
	"github.com/listwatch/listwatch/internal/cli"
	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/storage/memory"
)

// asCLI makes the test binary the listwatch binary, so that the bench
// starts its server and bare-server children from it.
const asCLI = "LISTWATCH_BENCH_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func serverOptions() bench.ServerOptions {
	return bench.ServerOptions{Binary: os.Args[0], Env: []string{asCLI + "=1"}, Args: []string{"--unsafe-no-fsync"}}
}

func TestFanout(t *testing.T) {
	for _, tt := range []struct {
		transport string
		tls       bool
		reader    string // "" for the default
		want      string // the reader used
		kind      string // "" for the default
	}{
		{bench.TransportHTTP1, false, bench.ReaderEpoll, bench.ReaderEpoll, ""},
		{bench.TransportHTTP1, false, bench.ReaderGoroutine, bench.ReaderGoroutine, ""},
		{bench.TransportH2C, false, "", bench.ReaderGoroutine, bench.KindPods},
		{bench.TransportHTTP1, true, "", bench.ReaderGoroutine, ""},
		{bench.TransportH2, true, "", bench.ReaderGoroutine, ""},
	} {
		name := tt.transport
		if tt.tls {
			name += "-tls"
		}
		name += "-" + tt.want
		t.Run(name, func(t *testing.T) {
			cfg := bench.FanoutConfig{
				Watchers: 5, Rate: 20, Size: 512, Kind: tt.kind, Duration: time.Second, Transport: tt.transport, TLS: tt.tls, Reader: tt.reader,
				Server: serverOptions(), Baseline: true, Drain: 20 * time.Second,
			}
			rep, err := bench.Fanout(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Config.Reader != tt.want {
				t.Errorf("read with %q, want %q", rep.Config.Reader, tt.want)
			}
			checkResult(t, rep.Server, 20)
			checkResult(t, *rep.Bare, 20)
			if rep.Ratio <= 0 && rep.Bare.CPU > 0 {
				t.Errorf("ratio %v with bare CPU %v", rep.Ratio, rep.Bare.CPU)
			}
			if c := rep.Server.StoreCommits; c == nil || c.Count == 0 || c.P99 > c.Max {
				t.Errorf("store commits %+v, want the child's bolt commits", c)
			}
			var out bytes.Buffer
			if err := rep.Print(&out); err != nil || !strings.Contains(out.String(), "server / bare") || !strings.Contains(out.String(), "store commit p99 / max <=") {
				t.Errorf("report: %v\n%s", err, out.String())
			}
			header, _, _ := strings.Cut(out.String(), "\n")
			for _, target := range []string{header, rep.Server.Target, rep.Bare.Target} {
				if strings.Contains(target, "TLS") != tt.tls {
					t.Errorf("%q does not say whether the run is TLS (%v)", target, tt.tls)
				}
			}
		})
	}
}

// TestFanoutRounds checks that rounds repeat the run and its baseline,
// each round's figures reported, the table the last round's.
func TestFanoutRounds(t *testing.T) {
	cfg := bench.FanoutConfig{
		Watchers: 5, Rate: 20, Size: 512, Duration: time.Second, Transport: bench.TransportHTTP1,
		Server: serverOptions(), Baseline: true, Drain: 20 * time.Second, Rounds: 2,
	}
	rep, err := bench.Fanout(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 {
		t.Fatalf("%d rounds reported, want 2", len(rep.Rounds))
	}
	if last := rep.Rounds[1]; last.Server != rep.Server.CPUPerEvent || last.Bare != rep.Bare.CPUPerEvent || last.Ratio != rep.Ratio {
		t.Errorf("last round %+v, the report's %v / %v = %v: the table is not the last round's", last, rep.Server.CPUPerEvent, rep.Bare.CPUPerEvent, rep.Ratio)
	}
	checkResult(t, rep.Server, 20)
	checkResult(t, *rep.Bare, 20)
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"round 1: CPU per delivery", "round 2: CPU per delivery", "mean of 2 rounds"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestFanoutHTTPSServer measures a TLS server given by an https URL,
// whose certificate the bench did not make.
func TestFanoutHTTPSServer(t *testing.T) {
	store := memory.New()
	s, err := server.New(t.Context(), server.Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	cfg := bench.FanoutConfig{
		Watchers: 5, Rate: 20, Size: 512, Duration: time.Second, Transport: bench.TransportHTTP1, TLS: true,
		Target: bench.Process{URL: ts.URL, PID: os.Getpid()}, Drain: 20 * time.Second,
	}
	rep, err := bench.Fanout(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, rep.Server, 20)
	if rep.Server.StoreCommits != nil {
		t.Errorf("store commits %+v from a server on a memory store", rep.Server.StoreCommits)
	}
}

// checkResult checks that every watcher saw every write exactly once and
// that the figures are consistent.
func checkResult(t *testing.T, r bench.Result, writes int64) {
	t.Helper()
	if r.Writes != writes || r.WritesFailed != 0 {
		t.Errorf("%s: %d writes (%d failed), want %d", r.Target, r.Writes, r.WritesFailed, writes)
	}
	if r.Missed != 0 || r.Duplicates != 0 || r.Errors != 0 || r.Received != 5*writes {
		t.Errorf("%s: received %d of %d, missed %d, duplicates %d, errors %d", r.Target, r.Received, r.Expected, r.Missed, r.Duplicates, r.Errors)
	}
	l := r.Latency
	if l.Count != uint64(r.Received) || l.P50 > l.P99 || l.P99 > l.Max || l.Max <= 0 || l.Max > time.Minute {
		t.Errorf("%s: latency %+v for %d deliveries", r.Target, l, r.Received)
	}
	if r.RSS <= 0 || r.HWM < r.RSS || r.CPU < 0 || r.EventBytes < 512 || r.PerSecond <= 0 {
		t.Errorf("%s: implausible report %+v", r.Target, r)
	}
}

func TestIdle(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			rep, err := bench.Idle(t.Context(), bench.IdleConfig{Watchers: 10, Transport: bench.TransportHTTP1, TLS: tls, Server: serverOptions(), Settle: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Before <= 0 || rep.After <= 0 || len(rep.Samples) == 0 {
				t.Errorf("implausible report %+v", rep)
			}
			var out bytes.Buffer
			if err := rep.Print(&out); err != nil || strings.Contains(out.String(), "TLS") != tls {
				t.Errorf("report of a run with TLS %v: %v\n%s", tls, err, out.String())
			}
		})
	}
}

func TestList(t *testing.T) {
	for _, kind := range []string{bench.KindConfigMaps, bench.KindPods} {
		t.Run(kind, func(t *testing.T) {
			rep, err := bench.List(t.Context(), bench.ListConfig{Objects: 30, Size: 256, Kind: kind, Runs: 3, Server: serverOptions()})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Bytes < 30*256 || rep.Min <= 0 || rep.Min > rep.P50 || rep.P50 > rep.Max || rep.BytesPerSecond <= 0 {
				t.Errorf("implausible report %+v", rep)
			}
		})
	}
	if _, err := bench.List(t.Context(), bench.ListConfig{Objects: 1, Kind: "secrets", Runs: 1, Server: serverOptions()}); err == nil || !strings.Contains(err.Error(), `unknown kind "secrets"`) {
		t.Errorf("an unknown kind: %v", err)
	}
}

// TestCRUD runs both phases of a short pod run. A phase lasts a second:
// under the race detector, beside the other packages' tests, the first
// pod creates of 300 ms phases did not finish in time.
func TestCRUD(t *testing.T) {
	rep, err := bench.CRUD(t.Context(), bench.CRUDConfig{Clients: 4, Duration: time.Second, Size: 256, Kind: bench.KindPods, Server: serverOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ready <= 0 || rep.IdleRSS <= 0 || rep.Creates.Ops == 0 || rep.Gets.Ops == 0 || rep.Creates.Failed+rep.Gets.Failed > 0 {
		t.Errorf("implausible report %+v", rep)
	}
	if c := rep.CreateCommits; c == nil || c.Count == 0 || c.P99 > c.Max {
		t.Errorf("store commits %+v over %d creates", c, rep.Creates.Ops)
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil || !strings.Contains(out.String(), "store commit p99 / max <=") {
		t.Errorf("report: %v\n%s", err, out.String())
	}
}

// TestGC deletes an owner under each policy and checks that each round
// saw the collector finish, the policy's order kept (else GC fails).
func TestGC(t *testing.T) {
	for _, policy := range []string{bench.PolicyBackground, bench.PolicyForeground, bench.PolicyOrphan} {
		t.Run(policy, func(t *testing.T) {
			cfg := bench.GCConfig{Dependents: 50, Policy: policy, Size: 256, Rounds: 2, Timeout: time.Minute, Server: serverOptions()}
			rep, err := bench.GC(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rounds) != 2 {
				t.Fatalf("%d rounds reported, want 2", len(rep.Rounds))
			}
			for i, r := range rep.Rounds {
				if r.Create <= 0 || r.Elapsed <= 0 || r.CPU < 0 || r.RSSBefore <= 0 || r.RSS <= 0 || r.HWM < max(r.RSS, r.RSSBefore) || r.Commits == nil || r.Commits.Count == 0 {
					t.Errorf("round %d: implausible %+v", i+1, r)
				}
			}
			var out bytes.Buffer
			if err := rep.Print(&out); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"propagationPolicy " + policy, "round 2:", "mean of 2 rounds"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestGCServer measures a server given by URL twice, so that the second
// run's names must not collide with the first's.
func TestGCServer(t *testing.T) {
	store := memory.New()
	s, err := server.New(t.Context(), server.Config{Storage: store, ConcurrentGCSyncs: 2})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	for range 2 {
		cfg := bench.GCConfig{Dependents: 20, Policy: bench.PolicyOrphan, Rounds: 1, Timeout: time.Minute, Target: bench.Process{URL: ts.URL}}
		if _, err := bench.GC(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGCBounds(t *testing.T) {
	ok := bench.GCConfig{Dependents: 1, Policy: bench.PolicyBackground, Rounds: 1, Timeout: time.Second, Target: bench.Process{URL: "http://127.0.0.1:1"}}
	for name, change := range map[string]func(*bench.GCConfig){
		"no dependents":   func(c *bench.GCConfig) { c.Dependents = 0 },
		"too many":        func(c *bench.GCConfig) { c.Dependents = bench.MaxDependents + 1 },
		"unknown policy":  func(c *bench.GCConfig) { c.Policy = "background" },
		"too large":       func(c *bench.GCConfig) { c.Size = bench.MaxSize + 1 },
		"no rounds":       func(c *bench.GCConfig) { c.Rounds = 0 },
		"too many rounds": func(c *bench.GCConfig) { c.Rounds = bench.MaxRounds + 1 },
		"no timeout":      func(c *bench.GCConfig) { c.Timeout = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			change(&c)
			if _, err := bench.GC(t.Context(), c); err == nil || !strings.HasPrefix(err.Error(), "--") {
				t.Errorf("GC(%+v) = %v, want a bounds error", c, err)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	ok := bench.FanoutConfig{Watchers: 1, Rate: 1, Size: 1, Duration: time.Second, Transport: bench.TransportHTTP1, Target: bench.Process{URL: "http://127.0.0.1:1"}, Drain: time.Second}
	for name, change := range map[string]func(*bench.FanoutConfig){
		"too many watchers": func(c *bench.FanoutConfig) { c.Watchers = bench.MaxWatchers + 1 },
		"too long":          func(c *bench.FanoutConfig) { c.Duration = bench.MaxDuration + time.Second },
		"no writes":         func(c *bench.FanoutConfig) { c.Duration = time.Millisecond },
		"unknown transport": func(c *bench.FanoutConfig) { c.Transport = "h3" },
		"h2 without TLS":    func(c *bench.FanoutConfig) { c.Transport = bench.TransportH2 },
		"h2c with TLS": func(c *bench.FanoutConfig) {
			c.Transport, c.TLS, c.Target.URL = bench.TransportH2C, true, "https://127.0.0.1:1"
		},
		"TLS to http":       func(c *bench.FanoutConfig) { c.TLS = true },
		"https without TLS": func(c *bench.FanoutConfig) { c.Target.URL = "https://127.0.0.1:1" },
		"unknown reader":    func(c *bench.FanoutConfig) { c.Reader = "io_uring" },
		"epoll over h2c":    func(c *bench.FanoutConfig) { c.Transport, c.Reader = bench.TransportH2C, bench.ReaderEpoll },
		"too many rounds":   func(c *bench.FanoutConfig) { c.Rounds, c.Baseline = bench.MaxRounds+1, true },
		"rounds, no bare":   func(c *bench.FanoutConfig) { c.Rounds = 2 },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			change(&c)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if _, err := bench.Fanout(ctx, c); err == nil || !strings.HasPrefix(err.Error(), "--") {
				t.Errorf("Fanout(%+v) = %v, want a bounds error", c, err)
			}
		})
	}
}
