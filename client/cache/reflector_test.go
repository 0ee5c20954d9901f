package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

// recStore records what a Reflector does to its store.
type recStore struct {
	mu  sync.Mutex
	ops []string
}

func (s *recStore) record(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, fmt.Sprintf(format, args...))
}

func (s *recStore) Add(o *obj)    { s.record("add %s@%s", o.Name, o.ResourceVersion) }
func (s *recStore) Update(o *obj) { s.record("update %s@%s", o.Name, o.ResourceVersion) }
func (s *recStore) Delete(o *obj) { s.record("delete %s@%s", o.Name, o.ResourceVersion) }
func (s *recStore) Replace(list []*obj, rv string) {
	s.record("replace %v @%s", keys(list), rv)
}

// take returns and forgets the operations so far.
func (s *recStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := s.ops
	s.ops = nil
	return ops
}

// reflectorHarness runs a Reflector over a FakeListerWatcher inside a
// synctest bubble, recording its errors and when it called the server.
type reflectorHarness struct {
	t     *testing.T
	lw    *cachetest.FakeListerWatcher[*obj]
	store *recStore
	r     *Reflector[*obj]
	start time.Time

	mu    sync.Mutex
	errs  []string
	calls []string // "list +1.6s" / "watch +1.6s"
}

// timedLW records the time of every call before passing it on.
type timedLW struct{ h *reflectorHarness }

func (l timedLW) List(ctx context.Context, o client.ListOptions) ([]*obj, string, string, error) {
	l.h.note("list")
	return l.h.lw.List(ctx, o)
}

func (l timedLW) Watch(ctx context.Context, o client.ListOptions) (client.Watch[*obj], error) {
	l.h.note("watch")
	return l.h.lw.Watch(ctx, o)
}

func (h *reflectorHarness) note(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf("%s +%v", what, time.Since(h.start)))
}

// takeCalls returns and forgets the calls so far.
func (h *reflectorHarness) takeCalls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls
	h.calls = nil
	return c
}

func (h *reflectorHarness) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

// noJitter is the default backoff without randomness, for exact timing.
func noJitter() Backoff {
	b := DefaultBackoff()
	b.Jitter = 0
	return b
}

// startReflector must be called inside a synctest bubble; script sets up the
// fake before the Reflector starts.
func startReflector(t *testing.T, opts ReflectorOptions, script func(lw *cachetest.FakeListerWatcher[*obj])) *reflectorHarness {
	return startReflectorInto(t, func(s *recStore) ReflectorStore[*obj] { return s }, opts, script)
}

// startReflectorInto is startReflector into the store made by wrap around
// the recording store (a partsStore, to record a PartialReplacer's calls).
func startReflectorInto(t *testing.T, wrap func(*recStore) ReflectorStore[*obj], opts ReflectorOptions, script func(lw *cachetest.FakeListerWatcher[*obj])) *reflectorHarness {
	h := &reflectorHarness{t: t, lw: cachetest.NewFakeListerWatcher[*obj](), store: &recStore{}, start: time.Now()}
	if script != nil {
		script(h.lw)
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = noJitter()
	}
	opts.WatchErrorHandler = func(err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.errs = append(h.errs, err.Error())
	}
	h.r = NewReflector(timedLW{h}, wrap(h.store), opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// watch returns the next watch the Reflector opens.
func (h *reflectorHarness) watch() *cachetest.FakeWatch[*obj] {
	h.t.Helper()
	select {
	case w := <-h.lw.Watches:
		return w
	case <-time.After(time.Hour):
		h.t.Fatalf("no watch opened within an hour; calls %v, errors %v", h.takeCalls(), h.errors())
		return nil
	}
}

// settle waits for the Reflector to block, then returns the store's new operations.
func (h *reflectorHarness) settle() []string {
	synctest.Wait()
	return h.store.take()
}

func (h *reflectorHarness) expectOps(want ...string) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.settle()); diff != "" {
		h.t.Errorf("store operations (-want +got):\n%s", diff)
	}
}

func (h *reflectorHarness) expectCalls(want ...string) {
	h.t.Helper()
	synctest.Wait()
	if diff := cmp.Diff(want, h.takeCalls()); diff != "" {
		h.t.Errorf("server calls (-want +got):\n%s", diff)
	}
}

func (h *reflectorHarness) expectStats(want ReflectorStats) {
	h.t.Helper()
	synctest.Wait()
	got := h.r.Stats()
	got.Errors = want.Errors // checked through the handler
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestReflectorPagedListThenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{LabelSelector: "app=web"}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddPages(
				cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 3)}, ResourceVersion: "10", Continue: "c1"},
				cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "b", 5)}, ResourceVersion: "10"},
			)
		})
		w := h.watch()
		h.expectOps("replace [ns/a ns/b] @10")
		wantLists := []client.ListOptions{
			{LabelSelector: "app=web", ResourceVersion: "0", Limit: 500},
			{LabelSelector: "app=web", Continue: "c1", Limit: 500},
		}
		if diff := cmp.Diff(wantLists, h.lw.ListCalls()); diff != "" {
			t.Errorf("list options (-want +got):\n%s", diff)
		}
		if o := w.Opts; o.ResourceVersion != "10" || !o.AllowWatchBookmarks || o.TimeoutSeconds < 300 || o.TimeoutSeconds >= 600 || o.LabelSelector != "app=web" {
			t.Errorf("watch options %+v", o)
		}
		w.Add(cachetest.New("ns", "c", 11))
		w.Modify(cachetest.New("ns", "a", 12))
		w.Delete(cachetest.New("ns", "b", 13))
		w.Send(cachetest.Bookmark(20, false))
		h.expectOps("add c@11", "update a@12", "delete b@13")
		if rv := h.r.LastSyncResourceVersion(); rv != "20" {
			t.Errorf("LastSyncResourceVersion = %q after a bookmark at 20", rv)
		}
		if h.r.LastSyncTime().IsZero() {
			t.Error("LastSyncTime not set")
		}
		h.expectStats(ReflectorStats{ListCalls: 2, WatchCalls: 1, Syncs: 1})
	})
}

func TestReflectorRewatchesWithoutRelist(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(w *cachetest.FakeWatch[*obj])
		wait     time.Duration // before the re-watch
		reported int           // errors given to the handler
	}{
		{"closed by the server", func(w *cachetest.FakeWatch[*obj]) { w.End(nil) }, 0, 0},
		{"unexpected EOF", func(w *cachetest.FakeWatch[*obj]) { w.End(errCutInEvent) }, 0, 1},
		{"connection reset", func(w *cachetest.FakeWatch[*obj]) { w.End(errConnReset) }, 0, 1},
		{"read timeout", func(w *cachetest.FakeWatch[*obj]) { w.End(errReadTimeout) }, 0, 1},
		{"HTTP/2 connection lost", func(w *cachetest.FakeWatch[*obj]) { w.End(errH2ConnLost) }, 0, 1},
		{"undecodable event", func(w *cachetest.FakeWatch[*obj]) { w.End(errors.New("invalid character '}'")) }, 800 * time.Millisecond, 1},
		{"internal error event", func(w *cachetest.FakeWatch[*obj]) {
			w.Send(client.Event[*obj]{Type: client.Error, Err: cachetest.Status(500, api.StatusReasonInternalError)})
		}, 800 * time.Millisecond, 1},
		{"resourceVersion too large", func(w *cachetest.FakeWatch[*obj]) {
			w.End(cachetest.Status(504, api.StatusReasonTimeout))
		}, 800 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) { lw.AddList("10") })
				w := h.watch()
				w.Add(cachetest.New("ns", "a", 11))
				synctest.Wait()
				h.takeCalls()
				tc.end(w)
				w2 := h.watch()
				if w2.Opts.ResourceVersion != "11" {
					t.Errorf("re-watch from %q, want 11", w2.Opts.ResourceVersion)
				}
				h.expectCalls(fmt.Sprintf("watch +%v", tc.wait))
				h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 2, Syncs: 1})
				if n := len(h.errors()); n != tc.reported {
					t.Errorf("errors reported: %v, want %d", h.errors(), tc.reported)
				}
			})
		})
	}
}

// TestReflectorCutWatchesResumeAtOnce: a watch cut again and again, each
// time after delivering, is resumed at once every time, however many
// times: the backoff never grows.
func TestReflectorCutWatchesResumeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) { lw.AddList("10") })
		for rv := 11; rv < 31; rv++ {
			w := h.watch()
			if w.Opts.ResourceVersion != strconv.Itoa(rv-1) {
				t.Fatalf("watch from %q, want %d", w.Opts.ResourceVersion, rv-1)
			}
			w.Modify(cachetest.New("ns", "a", rv))
			w.End(errCutInEvent)
		}
		h.watch()
		for _, c := range h.takeCalls() {
			if !strings.HasSuffix(c, " +0s") {
				t.Errorf("call %q waited", c)
			}
		}
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 21, Syncs: 1})
	})
}

func TestReflectorRelistsOnlyOnExpired(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(w *cachetest.FakeWatch[*obj])
	}{
		{"410 at watch end", func(w *cachetest.FakeWatch[*obj]) { w.End(cachetest.Gone()) }},
		{"410 ERROR event", func(w *cachetest.FakeWatch[*obj]) {
			w.Send(client.Event[*obj]{Type: client.Error, Err: cachetest.Gone()})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) {
					lw.AddList("10", cachetest.New("ns", "a", 5))
					lw.AddList("30", cachetest.New("ns", "b", 25))
				})
				w := h.watch()
				w.Modify(cachetest.New("ns", "a", 12))
				h.settle()
				h.takeCalls()
				tc.end(w)
				w2 := h.watch()
				h.expectOps("replace [ns/b] @30")
				h.expectCalls("list +800ms", "watch +800ms")
				last := h.lw.ListCalls()[1]
				if last.ResourceVersion != "12" || last.ResourceVersionMatch != "NotOlderThan" {
					t.Errorf("relist options %+v, want resourceVersion 12, NotOlderThan", last)
				}
				if w2.Opts.ResourceVersion != "30" {
					t.Errorf("watch after relist from %q, want 30", w2.Opts.ResourceVersion)
				}
				h.expectStats(ReflectorStats{ListCalls: 2, WatchCalls: 2, Syncs: 2, Relists: 1})
			})
		})
	}
}

func TestReflectorListExpiredRetriesFromCurrentState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10")
			lw.AddPages(cachetest.Page[*obj]{Err: cachetest.Gone()})
			lw.AddList("40", cachetest.New("ns", "z", 40))
		})
		h.watch().End(cachetest.Gone())
		h.watch()
		h.expectOps("replace [] @10", "replace [ns/z] @40")
		calls := h.lw.ListCalls()
		if len(calls) != 3 || calls[1].ResourceVersion != "10" || calls[2].ResourceVersion != "" || calls[2].ResourceVersionMatch != "" {
			t.Errorf("list calls %+v: want 0, then 10, then \"\"", calls)
		}
		h.expectCalls("list +0s", "watch +0s", "list +800ms", "list +800ms", "watch +800ms")
	})
}

func TestReflectorExpiredContinueTokenListsInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddPages(
				cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 1)}, ResourceVersion: "10", Continue: "c1"},
				cachetest.Page[*obj]{Err: cachetest.Gone()},
				cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 12)}, ResourceVersion: "12"},
			)
		})
		h.watch()
		h.expectOps("replace [ns/a ns/b] @12")
		if full := h.lw.ListCalls()[2]; full.Limit != 0 || full.Continue != "" || full.ResourceVersion != "0" {
			t.Errorf("full list options %+v", full)
		}
	})
}

func TestReflectorTooManyRequestsHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10")
			lw.FailWatches(cachetest.TooManyRequests(7), cachetest.TooManyRequests(0))
		})
		h.watch()
		// 7 s as asked; then no Retry-After, so the backoff's first step.
		h.expectCalls("list +0s", "watch +0s", "watch +7s", "watch +7.8s")
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 3, Syncs: 1})
	})
}

func TestReflectorBackoffGrowsCapsAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := fmt.Errorf("dial: %w", errConnRefused)
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10")
			lw.FailWatches(refused, refused, refused, refused, refused, refused, refused, refused)
		})
		w := h.watch()
		var gaps []time.Duration
		prev := time.Duration(0)
		for _, c := range h.takeCalls()[1:] {
			at, _ := time.ParseDuration(strings.TrimPrefix(c, "watch +"))
			gaps = append(gaps, at-prev)
			prev = at
		}
		want := []time.Duration{0, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
			6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond, 30 * time.Second, 30 * time.Second}
		if diff := cmp.Diff(want, gaps); diff != "" {
			t.Errorf("gaps between watch attempts (-want +got):\n%s", diff)
		}
		// Two healthy minutes later the backoff starts again from 800 ms.
		w.Add(cachetest.New("ns", "a", 11))
		time.Sleep(3 * time.Minute)
		h.takeCalls()
		start := time.Now()
		w.End(errors.New("broken"))
		h.watch()
		if d := time.Since(start); d != 800*time.Millisecond {
			t.Errorf("delay after two healthy minutes = %v, want 800ms", d)
		}
	})
}

func TestBackoffJitterBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackoffState(DefaultBackoff())
		step := 800 * time.Millisecond
		for i := range 12 {
			d := b.next()
			if d < step || d >= 2*step {
				t.Errorf("delay %d = %v, want in [%v, %v)", i, d, step, 2*step)
			}
			step = min(2*step, 30*time.Second)
		}
	})
}

// TestBackoffStartsAgainEveryResetAfter: as client-go's backoffManager,
// the steps start again from Initial at the first delay asked for more
// than ResetAfter after they last did, even while failures go on.
func TestBackoffStartsAgainEveryResetAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackoffState(noJitter())
		var got []time.Duration
		for range 12 {
			d := b.next()
			got = append(got, d)
			time.Sleep(d) // the attempt after it fails at once
		}
		s := time.Second
		// Asked at 0, 0.8, 2.4, 5.6, 12, 24.8, 50.4, 80.4, 110.4 s; at 140.4 s
		// the steps started more than 2 minutes ago.
		want := []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
			12800 * time.Millisecond, 25600 * time.Millisecond, 30 * s, 30 * s, 30 * s,
			800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("delays (-want +got):\n%s", diff)
		}
	})
}

// TestReflectorEmptyWatchesBackOff: watches that end with nothing
// delivered are reopened at once the first time only, then under the
// backoff, whether the server closes them, the network cuts them or they
// fail to open; a watch that delivers resets the backoff.
func TestReflectorEmptyWatchesBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) { lw.AddList("10") })
		h.watch().End(nil)
		h.watch().End(errConnReset)
		h.watch().End(nil)
		w := h.watch()
		h.expectCalls("list +0s", "watch +0s", "watch +0s", "watch +800ms", "watch +2.4s")
		w.Add(cachetest.New("ns", "a", 11))
		w.End(errCutInEvent)
		h.lw.FailWatches(io.EOF, io.EOF) // the connection closed before the response
		h.watch().End(nil)
		h.expectCalls("watch +2.4s", "watch +2.4s", "watch +3.2s")
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 7, Syncs: 1})
		if errs := h.errors(); len(errs) != 6 || !strings.Contains(errs[0], errEmptyWatches.Error()) {
			t.Errorf("errors %q", errs)
		}
	})
}

func TestReflectorStalledWatchIsReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{}, func(lw *cachetest.FakeListerWatcher[*obj]) { lw.AddList("10") })
		w := h.watch()
		start := time.Now()
		<-w.Stopped()
		limit := time.Duration(w.Opts.TimeoutSeconds)*time.Second + watchStallGrace
		if d := time.Since(start); d != limit {
			t.Errorf("silent watch stopped after %v, want %v", d, limit)
		}
		if w2 := h.watch(); w2.Opts.ResourceVersion != "10" {
			t.Errorf("re-watch from %q", w2.Opts.ResourceVersion)
		}
		if errs := h.errors(); len(errs) != 1 || !strings.Contains(errs[0], ErrWatchStalled.Error()) {
			t.Errorf("errors %v", errs)
		}
	})
}

func TestReflectorListErrorsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{Name: "things"}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddPages(cachetest.Page[*obj]{Err: cachetest.Status(500, api.StatusReasonInternalError)})
			lw.AddList("10")
		})
		h.watch()
		h.expectCalls("list +0s", "list +800ms", "watch +800ms")
		if errs := h.errors(); len(errs) != 1 || !strings.HasPrefix(errs[0], "reflector things: list at resourceVersion \"0\"") {
			t.Errorf("errors %q", errs)
		}
	})
}

// partsStore records a PartialReplacer's calls too.
type partsStore struct{ *recStore }

func (s partsStore) BeginReplace()           { s.record("begin") }
func (s partsStore) ReplacePart(list []*obj) { s.record("part %v", keys(list)) }
func (s partsStore) EndReplace(rv string)    { s.record("end @%s", rv) }

// listIntoParts runs a Reflector over lw into a partsStore until it opens
// its first watch; the Reflector stops when the test ends.
func listIntoParts(t *testing.T, lw *cachetest.FakeListerWatcher[*obj]) (partsStore, *Reflector[*obj]) {
	t.Helper()
	store := partsStore{&recStore{}}
	r := NewReflector(lw, store, ReflectorOptions{Backoff: noJitter()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-lw.Watches
	return store, r
}

// A PartialReplacer gets each page as it arrives; a continue token that
// expires begins the list again, in full.
func TestReflectorListsInPartsIntoAPartialReplacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := cachetest.NewFakeListerWatcher[*obj]()
		lw.AddPages(
			cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 1)}, ResourceVersion: "10", Continue: "c1"},
			cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "b", 2)}, ResourceVersion: "10", Continue: "c2"},
			cachetest.Page[*obj]{Err: cachetest.Gone()},
			cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "c", 12)}, ResourceVersion: "12"},
		)
		store, r := listIntoParts(t, lw)
		want := []string{"begin", "part [ns/a]", "part [ns/b]", "begin", "part [ns/a ns/c]", "end @12"}
		if diff := cmp.Diff(want, store.take()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if got := r.LastSyncResourceVersion(); got != "12" {
			t.Errorf("LastSyncResourceVersion %q, want 12", got)
		}
	})
}

// pagesLW lists through ListPages (a client.PageLister); the page from
// continue token "4" expires the first time.
type pagesLW struct {
	pagedLW
	expired *bool
}

func (l pagesLW) ListPages(ctx context.Context, opts client.ListOptions, page func([]*obj) error) (string, error) {
	for {
		if opts.Continue == "4" && !*l.expired {
			*l.expired = true
			return "", cachetest.Gone()
		}
		items, rv, next, err := l.List(ctx, opts)
		if err != nil {
			return "", err
		}
		if err := page(items); err != nil {
			return "", err
		}
		if next == "" {
			return rv, nil
		}
		opts.Continue = next
	}
}

// A PageLister's pages reach the store as they come; a continue token that
// expires begins the list again, in one request.
func TestReflectorListsThroughAPageLister(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := partsStore{&recStore{}}
		lw := pagesLW{pagedLW: pagedLW{items: smallObjects(6)}, expired: new(false)}
		r := NewReflector[*obj](lw, store, ReflectorOptions{PageSize: 2, Backoff: noJitter()})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		synctest.Wait()
		all := keys(smallObjects(6))
		want := []string{"begin", fmt.Sprintf("part %v", keys(smallObjects(6)[:2])), fmt.Sprintf("part %v", keys(smallObjects(6)[2:4])),
			"begin", fmt.Sprintf("part %v", all), "end @1"}
		if diff := cmp.Diff(want, store.take()); diff != "" {
			t.Errorf("store calls (-want +got):\n%s", diff)
		}
		if s := r.Stats(); s.ListCalls != 4 || s.Syncs != 1 {
			t.Errorf("stats %+v: want 4 list calls (3 pages, one full list), 1 sync", s)
		}
		cancel()
		<-done
	})
}

// A list whose pages were applied and which then fails is followed by a
// list of the current state (resourceVersion ""), never by one that may be
// older than those pages (a cache behind them): whether the next page
// fails (the list is retried) or its continue token expires (the list is
// read again in one request).
func TestReflectorListAfterAppliedPagesIsNotOlder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		again client.ListOptions
	}{
		{"a page fails", cachetest.Status(500, api.StatusReasonInternalError), client.ListOptions{Limit: 500}},
		{"a continue token expires", cachetest.Gone(), client.ListOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lw := cachetest.NewFakeListerWatcher[*obj]()
				lw.AddPages(
					cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 1)}, ResourceVersion: "10", Continue: "c1"},
					cachetest.Page[*obj]{Err: tc.err},
					cachetest.Page[*obj]{Items: []*obj{cachetest.New("ns", "a", 11), cachetest.New("ns", "c", 12)}, ResourceVersion: "12"},
				)
				store, _ := listIntoParts(t, lw)
				want := []client.ListOptions{{ResourceVersion: "0", Limit: 500}, {Continue: "c1", Limit: 500}, tc.again}
				if diff := cmp.Diff(want, lw.ListCalls()); diff != "" {
					t.Errorf("list options (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"begin", "part [ns/a]", "begin", "part [ns/a ns/c]", "end @12"}, store.take()); diff != "" {
					t.Errorf("store calls (-want +got):\n%s", diff)
				}
			})
		})
	}
}
