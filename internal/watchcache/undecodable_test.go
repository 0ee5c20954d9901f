package watchcache

import (
	"context"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestUndecodableValuesSkipped: values the codec cannot decode (an older
// version's, a bug's) are skipped by the cache's list, its dispatch and its
// replay from the store's history, once counted each; a value turning
// undecodable is a deletion to watchers; every watcher, from every
// revision, sees the rest. Before, the first such value stopped the cache.
func TestUndecodableValuesSkipped(t *testing.T) { watchModes(t, testUndecodableValuesSkipped) }

func testUndecodableValuesSkipped(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	s := memory.New()
	defer s.Close()
	ctx := context.Background()
	wr := newWriter(t, s)
	raw := func(name string, value string) int64 {
		t.Helper()
		key := prefix + "ns/" + name
		kv, err := s.Get(ctx, key)
		var rev int64
		if err == nil {
			rev, err = s.Update(ctx, key, kv.ModRevision, []byte(value))
		} else {
			rev, err = s.Create(ctx, key, []byte(value))
		}
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	raw("listed-bad", `{"metadata":`) // there before the cache's list
	var obs countingObserver
	c := newCache(t, s, Config{RingMaxEvents: 3, RingMinEvents: 1, Observer: &obs})
	wr.put("ns", "a", nil)
	raw("bad", `[1]`)
	wr.put("ns", "b", nil)
	rev := raw("a", `{`) // a turns undecodable: deleted, to watchers
	wr.history = append(wr.history, storagetest.Record{Type: api.Deleted, Key: "ns/a", Revision: rev})
	if _, _, err := s.Delete(ctx, prefix+"ns/bad", 0); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // the ring keeps 3: older positions replay from the store
		wr.put("ns", fmt.Sprint("c", i), nil)
	}
	if err := c.WaitFresh(t.Context(), wr.history[len(wr.history)-1].Revision); err != nil {
		t.Fatal(err)
	}
	if objs, _ := c.List(Filter{}); len(objs) != 7 {
		t.Errorf("the cache lists %d objects, want 7 (b, c0..c5)", len(objs))
	}
	for from := int64(1); from <= wr.history[len(wr.history)-1].Revision; from++ {
		validateFrom(t, c, watch, wr.history, from)
	}
	if n := obs.snapshot().undecodable; n != 3 {
		t.Errorf("%d undecodable values counted, want 3 (listed-bad, bad, a)", n)
	}
}

// TestBadKeysBounded: the cache remembers at most maxBadKeys undecodable
// keys it reported; past that it forgets them, and a key may be reported
// again.
func TestBadKeysBounded(t *testing.T) {
	s := memory.New()
	defer s.Close()
	var obs countingObserver
	c := newCache(t, s, Config{Observer: &obs})
	bad := func(i int) {
		_, _ = c.object(context.Background(), storage.KV{Key: fmt.Sprint(prefix, "ns/k", i), Value: []byte("{"), ModRevision: 1})
	}
	for i := range maxBadKeys {
		bad(i)
	}
	bad(0) // remembered: not reported again
	if n := obs.snapshot().undecodable; n != maxBadKeys || len(c.bad) != maxBadKeys {
		t.Fatalf("%d reported, %d remembered; want %d of each", n, len(c.bad), maxBadKeys)
	}
	bad(maxBadKeys)
	bad(0) // forgotten: reported again
	if n := obs.snapshot().undecodable; n != maxBadKeys+2 || len(c.bad) != 2 {
		t.Errorf("%d reported, %d remembered; want %d and 2", n, len(c.bad), maxBadKeys+2)
	}
}
