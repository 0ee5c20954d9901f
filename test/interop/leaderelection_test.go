package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Short leader election timings, so that a hand-over takes a moment; their
// order is what client-go requires (duration > deadline > 1.2 × retry).
const (
	electionLeaseDuration = 2 * time.Second
	electionRenewDeadline = 1 * time.Second
	electionRetryPeriod   = 200 * time.Millisecond
	electionTimeout       = 60 * time.Second
)

// candidate is one client-go leader elector and what its callbacks saw.
type candidate struct {
	cancel  context.CancelFunc
	leading chan struct{} // closed by OnStartedLeading
	saw     chan struct{} // closed when OnNewLeader reports the leader awaited
	done    chan struct{} // closed when Run returns
}

// electionLog records, in order, when each candidate started and stopped
// leading, so that the test can tell whether two ever led at once.
type electionLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *electionLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, s)
}

func (l *electionLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// TestLeaderElection runs two candidates of client-go's leader election
// with a LeaseLock, as controller-runtime scaffolds it, against the real
// binary: the first leads, keeps leading past several lease durations
// while the second keeps trying, and when its context is cancelled it
// releases the lease (ReleaseOnCancel) and the second takes over within
// the lease duration; never do both lead at once.
func TestLeaderElection(t *testing.T) {
	e := startElection(t)
	ctx, lw, leases, w, lock := e.ctx, e.lw, e.leases, e.w, e.lock
	var log electionLog
	isA := func(leader string) bool { return leader == "a" }
	a := runCandidate(ctx, t, typedClientset(t, lw.URL), lock, "a", isA, &log)
	defer stopCandidate(a)
	waitClosed(t, ctx, a.leading, "a to lead")
	b := runCandidate(ctx, t, typedClientset(t, lw.URL), lock, "b", isA, &log)
	defer stopCandidate(b)
	waitClosed(t, ctx, b.saw, "b to see a leading")

	// b tries every retry period; a must keep the lease by renewing it.
	for lease := range leaseEvents(t, ctx, w) {
		s := lease.Spec
		if s.HolderIdentity == nil || *s.HolderIdentity != "a" {
			t.Fatalf("the lease moved while a was renewing it: %+v", s)
		}
		if s.RenewTime != nil && s.AcquireTime != nil && s.RenewTime.Sub(s.AcquireTime.Time) > 2*electionLeaseDuration {
			break
		}
	}

	log.add("a stopped") // before the cancel: a leads until its context ends
	stoppedAt := time.Now()
	a.cancel()
	waitClosed(t, ctx, b.leading, "b to lead")
	took := time.Since(stoppedAt)
	t.Logf("b led %v after a stopped", took)
	if took > electionLeaseDuration {
		t.Errorf("b led %v after a stopped, want within the lease duration %v (a released the lease)", took, electionLeaseDuration)
	}
	waitClosed(t, ctx, a.done, "a's elector to return")
	if got, want := log.get(), []string{"a started", "a stopped", "b started"}; !slices.Equal(got, want) {
		t.Errorf("leadership %v, want %v", got, want)
	}
	lease, err := leases.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := lease.Spec; s.HolderIdentity == nil || *s.HolderIdentity != "b" || s.LeaseTransitions == nil || *s.LeaseTransitions != 1 ||
		s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds != int32(electionLeaseDuration/time.Second) {
		t.Errorf("lease after the hand-over: holder %v, transitions %v, duration %v, want b, 1, 2",
			deref(s.HolderIdentity), deref(s.LeaseTransitions), deref(s.LeaseDurationSeconds))
	}
}

// election is a test's binary, the Lease lock in "default" and a watch
// of it, all ended when the test ends or electionTimeout passes.
type election struct {
	ctx    context.Context
	lw     *Listwatch
	leases coordinationv1client.LeaseInterface
	w      watch.Interface
	lock   metav1.ObjectMeta
}

func startElection(t *testing.T) *election {
	t.Helper()
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx, cancel := context.WithTimeout(t.Context(), electionTimeout)
	t.Cleanup(cancel)
	leases := typedClientset(t, lw.URL).CoordinationV1().Leases("default")
	w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=lock"})
	if err != nil {
		t.Fatalf("watch leases: %v", err)
	}
	t.Cleanup(w.Stop)
	return &election{ctx: ctx, lw: lw, leases: leases, w: w, lock: metav1.ObjectMeta{Name: "lock", Namespace: "default"}}
}

// runCandidate starts a leader elector for id on Lease lock, whose saw
// closes when OnNewLeader reports a leader awaited says is the one;
// stopCandidate ends it.
func runCandidate(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, lock metav1.ObjectMeta, id string, awaited func(string) bool, log *electionLog) *candidate {
	t.Helper()
	c := &candidate{leading: make(chan struct{}), saw: make(chan struct{}), done: make(chan struct{})}
	var saw sync.Once
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  lock,
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   electionLeaseDuration,
		RenewDeadline:   electionRenewDeadline,
		RetryPeriod:     electionRetryPeriod,
		ReleaseOnCancel: true,
		Name:            "interop-" + id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				log.add(id + " started")
				close(c.leading)
			},
			OnStoppedLeading: func() {}, // required; the log's "a stopped" marks the end
			OnNewLeader: func(leader string) {
				if awaited(leader) {
					saw.Do(func() { close(c.saw) })
				}
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	return c
}

func stopCandidate(c *candidate) {
	c.cancel()
	<-c.done
}

// leaseEvents yields the lease of each ADDED or MODIFIED event of w.
func leaseEvents(t *testing.T, ctx context.Context, w watch.Interface) func(func(*coordinationv1.Lease) bool) {
	return func(yield func(*coordinationv1.Lease) bool) {
		for {
			select {
			case <-ctx.Done():
				t.Fatalf("waiting for lease events: %v", ctx.Err())
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("the lease watch ended")
				}
				lease, isLease := ev.Object.(*coordinationv1.Lease)
				if !isLease || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					t.Fatalf("lease watch event %s %T: %v", ev.Type, ev.Object, ev.Object)
				}
				if !yield(lease) {
					return
				}
			}
		}
	}
}

func waitClosed(t *testing.T, ctx context.Context, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
	}
}

func deref[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
