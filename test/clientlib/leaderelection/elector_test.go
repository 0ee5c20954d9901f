package leaderelection_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/leaderelection"
	"github.com/listwatch/listwatch/internal/cuttest"
)

// Short timings, in the order the elector requires, so that a hand-over
// takes a moment.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1 * time.Second
	retryPeriod   = 200 * time.Millisecond
	testTimeout   = 60 * time.Second
)

// leadership records who leads, in order, and fails the test when two
// lead at once: a candidate leads from OnStartedLeading until the callback
// returns.
type leadership struct {
	t       *testing.T
	mu      sync.Mutex
	leading []string // guarded by mu
	log     []string // guarded by mu
}

func (l *leadership) lead(ctx context.Context, id string) {
	l.mu.Lock()
	if len(l.leading) > 0 {
		l.t.Errorf("%s started leading while %v led", id, l.leading)
	}
	l.leading = append(l.leading, id)
	l.log = append(l.log, id+" started")
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = slices.DeleteFunc(l.leading, func(s string) bool { return s == id })
	l.log = append(l.log, id+" stopped")
}

func (l *leadership) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

// candidate is one elector running in the test.
type candidate struct {
	elector   *leaderelection.Elector
	leading   chan struct{} // closed when it starts leading
	newLeader chan string   // every OnNewLeader, buffered
	cancel    context.CancelFunc
	done      chan struct{} // closed when Run returns
}

func runCandidate(t *testing.T, host, id string, release bool, l *leadership) *candidate {
	t.Helper()
	c, err := client.New(client.ConfigForURL(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cand := &candidate{leading: make(chan struct{}), newLeader: make(chan string, 100), done: make(chan struct{})}
	cand.elector, err = leaderelection.New(leaderelection.Config{
		Client: c, Namespace: "default", Name: "lock", Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: release,
		Callbacks: leaderelection.Callbacks{
			OnStartedLeading: func(ctx context.Context) {
				close(cand.leading)
				l.lead(ctx, id)
			},
			OnNewLeader: func(leader string) { cand.newLeader <- leader },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cand.cancel = cancel
	go func() {
		defer close(cand.done)
		cand.elector.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-cand.done })
	return cand
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

// awaitLeader waits until c's OnNewLeader reports id.
func awaitLeader(t *testing.T, c *candidate, id string) {
	t.Helper()
	for wait(t, c.newLeader, "OnNewLeader "+id) != id {
	}
}

func getLease(t *testing.T, host string) *leaderelection.Lease {
	t.Helper()
	c, err := client.New(client.ConfigForURL(host))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lease, err := client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesResource, "default").Get(t.Context(), "lock")
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// leaseSpecs yields the lock's spec as each write leaves it.
func leaseSpecs(t *testing.T, host string) func(func(leaderelection.LeaseSpec) bool) {
	return func(yield func(leaderelection.LeaseSpec) bool) {
		c, err := client.New(client.ConfigForURL(host))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
		defer cancel()
		w, err := client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesResource, "default").
			Watch(ctx, client.ListOptions{FieldSelector: "metadata.name=lock"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for ev := range w.Events() {
			if ev.Type != client.Added && ev.Type != client.Modified {
				t.Fatalf("lease event %s", ev.Type)
			}
			if !yield(ev.Object.Spec) {
				return
			}
		}
		t.Fatalf("the lease watch ended: %v", w.Err())
	}
}

func str[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestHandOverOnCancel: a leads and keeps leading while b tries; a's
// context is cancelled, it releases the lease, and b leads within the
// lease duration; the two never lead at once.
func TestHandOverOnCancel(t *testing.T) {
	srv := cuttest.StartServer(t)
	l := &leadership{t: t}
	a := runCandidate(t, srv.URL, "a", true, l)
	wait(t, a.leading, "a to lead")
	b := runCandidate(t, srv.URL, "b", true, l)
	awaitLeader(t, b, "a")
	if b.elector.IsLeader() || !a.elector.IsLeader() || b.elector.Leader() != "a" {
		t.Fatalf("a leads, yet a.IsLeader %v, b.IsLeader %v, b.Leader %q", a.elector.IsLeader(), b.elector.IsLeader(), b.elector.Leader())
	}
	// a renews past several lease durations while b keeps trying.
	for s := range leaseSpecs(t, srv.URL) {
		if str(s.HolderIdentity) != "a" {
			t.Fatalf("the lease moved while a renewed it: holder %s", str(s.HolderIdentity))
		}
		if s.RenewTime.Sub(s.AcquireTime.Time) > 2*leaseDuration {
			break
		}
	}

	stopped := time.Now()
	a.cancel()
	wait(t, b.leading, "b to lead")
	if took := time.Since(stopped); took > leaseDuration {
		t.Errorf("b led %v after a was cancelled, want within the lease duration %v", took, leaseDuration)
	}
	wait(t, a.done, "a's Run to return")
	if got, want := l.get(), []string{"a started", "a stopped", "b started"}; !slices.Equal(got, want) {
		t.Errorf("leadership %v, want %v", got, want)
	}
	s := getLease(t, srv.URL).Spec
	if str(s.HolderIdentity) != "b" || str(s.LeaseTransitions) != "1" || str(s.LeaseDurationSeconds) != "2" {
		t.Errorf("lease after the hand-over: holder %s, transitions %s, duration %s, want b, 1, 2",
			str(s.HolderIdentity), str(s.LeaseTransitions), str(s.LeaseDurationSeconds))
	}
}

// TestTakeOverAfterPartition: a leads through a proxy that then cuts it off
// from the server; a stops leading when its renewals fail for the renew
// deadline, and b takes the lease once it has not changed for the lease
// duration; the two never lead at once.
func TestTakeOverAfterPartition(t *testing.T) {
	srv := cuttest.StartServer(t)
	proxy := cuttest.StartProxy(t, srv.Addr)
	l := &leadership{t: t}
	a := runCandidate(t, "http://"+proxy.Addr, "a", false, l)
	wait(t, a.leading, "a to lead")
	b := runCandidate(t, srv.URL, "b", false, l)
	awaitLeader(t, b, "a")

	cut := time.Now()
	proxy.Block()
	wait(t, a.done, "a to stop after failing to renew")
	if took := time.Since(cut); took > leaseDuration {
		t.Errorf("a stopped leading %v after it was cut off, want within the lease duration %v", took, leaseDuration)
	}
	wait(t, b.leading, "b to lead")
	if got, want := l.get(), []string{"a started", "a stopped", "b started"}; !slices.Equal(got, want) {
		t.Errorf("leadership %v, want %v", got, want)
	}
	if s := getLease(t, srv.URL).Spec; str(s.HolderIdentity) != "b" || str(s.LeaseTransitions) != "1" {
		t.Errorf("lease after the take-over: holder %s, transitions %s, want b, 1", str(s.HolderIdentity), str(s.LeaseTransitions))
	}
}

// TestCheckFailsWhenWorkHangs: a leader whose work ignores the end of its
// term stays in Run after losing the lease; Check reports it once the
// lease duration (plus tolerance) has passed since the last renewal, and
// never while it renews.
func TestCheckFailsWhenWorkHangs(t *testing.T) {
	srv := cuttest.StartServer(t)
	proxy := cuttest.StartProxy(t, srv.Addr)
	c, err := client.New(client.ConfigForURL("http://" + proxy.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	leading, hang := make(chan struct{}), make(chan struct{})
	e, err := leaderelection.New(leaderelection.Config{
		Client: c, Namespace: "default", Name: "lock", Identity: "a",
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Callbacks: leaderelection.Callbacks{OnStartedLeading: func(context.Context) {
			close(leading)
			<-hang // ignores its context
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(t.Context())
	}()
	defer func() { close(hang); <-done }()
	wait(t, leading, "a to lead")
	renewals := 0
	for range leaseSpecs(t, srv.URL) {
		if err := e.Check(0); err != nil {
			t.Fatalf("Check while a renews: %v", err)
		}
		if renewals++; renewals == 3 {
			break
		}
	}

	cut := time.Now()
	proxy.Block()
	tick := time.NewTicker(retryPeriod)
	defer tick.Stop()
	for e.Check(0) == nil {
		if time.Since(cut) > testTimeout {
			t.Fatal("Check never failed for a leader that cannot renew")
		}
		<-tick.C
	}
	// The last renewal was at most a retry period and a renew deadline
	// before the cut, or a would have stopped leading.
	if took, least := time.Since(cut), leaseDuration-retryPeriod-renewDeadline; took < least {
		t.Errorf("Check failed %v after the cut, want %v at least: the lease duration after the last renewal", took, least)
	}
	if !e.IsLeader() {
		t.Error("IsLeader is false, yet the lease was never seen taken")
	}
}
