package cache

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

func TestStreamingListReplacesAtBookmarkAndKeepsStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, nil)
		w := h.watch()
		o := w.Opts
		if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersionMatch != "NotOlderThan" ||
			!o.AllowWatchBookmarks || o.ResourceVersion != "" || o.TimeoutSeconds < 300 {
			t.Errorf("streaming list options %+v", o)
		}
		w.Add(cachetest.New("ns", "a", 3))
		w.Add(cachetest.New("ns", "b", 4))
		w.Delete(cachetest.New("ns", "b", 4))
		w.Add(cachetest.New("ns", "c", 5))
		w.Send(cachetest.Bookmark(9, false)) // an ordinary bookmark changes nothing
		h.expectOps()
		w.Send(cachetest.Bookmark(10, true))
		h.expectOps("replace [ns/a ns/c] @10")
		w.Modify(cachetest.New("ns", "a", 11)) // the same stream goes on as the watch
		h.expectOps("update a@11")
		h.expectStats(ReflectorStats{WatchCalls: 1, Syncs: 1})
	})
}

func TestStreamingListWithoutBookmarkFallsBackToList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10", cachetest.New("ns", "a", 3))
			lw.AddList("20")
		})
		w := h.watch()
		w.Add(cachetest.New("ns", "a", 3))
		time.Sleep(5 * time.Second)
		w.Add(cachetest.New("ns", "b", 4)) // events push the deadline back
		start := time.Now()
		<-w.Stopped()
		if d := time.Since(start); d != DefaultInitialEventsTimeout {
			t.Errorf("gave up %v after the last event, want %v", d, DefaultInitialEventsTimeout)
		}
		w2 := h.watch()
		if w2.Opts.SendInitialEvents != nil || w2.Opts.ResourceVersion != "10" {
			t.Errorf("watch after the fallback: %+v", w2.Opts)
		}
		h.expectOps("replace [ns/a] @10")
		// The server cannot stream lists: a relist goes straight to LIST.
		w2.End(cachetest.Gone())
		w3 := h.watch()
		if w3.Opts.SendInitialEvents != nil {
			t.Errorf("relist streamed again: %+v", w3.Opts)
		}
		h.expectStats(ReflectorStats{ListCalls: 2, WatchCalls: 3, Syncs: 2, Relists: 1, WatchListFallbacks: 1})
		if errs := h.errors(); len(errs) == 0 || !strings.Contains(errs[0], ErrInitialEventsTimeout.Error()) {
			t.Errorf("errors %q", errs)
		}
	})
}

func TestStreamingListRejectedFallsBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.FailWatches(cachetest.Status(422, api.StatusReasonInvalid))
			lw.AddList("10")
		})
		h.watch()
		h.expectCalls("watch +0s", "list +0s", "watch +0s")
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 2, Syncs: 1, WatchListFallbacks: 1})
	})
}

// TestStreamingListCutIsStreamedAgain: a streaming list cut before its
// end synced nothing, whatever it sent. One that delivered nothing is
// streamed again as a watch is watched again (at once the first time in a
// row, then after the backoff); one that delivered is streamed again at
// once, and the third such in a row is replaced by a LIST (this sync
// only), which progresses page by page where a stream cut faster than it
// ends never would.
func TestStreamingListCutIsStreamedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10")
		})
		h.watch().End(nil)
		h.watch().End(errConnReset)
		for range maxStreamCuts {
			w := h.watch()
			w.Add(cachetest.New("ns", "a", 3))
			w.End(errCutInEvent)
		}
		w := h.watch()
		if w.Opts.SendInitialEvents != nil {
			t.Errorf("the third cut in a row after delivering did not fall back to LIST: %+v", w.Opts)
		}
		h.expectCalls("watch +0s", "watch +0s", "watch +800ms", "watch +800ms", "watch +800ms", "list +800ms", "watch +800ms")
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 6, Syncs: 1, WatchListFallbacks: 1})
		for _, o := range h.lw.WatchCalls()[:5] {
			if o.SendInitialEvents == nil {
				t.Errorf("not streamed again: %+v", o)
			}
		}
		// The fallback was for that sync only: the next one streams.
		w.End(cachetest.Gone())
		if w := h.watch(); w.Opts.SendInitialEvents == nil {
			t.Errorf("the sync after a 410 did not stream: %+v", w.Opts)
		}
	})
}

// TestStreamingListRetriesAfterFailures: a streaming list the server
// refuses for a reason other than not streaming lists is streamed again,
// never replaced by a LIST: after a 429's Retry-After, at once after a
// 410 (from the current state), after the backoff after an error.
func TestStreamingListRetriesAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.FailWatches(cachetest.TooManyRequests(2), cachetest.Gone(), cachetest.Status(503, api.StatusReasonServiceUnavailable), errConnRefused)
		})
		w := h.watch()
		if w.Opts.SendInitialEvents == nil || w.Opts.ResourceVersion != "" {
			t.Errorf("options after 410: %+v", w.Opts)
		}
		w.Send(client.Event[*obj]{Type: client.Error, Err: cachetest.Status(500, api.StatusReasonInternalError)})
		w = h.watch()
		if w.Opts.SendInitialEvents == nil {
			t.Errorf("not streamed again after an ERROR event: %+v", w.Opts)
		}
		h.expectCalls("watch +0s", "watch +2s", "watch +2s", "watch +2.8s", "watch +4.4s", "watch +7.6s")
		h.expectStats(ReflectorStats{WatchCalls: 6})
	})
}

// bare is an object with no annotations: the end of its streaming list is
// known from the event, not from the object.
type bare struct{ name, rv string }

func (b *bare) GetName() string              { return b.name }
func (b *bare) GetNamespace() string         { return "ns" }
func (b *bare) GetResourceVersion() string   { return b.rv }
func (b *bare) GetLabels() map[string]string { return nil }

func TestStreamingListOfObjectsWithoutAnnotations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := cachetest.NewFakeListerWatcher[*bare]()
		inf := NewInformer(lw, InformerOptions[*bare]{Reflector: ReflectorOptions{UseWatchList: true}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = inf.Run(ctx) }()
		w := <-lw.Watches
		w.Add(&bare{name: "a", rv: "3"})
		w.Send(client.Event[*bare]{Type: client.Bookmark, Object: &bare{rv: "7"}, InitialEventsEnd: true})
		synctest.Wait()
		if !inf.HasSynced() || inf.Indexer().Len() != 1 {
			t.Fatalf("synced %v with %d objects, want synced with 1", inf.HasSynced(), inf.Indexer().Len())
		}
		want := ReflectorStats{WatchCalls: 1, Syncs: 1}
		if got := inf.Reflector().Stats(); got != want || inf.Reflector().LastSyncResourceVersion() != "7" {
			t.Errorf("stats %+v at %q, want %+v at 7", got, inf.Reflector().LastSyncResourceVersion(), want)
		}
	})
}

func inParts(s *recStore) ReflectorStore[*obj] { return partsStore{s} }

// A PartialReplacer gets a streaming list's objects in parts of PageSize as
// they arrive: a MODIFIED object is listed again, a DELETED one ends the
// part and is deleted after it, and the list ends at the bookmark, with
// the objects still gathered; the events after it are applied one by one.
func TestStreamingListInParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflectorInto(t, inParts, ReflectorOptions{UseWatchList: true, PageSize: 2}, nil)
		w := h.watch()
		w.Add(cachetest.New("ns", "a", 1))
		w.Add(cachetest.New("ns", "b", 2))
		w.Add(cachetest.New("ns", "c", 3))
		w.Modify(cachetest.New("ns", "a", 4))
		w.Delete(cachetest.New("ns", "b", 5))
		w.Add(cachetest.New("ns", "d", 6))
		h.expectOps("begin", "part [ns/a ns/b]", "part [ns/a ns/c]", "delete b@5") // keys sorted: the part is [c@3 a@4]
		w.Send(cachetest.Bookmark(9, false))                                       // an ordinary bookmark changes nothing
		h.expectOps()
		w.Send(cachetest.Bookmark(10, true))
		h.expectOps("part [ns/d]", "end @10")
		w.Modify(cachetest.New("ns", "c", 11))
		h.expectOps("update c@11")
		h.expectStats(ReflectorStats{WatchCalls: 1, Syncs: 1})
		if rv := h.r.LastSyncResourceVersion(); rv != "11" {
			t.Errorf("LastSyncResourceVersion %q, want 11", rv)
		}
	})
}

// A streaming list that fails after some of its parts were applied is
// begun again from the current state (resourceVersion ""), whether it is
// streamed again (after a 410) or replaced by a LIST (after another
// failure): never from a state that may be older than those parts; the
// list begun again abandons the unfinished one.
func TestStreamingListAfterAppliedPartsIsNotOlder(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  error
		want []string
	}{
		{"streamed again after 410", cachetest.Gone(),
			[]string{"begin", "part [ns/a ns/b]", "begin", "part [ns/a ns/c]", "end @20"}},
		{"streamed again after an error", cachetest.Status(500, api.StatusReasonInternalError),
			[]string{"begin", "part [ns/a ns/b]", "begin", "part [ns/a ns/c]", "end @20"}},
		{"listed when the server cannot stream", cachetest.Status(422, api.StatusReasonInvalid),
			[]string{"begin", "part [ns/a ns/b]", "begin", "part [ns/a ns/c]", "end @20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startReflectorInto(t, inParts, ReflectorOptions{UseWatchList: true, PageSize: 2}, func(lw *cachetest.FakeListerWatcher[*obj]) {
					lw.AddList("20", cachetest.New("ns", "a", 1), cachetest.New("ns", "c", 12))
				})
				w := h.watch()
				w.Add(cachetest.New("ns", "a", 1))
				w.Add(cachetest.New("ns", "b", 2))
				w.Add(cachetest.New("ns", "x", 3)) // in no part yet: never applied
				w.Send(client.Event[*obj]{Type: client.Error, Err: tc.end})
				again := h.watch()
				if cannotStreamLists(tc.end) {
					// A LIST replaced the stream; this is the watch after it.
					if diff := cmp.Diff([]client.ListOptions{{Limit: 2}}, h.lw.ListCalls()); diff != "" {
						t.Errorf("list options (-want +got):\n%s", diff)
					}
					h.expectOps(tc.want...)
					return
				}
				if again.Opts.SendInitialEvents == nil || again.Opts.ResourceVersion != "" {
					t.Errorf("streaming list after the failure: %+v", again.Opts)
				}
				again.Add(cachetest.New("ns", "a", 1))
				again.Add(cachetest.New("ns", "c", 12))
				again.Send(cachetest.Bookmark(20, true))
				h.expectOps(tc.want...)
			})
		})
	}
}

// An informer's streaming list reaches its handlers in parts: the objects of
// a list that fails stay applied, the list begun again (from the current
// state) abandons the rest of it, and its end reports the objects it does
// not have as deleted.
func TestInformerStreamingListInParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := cachetest.NewFakeListerWatcher[*obj]()
		inf := NewInformer(lw, InformerOptions[*obj]{Reflector: ReflectorOptions{UseWatchList: true, PageSize: 2, Backoff: noJitter()}})
		h := &recHandler{}
		register(t, inf, h, 0)
		startInformer(t, inf)
		w := nextWatch(t, lw)
		w.Add(cachetest.New("ns", "a", 1))
		w.Add(cachetest.New("ns", "b", 2))
		w.Add(cachetest.New("ns", "c", 3)) // not a whole part: never applied
		h.expect(t, "add a@1 (initial)", "add b@2 (initial)")
		w.Send(client.Event[*obj]{Type: client.Error, Err: cachetest.Gone()})
		w = nextWatch(t, lw)
		if w.Opts.ResourceVersion != "" || w.Opts.SendInitialEvents == nil {
			t.Errorf("streaming list after the failure: %+v", w.Opts)
		}
		w.Add(cachetest.New("ns", "a", 1))
		w.Add(cachetest.New("ns", "d", 5))
		w.Modify(cachetest.New("ns", "a", 6))
		synctest.Wait()
		if inf.HasSynced() {
			t.Error("synced before the initial-events-end bookmark")
		}
		w.Send(cachetest.Bookmark(10, true))
		synctest.Wait()
		if !inf.HasSynced() {
			t.Error("not synced after the initial-events-end bookmark")
		}
		w.Modify(cachetest.New("ns", "d", 11))
		h.expect(t, "add d@5 (initial)", "update a@1->6", "delete b@2 (final state unknown)", "update d@5->11")
		if diff := cmp.Diff([]string{"ns/a", "ns/d"}, keys(inf.Indexer().List())); diff != "" {
			t.Errorf("cache (-want +got):\n%s", diff)
		}
	})
}
