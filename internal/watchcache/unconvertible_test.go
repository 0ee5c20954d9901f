package watchcache

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

var errWebhookDown = errors.New("the webhook is down")

// refusingCache is a cache whose codec cannot convert anything while
// down, or, if only is set, only the value of that key.
func refusingCache(t *testing.T, s storage.Interface, cfg Config, down *atomic.Bool, only string) *Cache {
	t.Helper()
	cfg.Storage, cfg.Prefix, cfg.Codec = s, prefix, testCodec
	cfg.Codec.Decode = func(ctx context.Context, kv storage.KV) (api.Object, error) {
		if down.Load() && (only == "" || kv.Key == prefix+only) {
			return nil, &Unconvertible{Err: errWebhookDown}
		}
		return testCodec.Decode(ctx, kv)
	}
	c := New(cfg)
	t.Cleanup(c.Close)
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUnconvertibleStopsTheCache: a value the codec cannot convert now
// (Unconvertible) is not skipped as an undecodable one is: the cache ends
// its watchers with the error (what they have not taken yet goes with
// them: they must list again, as kube's cacher's terminated watchers
// must), refuses new ones, and, once the value converts, holds and sends
// every object, nothing deleted.
func TestUnconvertibleStopsTheCache(t *testing.T) { watchModes(t, testUnconvertibleStopsTheCache) }

func testUnconvertibleStopsTheCache(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	s := memory.New()
	defer s.Close()
	var down atomic.Bool
	c := refusingCache(t, s, Config{}, &down, "")
	wr := newWriter(t, s)
	wr.put("ns", "a", nil)
	w := watch(t, c, WatchOptions{From: wr.put("ns", "b", nil)})
	wr.put("ns", "c", nil)
	read(t, w, 1)
	down.Store(true)
	from := wr.put("ns", "a", map[string]string{"v": "2"})
	wr.put("ns", "d", nil)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if items, err := next(ctx, w); !errors.Is(err, errWebhookDown) {
		t.Fatalf("the watcher got %v, %v; want %v", items, err, errWebhookDown)
	}
	if err := c.WaitReady(ctx); !errors.Is(err, errWebhookDown) {
		t.Errorf("WaitReady while failing: %v, want %v", err, errWebhookDown)
	}
	if _, err := c.Watch(ctx, WatchOptions{From: from}); !errors.Is(err, errWebhookDown) {
		t.Errorf("Watch while failing: %v, want %v", err, errWebhookDown)
	}

	down.Store(false)
	if err := c.WaitFresh(ctx, wr.history[len(wr.history)-1].Revision); err != nil {
		t.Fatalf("the cache did not recover: %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Errorf("WaitReady once recovered: %v", err)
	}
	if objs, _ := c.List(Filter{}); len(objs) != 4 {
		t.Errorf("the cache lists %d objects, want 4", len(objs))
	}
	validateFrom(t, c, watch, wr.history, from-1)
}

// TestUnconvertibleEndsReplay: a watcher replaying from the store's
// history ends with the error of a value that does not convert there.
func TestUnconvertibleEndsReplay(t *testing.T) {
	s := memory.New()
	defer s.Close()
	var down atomic.Bool
	c := refusingCache(t, s, Config{RingMaxEvents: 1, RingMinEvents: 1}, &down, "")
	wr := newWriter(t, s)
	from := wr.put("ns", "a", nil)
	wr.put("ns", "b", nil)
	waitRev(t, c, wr.put("ns", "c", nil)) // the ring holds c's event only
	down.Store(true)
	w := watch(t, c, WatchOptions{From: from})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if items, err := next(ctx, w); !errors.Is(err, errWebhookDown) {
		t.Errorf("the replaying watcher got %v, %v; want %v", items, err, errWebhookDown)
	}
}

// TestUnconvertibleDeletedRelists: a value that does not convert and is
// then deleted stops the cache only until it lists again
// (UnconvertibleRelist): resuming the watch would meet it for ever.
func TestUnconvertibleDeletedRelists(t *testing.T) {
	s := memory.New()
	defer s.Close()
	var down atomic.Bool
	down.Store(true)
	c := refusingCache(t, s, Config{UnconvertibleRelist: time.Nanosecond}, &down, "ns/bad")
	wr := newWriter(t, s)
	wr.put("ns", "a", nil)
	wr.put("ns", "bad", nil)
	rev := wr.del("ns", "bad")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.WaitFresh(ctx, rev); err != nil {
		t.Fatalf("the cache never got past the deleted value: %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Errorf("WaitReady: %v", err)
	}
	if objs, _ := c.List(Filter{}); len(objs) != 1 || objs[0].Key != prefix+"ns/a" {
		t.Errorf("the cache lists %d objects, want a alone", len(objs))
	}
}
