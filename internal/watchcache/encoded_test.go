package watchcache

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestAltEncodedOncePerEvent checks that the watchers of an event share
// its Alt: a second encoding made by one of them serves all, once.
func TestAltEncodedOncePerEvent(t *testing.T) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{})
	wr := newWriter(t, s)
	ws := []*Watcher{watch(t, c, WatchOptions{}), watch(t, c, WatchOptions{}), watch(t, c, WatchOptions{})}
	wr.put("ns", "a", nil)
	wr.del("ns", "a")
	var encodes atomic.Int32
	encode := func() ([]byte, error) { encodes.Add(1); return []byte("alt"), nil }
	var got [][]Item
	for _, w := range ws {
		_, items := read(t, w, 2)
		got = append(got, items)
	}
	var wg sync.WaitGroup
	for _, items := range got {
		for _, it := range items {
			wg.Go(func() {
				if b, err := it.Alt.Get(encode); string(b) != "alt" || err != nil {
					t.Errorf("Alt.Get: %q, %v", b, err)
				}
			})
		}
	}
	wg.Wait()
	if n := encodes.Load(); n != 2 {
		t.Errorf("%d encodings for 2 events seen by 3 watchers, want 2", n)
	}
	if got[0][0].Alt != got[1][0].Alt || got[0][1].Alt != got[2][1].Alt || got[0][0].Alt == got[0][1].Alt {
		t.Errorf("watchers of the same event do not share its Alt, or events share one")
	}
}

// TestWatchDecodesOncePerEvent checks that, with objects no longer keeping
// their decoded tree, watchers still cost one decode per event at most:
// none for an ADDED or MODIFIED event (its JSON is made from the stored
// bytes and its second encoding, once, from that JSON), one for a DELETED
// event's content, however many watchers see it.
func TestWatchDecodesOncePerEvent(t *testing.T) {
	s := memory.New()
	defer s.Close()
	var decodes atomic.Int32
	codec := testCodec
	codec.Decode = func(kv storage.KV) (api.Object, error) {
		decodes.Add(1)
		return testCodec.Decode(kv)
	}
	codec.Encode = func(kv storage.KV) ([]byte, bool) {
		obj, err := testCodec.Decode(kv) // the server splices the revision in; the count is of the cache's decodes
		if err != nil {
			return nil, false
		}
		b, err := api.MarshalObject(obj)
		return b, err == nil
	}
	c := New(Config{Storage: s, Prefix: prefix, Codec: codec})
	t.Cleanup(c.Close)
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	wr := newWriter(t, s)
	const watchers = 5
	var ws []*Watcher
	for range watchers {
		ws = append(ws, watch(t, c, WatchOptions{}))
	}
	wr.put("ns", "a", nil)
	wr.put("ns", "a", map[string]string{"l": "v"})
	wr.del("ns", "a")
	var encodes atomic.Int32
	for _, w := range ws {
		_, items := read(t, w, 3)
		for _, it := range items {
			encode := func() ([]byte, error) { encodes.Add(1); return append([]byte("pb:"), it.Object...), nil }
			if _, err := it.Alt.Get(encode); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d, e := decodes.Load(), encodes.Load(); d != 1 || e != 3 {
		t.Errorf("3 events seen by %d watchers: %d decodes, %d second encodings; want 1 (the DELETED content) and 3", watchers, d, e)
	}
}
