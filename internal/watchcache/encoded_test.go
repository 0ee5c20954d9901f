package watchcache

import (
	"sync"
	"sync/atomic"
	"testing"

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
