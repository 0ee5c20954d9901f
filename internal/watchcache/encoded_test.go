package watchcache

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/client/api"
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
	codec.Decode = func(ctx context.Context, kv storage.KV) (api.Object, error) {
		decodes.Add(1)
		return testCodec.Decode(ctx, kv)
	}
	codec.Encode = func(kv storage.KV) ([]byte, bool) {
		obj, err := testCodec.Decode(context.Background(), kv) // the server splices the revision in; the count is of the cache's decodes
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

// TestEncodedForms checks that an item's further encodings are shared like
// its Alt and charged to its account until released, and that a form asked
// for after the release is made but charged to nothing.
func TestEncodedForms(t *testing.T) {
	var acct altAccount
	e := Encoded{acct: &acct}
	var encodes atomic.Int32
	encode := func(s string) func() ([]byte, error) {
		return func() ([]byte, error) { encodes.Add(1); return []byte(s), nil }
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if b, _ := e.Form(1).Get(encode("meta")); string(b) != "meta" {
				t.Errorf("Form(1): %q, want meta", b)
			}
		})
	}
	wg.Wait()
	if n := encodes.Load(); n != 1 {
		t.Errorf("%d encodings of one form by 4 callers, want 1", n)
	}
	if e.Form(0) == e.Form(1) || e.Form(1) != e.Form(1) {
		t.Errorf("forms are not one memo each")
	}
	if _, err := e.Get(encode("full")); err != nil {
		t.Fatal(err)
	}
	if got := acct.bytes.Load(); got != 8 || e.charged() != 8 {
		t.Errorf("charged %d (account %d), want 8: the encoding and its form", e.charged(), got)
	}
	if got := e.release(); got != 8 {
		t.Errorf("release gave back %d, want 8", got)
	}
	b, _ := e.Form(0).Get(encode("late"))
	if string(b) != "late" || e.charged() != 0 || acct.bytes.Load() != 8 {
		t.Errorf("a form after the release: %q, charged %d, account %d; want late, 0, 8", b, e.charged(), acct.bytes.Load())
	}
}
