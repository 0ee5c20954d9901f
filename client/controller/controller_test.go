package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/cache/cachetest"
	"github.com/listwatch/listwatch/client/workqueue"
)

// object is a test object with owner references.
type object struct {
	cachetest.Object
	Owners []api.OwnerReference
}

func newObject(ns, name string, rv int, owners ...api.OwnerReference) *object {
	return &object{Object: *cachetest.New(ns, name, rv), Owners: owners}
}

func ownerRefs(o *object) []api.OwnerReference { return o.Owners }

func ref(apiVersion, kind, name string, controller bool) api.OwnerReference {
	return api.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid-" + name, Controller: &controller}
}

// call is one reconcile: its Request and when it started, as the time
// since the test's start.
type call struct {
	Req Request
	At  time.Duration
}

// recorder is a Reconciler that records its calls and answers with fn.
type recorder struct {
	start time.Time
	fn    func(ctx context.Context, req Request, n int) (Result, error) // n: earlier calls for req

	mu    sync.Mutex
	calls []call // guarded by mu
}

func newRecorder(fn func(ctx context.Context, req Request, n int) (Result, error)) *recorder {
	return &recorder{start: time.Now(), fn: fn}
}

func (r *recorder) reconcile(ctx context.Context, req Request) (Result, error) {
	r.mu.Lock()
	n := 0
	for _, c := range r.calls {
		if c.Req == req {
			n++
		}
	}
	r.calls = append(r.calls, call{req, time.Since(r.start)})
	r.mu.Unlock()
	if r.fn == nil {
		return Result{}, nil
	}
	return r.fn(ctx, req, n)
}

// take waits until every goroutine of the bubble is blocked, then returns
// and forgets the calls so far, sorted by time then Request.
func (r *recorder) take() []call {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.calls
	r.calls = nil
	slices.SortFunc(got, func(a, b call) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		return strings.Compare(a.Req.String(), b.Req.String())
	})
	return got
}

func (r *recorder) expect(t *testing.T, want ...call) {
	t.Helper()
	if diff := cmp.Diff(want, r.take()); diff != "" {
		t.Errorf("reconciles (-want +got):\n%s", diff)
	}
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newInformer returns an informer over a fake listing items at
// resourceVersion 10, run until the test ends. Call inside a bubble.
func newInformer(t *testing.T, items ...*object) (*cache.SharedIndexInformer[*object], *cachetest.FakeListerWatcher[*object]) {
	lw := cachetest.NewFakeListerWatcher[*object]()
	lw.AddList("10", items...)
	inf := cache.NewInformer(lw, cache.InformerOptions[*object]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return inf, lw
}

// start runs c until the returned stop is called (or the test ends);
// stop returns Start's error.
func start(t *testing.T, c *Controller) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func mustNew(t *testing.T, opts Options, r Reconciler) *Controller {
	t.Helper()
	opts.Logger = discard
	c, err := New(opts, r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func req(ns, name string) Request { return Request{Namespace: ns, Name: name} }

func TestReconcilesEachObjectOnceAndAgainOnChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newInformer(t, newObject("ns", "a", 1), newObject("ns", "b", 2), newObject("", "c", 3))
		rec := newRecorder(nil)
		c := mustNew(t, Options{Name: "test", MaxConcurrentReconciles: 2}, rec.reconcile)
		must(t, For(c, inf))
		start(t, c)
		rec.expect(t, call{req("", "c"), 0}, call{req("ns", "a"), 0}, call{req("ns", "b"), 0})

		w := <-lw.Watches // the reflector's watch; if none opens, the bubble deadlocks and the test fails
		w.Modify(newObject("ns", "a", 11))
		w.Modify(newObject("ns", "a", 12))
		w.Delete(newObject("ns", "b", 13))
		w.Add(newObject("ns", "d", 14))
		got := rec.take()
		// Two updates of a may be coalesced into one reconcile or not, as
		// the worker takes them; b and d are reconciled once each.
		counts := map[Request]int{}
		for _, c := range got {
			counts[c.Req]++
		}
		if counts[req("ns", "a")] < 1 || counts[req("ns", "a")] > 2 || counts[req("ns", "b")] != 1 || counts[req("ns", "d")] != 1 || len(counts) != 3 {
			t.Errorf("reconciles after changes = %v", got)
		}
	})
}

func TestRequeueAfterAndBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newInformer(t, newObject("ns", "after", 1), newObject("ns", "fail", 2), newObject("ns", "again", 3))
		rec := newRecorder(func(_ context.Context, r Request, n int) (Result, error) {
			switch {
			case r.Name == "after" && n == 1:
				return Result{RequeueAfter: 10 * time.Second}, nil
			case r.Name == "after" && n < 3: // errors before and after the RequeueAfter
				return Result{}, errors.New("boom")
			case r.Name == "fail" && n < 3:
				return Result{RequeueAfter: time.Hour}, errors.New("boom") // Result ignored
			case r.Name == "again" && n < 1:
				return Result{Requeue: true}, nil
			}
			return Result{}, nil
		})
		limiter := workqueue.NewItemExponentialFailureRateLimiter[Request](time.Second, time.Minute)
		c := mustNew(t, Options{Name: "test", RateLimiter: limiter}, rec.reconcile)
		must(t, For(c, inf))
		start(t, c)
		time.Sleep(time.Minute) // the bubble's clock: every retry below is due within it
		rec.expect(t,
			call{req("ns", "after"), 0}, call{req("ns", "again"), 0}, call{req("ns", "fail"), 0},
			call{req("ns", "after"), time.Second}, // first backoff step
			call{req("ns", "again"), time.Second}, // Requeue: first backoff step
			call{req("ns", "fail"), time.Second},  // 1 s, 2 s, 4 s: doubling after each error
			call{req("ns", "fail"), 3 * time.Second},
			call{req("ns", "fail"), 7 * time.Second},
			call{req("ns", "after"), 11 * time.Second}, // RequeueAfter 10 s
			call{req("ns", "after"), 12 * time.Second}, // RequeueAfter forgot the backoff: 1 s again
		)
		for _, name := range []string{"after", "fail", "again"} {
			if n := c.Queue().NumRequeues(req("ns", name)); n != 0 {
				t.Errorf("%s: NumRequeues = %d after success, want 0 (forgotten)", name, n)
			}
		}
	})
}

func TestPanicIsRecoveredAndRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newInformer(t, newObject("ns", "a", 1), newObject("ns", "b", 2))
		rec := newRecorder(func(_ context.Context, r Request, n int) (Result, error) {
			if r.Name == "a" && n == 0 {
				panic("reconciler bug")
			}
			return Result{}, nil
		})
		limiter := workqueue.NewItemExponentialFailureRateLimiter[Request](time.Second, time.Minute)
		c := mustNew(t, Options{Name: "test", RateLimiter: limiter}, rec.reconcile)
		must(t, For(c, inf))
		start(t, c)
		time.Sleep(time.Minute)
		// The one worker survives the panic: b is reconciled, and a again
		// after the first backoff step.
		rec.expect(t, call{req("ns", "a"), 0}, call{req("ns", "b"), 0}, call{req("ns", "a"), time.Second})
	})
}

func TestOwnsEnqueuesTheControllingOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		owners, _ := newInformer(t)
		owned, lw := newInformer(t,
			newObject("ns", "rs-1", 1, ref("apps/v1", "Deployment", "web", true)),
			newObject("ns", "rs-2", 2, ref("apps/v1beta1", "Deployment", "api", true)), // any version of the group
			newObject("ns", "rs-3", 3, ref("apps/v1", "Deployment", "not-controller", false)),
			newObject("ns", "rs-4", 4, ref("extensions/v1beta1", "Deployment", "other-group", true)),
			newObject("ns", "rs-5", 5, ref("apps/v1", "StatefulSet", "other-kind", true)),
			newObject("ns", "rs-6", 6),
		)
		nodes, nodeLW := newInformer(t, newObject("", "lease", 1, ref("v1", "Node", "node-1", true)))
		shared, _ := newInformer(t, newObject("other", "volume", 1,
			ref("example.com/v1", "Claim", "c1", false), ref("example.com/v2", "Claim", "c2", true), ref("v1", "Claim", "core", false)))
		rec := newRecorder(nil)
		c := mustNew(t, Options{Name: "test"}, rec.reconcile)
		must(t, For(c, owners))
		must(t, Owns(c, owned, OwnerType{Group: "apps", Kind: "Deployment"}, ownerRefs))
		must(t, Owns(c, nodes, OwnerType{Kind: "Node", ClusterScoped: true}, ownerRefs))
		must(t, Owns(c, shared, OwnerType{Group: "example.com", Kind: "Claim", EveryOwner: true}, ownerRefs))
		start(t, c)
		rec.expect(t, call{req("", "node-1"), 0}, call{req("ns", "api"), 0}, call{req("ns", "web"), 0},
			call{req("other", "c1"), 0}, call{req("other", "c2"), 0})

		// An update that moves rs-1 to another owner enqueues both owners;
		// a deletion enqueues the owner of the deleted object.
		w := <-lw.Watches
		w.Modify(newObject("ns", "rs-1", 11, ref("apps/v1", "Deployment", "web-2", true)))
		rec.expect(t, call{req("ns", "web"), 0}, call{req("ns", "web-2"), 0})
		w.Delete(newObject("ns", "rs-2", 12, ref("apps/v1beta1", "Deployment", "api", true)))
		rec.expect(t, call{req("ns", "api"), 0})
		nodeW := <-nodeLW.Watches
		nodeW.Delete(newObject("", "lease", 13, ref("v1", "Node", "node-1", true)))
		rec.expect(t, call{req("", "node-1"), 0})
	})
}

func TestWatchesEnqueuesWhatTheMapperSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newInformer(t, newObject("ns", "config", 1))
		rec := newRecorder(nil)
		c := mustNew(t, Options{Name: "test"}, rec.reconcile)
		must(t, Watches(c, inf, func(o *object) []Request {
			return []Request{req(o.Namespace, o.Name+"-x"), req(o.Namespace, o.Name+"-y")}
		}))
		start(t, c)
		rec.expect(t, call{req("ns", "config-x"), 0}, call{req("ns", "config-y"), 0})
	})
}

func TestShutdownCancelsInFlightReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newInformer(t, newObject("ns", "a", 1), newObject("ns", "b", 2), newObject("ns", "c", 3))
		var cancelled sync.WaitGroup
		cancelled.Add(2)
		rec := newRecorder(func(ctx context.Context, _ Request, _ int) (Result, error) {
			<-ctx.Done()
			cancelled.Done()
			return Result{}, ctx.Err()
		})
		c := mustNew(t, Options{Name: "test", MaxConcurrentReconciles: 2}, rec.reconcile)
		must(t, For(c, inf))
		stop := start(t, c)
		if got := len(rec.take()); got != 2 {
			t.Fatalf("%d reconciles in flight, want 2 (one per worker)", got)
		}
		began := time.Now()
		if err := stop(); err != nil {
			t.Fatalf("Start = %v, want nil after a clean shutdown", err)
		}
		cancelled.Wait()
		if d := time.Since(began); d != 0 {
			t.Errorf("shutdown took %v of the bubble's clock, want 0", d)
		}
		// The third object was never started: workers stop taking items.
		if got := rec.take(); len(got) != 0 {
			t.Errorf("reconciles after shutdown: %v", got)
		}
		if !c.Queue().ShuttingDown() {
			t.Error("queue not shut down")
		}
	})
}

func TestShutdownGivesUpAfterTheDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newInformer(t, newObject("ns", "a", 1))
		release := make(chan struct{})
		rec := newRecorder(func(context.Context, Request, int) (Result, error) {
			<-release // ignores its context
			return Result{}, nil
		})
		c := mustNew(t, Options{Name: "test", DrainTimeout: 5 * time.Second}, rec.reconcile)
		must(t, For(c, inf))
		stop := start(t, c)
		rec.take()
		began := time.Now()
		if err := stop(); !errors.Is(err, ErrDrainTimeout) {
			t.Errorf("Start = %v, want ErrDrainTimeout", err)
		}
		if d := time.Since(began); d != 5*time.Second {
			t.Errorf("Start returned after %v, want the 5s drain timeout", d)
		}
		close(release)
	})
}

func TestStartFailsWhenInformersDoNotSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := cachetest.NewFakeListerWatcher[*object]() // no list scripted: every List fails
		inf := cache.NewInformer(lw, cache.InformerOptions[*object]{Reflector: cache.ReflectorOptions{WatchErrorHandler: func(error) {}}})
		ctx, cancel := context.WithCancel(context.Background())
		infDone := make(chan struct{})
		go func() { defer close(infDone); _ = inf.Run(ctx) }()
		defer func() { cancel(); <-infDone }()

		rec := newRecorder(nil)
		c := mustNew(t, Options{Name: "test", CacheSyncTimeout: 10 * time.Second}, rec.reconcile)
		must(t, For(c, inf))
		began := time.Now()
		if err := c.Start(ctx); !errors.Is(err, ErrCacheSyncTimeout) {
			t.Errorf("Start = %v, want ErrCacheSyncTimeout", err)
		}
		if d := time.Since(began); d != 10*time.Second {
			t.Errorf("Start returned after %v, want the 10s sync timeout", d)
		}
		if err := c.Start(ctx); !errors.Is(err, ErrStarted) {
			t.Errorf("second Start = %v, want ErrStarted", err)
		}
		if err := For(c, inf); !errors.Is(err, ErrStarted) {
			t.Errorf("For after Start = %v, want ErrStarted", err)
		}
	})
}

func TestARequestIsNeverReconciledTwiceAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newInformer(t, newObject("ns", "a", 1), newObject("ns", "b", 2))
		var mu sync.Mutex
		running := map[Request]bool{}
		overlaps := 0
		rec := newRecorder(func(_ context.Context, r Request, _ int) (Result, error) {
			mu.Lock()
			if running[r] {
				overlaps++
			}
			running[r] = true
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			running[r] = false
			mu.Unlock()
			return Result{}, nil
		})
		c := mustNew(t, Options{Name: "test", MaxConcurrentReconciles: 4}, rec.reconcile)
		must(t, For(c, inf))
		start(t, c)
		w := <-lw.Watches
		for rv := 10; rv < 20; rv++ { // updates while a and b are being reconciled
			w.Modify(newObject("ns", "a", rv))
			w.Modify(newObject("ns", "b", rv))
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(time.Minute)
		got := rec.take()
		if overlaps != 0 {
			t.Errorf("%d reconciles overlapped another of the same Request", overlaps)
		}
		// Each reconcile takes 1 s and updates come every 0.3 s until 2.7 s:
		// the updates during a reconcile fold into one more, right after it.
		var want []call
		for at := range 4 {
			want = append(want, call{req("ns", "a"), time.Duration(at) * time.Second}, call{req("ns", "b"), time.Duration(at) * time.Second})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reconciles (-want +got):\n%s", diff)
		}
	})
}

func TestInGroup(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, group string
		want              bool
	}{
		{"v1", "", true},
		{"apps/v1", "apps", true},
		{"apps/v1beta2", "apps", true},
		{"apps/v1", "", false},
		{"v1", "apps", false},
		{"", "", false},
		{"apps/", "apps", false},
		{"apps/v1/x", "apps", false},
		{"example.com/v1", "example.com", true},
	} {
		if got := inGroup(tc.apiVersion, tc.group); got != tc.want {
			t.Errorf("inGroup(%q, %q) = %v, want %v", tc.apiVersion, tc.group, got, tc.want)
		}
	}
}
