package cuttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
)

// Schedule is a lag run: a write every WriteEvery for Run, while the proxy
// cuts every connection after each pause in [MinCut, MaxCut).
type Schedule struct {
	Run, WriteEvery, MinCut, MaxCut time.Duration
}

// DefaultSchedule cuts every ~2 s for 20 s under four writes a second.
func DefaultSchedule() Schedule {
	return Schedule{Run: 20 * time.Second, WriteEvery: 250 * time.Millisecond, MinCut: 1500 * time.Millisecond, MaxCut: 2500 * time.Millisecond}
}

// SyncTimeout bounds an informer's sync, and its catching up after a run.
const SyncTimeout = time.Minute

// Lag names and namespace of the ConfigMap the run writes.
const (
	LagNamespace = "default"
	LagName      = "lag"
)

// An Informer is a client under test. Start runs it on the ConfigMaps of
// LagNamespace through the server at url until ctx ends, its update
// handler calling lags.Note with the ConfigMap's data "at"; it returns
// once the informer has synced (within SyncTimeout), with a function that
// waits for it to stop (nil if it did not start).
type Informer struct {
	Name      string
	UserAgent string // its client's, to count its reads at the server
	// Direct runs it straight against the server, not through the proxy:
	// a control whose lag is what the machine adds, cuts aside.
	Direct bool
	Start  func(ctx context.Context, url string, lags *Lags) (wait func(), err error)
}

// Result is how one Informer did in a run.
type Result struct {
	Name     string
	P50, P99 time.Duration
	Reads    Reads // of configmaps, during the whole run (sync included)
}

func (r Result) String() string {
	return fmt.Sprintf("%s: p50 %v, p99 %v, %d LISTs, %d watches", r.Name, r.P50, r.P99, r.Reads.Lists, r.Reads.Watches)
}

// LagRun starts a Server and one Proxy in front of it, runs the informers
// through the proxy, writes the ConfigMap on sched (straight to the
// server) while the proxy cuts, and returns, once every informer's handler
// has seen every write, each one's lags and reads, and how many writes and
// cuts there were.
func LagRun(t testing.TB, sched Schedule, informers ...Informer) (results []Result, writes, cuts int) {
	t.Helper()
	srv := StartServer(t)
	p := StartProxy(t, srv.Addr)
	cl, err := client.New(client.ConfigForURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	direct := client.NewResource[client.Unstructured](cl, configMaps, LagNamespace)
	ctx, cancel := context.WithTimeout(t.Context(), sched.Run+2*SyncTimeout)
	defer cancel()
	if _, err := direct.Create(ctx, client.Unstructured{"metadata": map[string]any{"name": LagName}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	var waits []func()
	defer func() {
		stop()
		for _, wait := range waits {
			wait()
		}
	}()
	lags := make([]*Lags, len(informers))
	for i, inf := range informers {
		lags[i] = &Lags{}
		url := "http://" + p.Addr
		if inf.Direct {
			url = srv.URL
		}
		wait, err := inf.Start(runCtx, url, lags[i])
		if wait != nil {
			waits = append(waits, wait)
		}
		if err != nil {
			t.Fatalf("%s: %v", inf.Name, err)
		}
	}
	cutsDone := make(chan struct{})
	go func() { defer close(cutsDone); p.CutEvery(runCtx, sched.MinCut, sched.MaxCut) }()
	waits = append(waits, func() { <-cutsDone })

	writes, err = Write(ctx, sched.Run, sched.WriteEvery, func(ctx context.Context, at string) error {
		_, err := direct.Patch(ctx, LagName, client.MergePatchType, fmt.Appendf(nil, `{"data":{"at":%q}}`, at), client.PatchOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("write %d: %v", writes, err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, SyncTimeout)
	defer cancelWait()
	for i, inf := range informers {
		if err := lags[i].Wait(waitCtx, writes); err != nil {
			t.Fatalf("%s saw only some of %d writes: %v", inf.Name, writes, err)
		}
		r := Result{Name: inf.Name, Reads: srv.Reads(inf.UserAgent, "configmaps")}
		r.P50, r.P99 = lags[i].Percentiles()
		results = append(results, r)
	}
	return results, writes, p.Cuts()
}
