package cache

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/cache/cachetest"
	"github.com/listwatch/listwatch/client"
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

func TestStreamingListBrokenStreamFallsBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.AddList("10")
			lw.AddList("20")
		})
		h.watch().End(nil) // ends before its bookmark: not a 4xx, try again next time
		w := h.watch()
		w.End(cachetest.Gone())
		if w3 := h.watch(); w3.Opts.SendInitialEvents == nil {
			t.Errorf("the relist after a transient failure did not stream: %+v", w3.Opts)
		}
		h.expectStats(ReflectorStats{ListCalls: 1, WatchCalls: 3, Syncs: 1, WatchListFallbacks: 1})
	})
}

func TestStreamingListRetriesOnRetryableErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startReflector(t, ReflectorOptions{UseWatchList: true}, func(lw *cachetest.FakeListerWatcher[*obj]) {
			lw.FailWatches(cachetest.TooManyRequests(2), cachetest.Gone())
		})
		w := h.watch()
		// After 410 the stream asks for the current state ("").
		if w.Opts.SendInitialEvents == nil || w.Opts.ResourceVersion != "" {
			t.Errorf("options after 410: %+v", w.Opts)
		}
		h.expectCalls("watch +0s", "watch +2s", "watch +2.8s")
		w.Send(client.Event[*obj]{Type: client.Error, Err: cachetest.Status(500, api.StatusReasonInternalError)})
		h.expectStats(ReflectorStats{WatchCalls: 3, WatchListFallbacks: 1, ListCalls: 1})
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
