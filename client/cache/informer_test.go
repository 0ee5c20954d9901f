package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

// recHandler records its notifications; with a gate it blocks on each
// until the gate is closed.
type recHandler struct {
	gate chan struct{}

	mu  sync.Mutex
	got []string
}

func (h *recHandler) record(format string, args ...any) {
	if h.gate != nil {
		<-h.gate
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, fmt.Sprintf(format, args...))
}

func (h *recHandler) OnAdd(o *obj, initial bool) {
	h.record("add %s@%s%s", o.Name, o.ResourceVersion, map[bool]string{true: " (initial)"}[initial])
}

func (h *recHandler) OnUpdate(old, o *obj) {
	h.record("update %s@%s->%s", o.Name, old.ResourceVersion, o.ResourceVersion)
}

func (h *recHandler) OnDelete(o *obj, unknown bool) {
	h.record("delete %s@%s%s", o.Name, o.ResourceVersion, map[bool]string{true: " (final state unknown)"}[unknown])
}

// take returns and forgets what the handler got.
func (h *recHandler) take() []string {
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

func (h *recHandler) expect(t *testing.T, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, h.take()); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

// startInformer runs an informer over a fake inside a synctest bubble.
func startInformer(t *testing.T, inf *SharedIndexInformer[*obj]) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func newTestInformer(t *testing.T, opts InformerOptions[*obj], items ...*obj) (*SharedIndexInformer[*obj], *cachetest.FakeListerWatcher[*obj]) {
	lw := cachetest.NewFakeListerWatcher[*obj]()
	lw.AddList("10", items...)
	opts.Reflector.Backoff = noJitter()
	return NewInformer(lw, opts), lw
}

func nextWatch(t *testing.T, lw *cachetest.FakeListerWatcher[*obj]) *cachetest.FakeWatch[*obj] {
	t.Helper()
	select {
	case w := <-lw.Watches:
		return w
	case <-time.After(time.Hour):
		t.Fatal("no watch opened")
		return nil
	}
}

func register(t *testing.T, inf *SharedIndexInformer[*obj], h ResourceEventHandler[*obj], resync time.Duration) *Registration[*obj] {
	t.Helper()
	reg, err := inf.AddEventHandlerWithResync(h, resync)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestInformerNotifiesInOrderAndSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 2))
		h := &recHandler{}
		reg := register(t, inf, h, 0)
		if inf.HasSynced() || reg.HasSynced() {
			t.Fatal("synced before Run")
		}
		startInformer(t, inf)
		if !WaitForCacheSync(context.Background(), inf, reg) {
			t.Fatal("WaitForCacheSync failed")
		}
		w := nextWatch(t, lw)
		h.expect(t, "add a@1 (initial)", "add b@2 (initial)")
		w.Add(cachetest.New("ns", "c", 11))
		w.Modify(cachetest.New("ns", "a", 12))
		w.Delete(cachetest.New("ns", "b", 13))
		w.Delete(cachetest.New("ns", "never-seen", 14))
		h.expect(t, "add c@11", "update a@1->12", "delete b@13")
		if diff := cmp.Diff([]string{"ns/a", "ns/c"}, keys(inf.Indexer().List())); diff != "" {
			t.Errorf("cache (-want +got):\n%s", diff)
		}
		if o, ok := inf.Lister().Namespace("ns").Get("a"); !ok || o.ResourceVersion != "12" {
			t.Errorf("Lister Get = %v, %v", o, ok)
		}
		if rv := inf.Reflector().LastSyncResourceVersion(); rv != "14" {
			t.Errorf("LastSyncResourceVersion = %q", rv)
		}
	})
}

func TestInformerRelistReportsVanishedAndChangedOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{},
			cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 2), cachetest.New("ns", "c", 3))
		lw.AddList("20", cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 15), cachetest.New("ns", "d", 16))
		h := &recHandler{}
		register(t, inf, h, 0)
		startInformer(t, inf)
		nextWatch(t, lw).End(cachetest.Gone())
		nextWatch(t, lw)
		h.expect(t, "add a@1 (initial)", "add b@2 (initial)", "add c@3 (initial)",
			"update b@2->15", "add d@16", "delete c@3 (final state unknown)")
		if s := inf.Reflector().Stats(); s.Relists != 1 {
			t.Errorf("Relists = %d, want 1", s.Relists)
		}
	})
}

func TestInformerEmptyListSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newTestInformer(t, InformerOptions[*obj]{})
		reg := register(t, inf, &recHandler{}, 0)
		startInformer(t, inf)
		if !WaitForCacheSync(context.Background(), inf, reg) {
			t.Fatal("an empty list never synced")
		}
	})
}

func TestWaitForCacheSyncStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newTestInformer(t, InformerOptions[*obj]{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if WaitForCacheSync(ctx, inf) {
			t.Error("an informer that never ran synced")
		}
	})
}

func TestInformerLateHandlerGetsCurrentObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 2))
		startInformer(t, inf)
		w := nextWatch(t, lw)
		WaitForCacheSync(context.Background(), inf)
		late := &recHandler{}
		reg := register(t, inf, late, 0)
		if !WaitForCacheSync(context.Background(), reg) {
			t.Fatal("late handler never synced")
		}
		got := late.take()
		slices.Sort(got)
		if diff := cmp.Diff([]string{"add a@1 (initial)", "add b@2 (initial)"}, got); diff != "" {
			t.Errorf("replay (-want +got):\n%s", diff)
		}
		w.Modify(cachetest.New("ns", "a", 11))
		late.expect(t, "update a@1->11")
	})
}

func TestInformerResyncOnlyToDueHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, cachetest.New("ns", "a", 1))
		fast, never := &recHandler{}, &recHandler{}
		register(t, inf, fast, 10*time.Second)
		register(t, inf, never, 0)
		startInformer(t, inf)
		nextWatch(t, lw)
		fast.take()
		never.take()
		time.Sleep(25 * time.Second)
		fast.expect(t, "update a@1->1", "update a@1->1")
		never.expect(t)
		late := &recHandler{}
		register(t, inf, late, 500*time.Millisecond) // raised to MinimumResyncPeriod
		late.take()
		time.Sleep(time.Second)
		late.expect(t, "update a@1->1")
	})
}

func TestInformerTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		big := cachetest.New("ns", "a", 1)
		big.Data = "managedFields..."
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, big)
		if err := inf.SetTransform(func(o *obj) *obj { o.Data = ""; return o }); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		w := nextWatch(t, lw)
		more := cachetest.New("ns", "b", 2)
		more.Data = "x"
		w.Add(more)
		synctest.Wait()
		for _, o := range inf.Indexer().List() {
			if o.Data != "" {
				t.Errorf("%s cached untransformed", o.Name)
			}
		}
		if err := inf.SetTransform(nil); !errors.Is(err, ErrStarted) {
			t.Errorf("SetTransform after start: %v", err)
		}
	})
}

func TestInformerSlowHandlerBlocksNoOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{HandlerBufferSize: 4}, cachetest.New("ns", "a", 1))
		slow, fast := &recHandler{gate: make(chan struct{})}, &recHandler{}
		slowReg := register(t, inf, slow, 0)
		fastReg := register(t, inf, fast, 0)
		startInformer(t, inf)
		w := nextWatch(t, lw)
		// 3 keys, many updates: the fast handler sees each one, the slow
		// one's buffer fills and the rest coalesces per key.
		var want []string
		rv := 10
		for round := range 20 {
			for _, name := range []string{"a", "b", "c"} {
				rv++
				o := cachetest.New("ns", name, rv)
				if round == 0 && name != "a" {
					w.Add(o)
					want = append(want, fmt.Sprintf("add %s@%d", name, rv))
				} else {
					w.Modify(o)
					want = append(want, fmt.Sprintf("update %s@%d->%d", name, rv-3, rv))
				}
				synctest.Wait() // the fast handler keeps up
			}
		}
		want[0] = "update a@1->11"
		fast.expect(t, append([]string{"add a@1 (initial)"}, want...)...)
		if !fastReg.HasSynced() || slowReg.HasSynced() {
			t.Errorf("HasSynced: fast %v, slow %v; want true, false", fastReg.HasSynced(), slowReg.HasSynced())
		}
		// The slow handler is in its first call; its ring holds the end of
		// its initial list and the next 3 events; the other 57 events are
		// coalesced into 3 keys: bounded by keys, not events.
		if p := slowReg.Pending(); p != 4+3 {
			t.Errorf("slow Pending = %d, want 7", p)
		}
		if c := slowReg.Coalesced(); c != 57 {
			t.Errorf("slow Coalesced = %d, want 57", c)
		}
		close(slow.gate)
		slow.expect(t, "add a@1 (initial)", "update a@1->11", "add b@12", "add c@13",
			"update a@11->68", "update b@12->69", "update c@13->70")
		if !slowReg.HasSynced() || slowReg.Pending() != 0 {
			t.Errorf("after catching up: HasSynced %v, Pending %d", slowReg.HasSynced(), slowReg.Pending())
		}
	})
}

func TestInformerRemoveEventHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, cachetest.New("ns", "a", 1))
		kept, removed := &recHandler{}, &recHandler{}
		register(t, inf, kept, 0)
		reg := register(t, inf, removed, 0)
		startInformer(t, inf)
		w := nextWatch(t, lw)
		removed.take()
		kept.take()
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		w.Modify(cachetest.New("ns", "a", 2))
		kept.expect(t, "update a@1->2")
		removed.expect(t)
		if err := inf.RemoveEventHandler(reg); !errors.Is(err, ErrNotRegistered) {
			t.Errorf("second removal: %v", err)
		}
	})
}

func TestInformerRunTwiceAndAddAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, _ := newTestInformer(t, InformerOptions[*obj]{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()
		if err := inf.Run(ctx); !errors.Is(err, ErrStarted) {
			t.Errorf("second Run: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if _, err := inf.AddEventHandler(&recHandler{}); !errors.Is(err, ErrStopped) {
			t.Errorf("AddEventHandler after stop: %v", err)
		}
	})
}
