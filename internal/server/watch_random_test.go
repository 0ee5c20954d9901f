package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestWatchRandomized runs writers and watchers that disconnect at random
// and resume from the last resourceVersion they saw. Each watcher's whole
// stream, across reconnects, must be exactly the store's history for what
// it watches: no gap, no repeat, in order. Small watcher buffers and a
// small ring make watchers park and replay from the store.
func TestWatchRandomized(t *testing.T) {
	store, err := bolt.Open(t.TempDir(), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, err := New(t.Context(), Config{Storage: store, BookmarkInterval: 20 * time.Millisecond,
		WatchCache: watchcache.Config{WatcherBufferBytes: 1024, RingMaxEvents: 64, RingMinEvents: 16}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer func() { s.Close(); ts.Close() }()
	for _, ns := range []string{"a", "b"} {
		call(t, ts, "POST", "/api/v1/namespaces", mediaJSON, `{"metadata":{"name":"`+ns+`"}}`)
	}
	start, _ := store.CurrentRevision(context.Background())

	const writers, opsPerWriter, watchers = 4, 150, 8
	var end atomic.Int64 // set once the writers are done
	results := make([][]storagetest.Record, watchers)
	scopes := make([]string, watchers)
	var rg sync.WaitGroup
	for i := range watchers {
		scopes[i] = []string{"", "a", "b"}[i%3]
		rg.Go(func() { results[i] = resumingWatch(t, ts, rand.New(rand.NewPCG(uint64(i), 2)), scopes[i], start, &end) })
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { randomWrites(t, ts, rand.New(rand.NewPCG(uint64(w), 1)), opsPerWriter) })
	}
	wg.Wait()
	last, _ := store.CurrentRevision(context.Background())
	end.Store(last)
	rg.Wait()
	history := storeHistory(t, store, start, last)
	for i, got := range results {
		want := history
		if scopes[i] != "" {
			want = filterNamespace(history, scopes[i])
		}
		if err := storagetest.ValidateWatch(want, start, got, true); err != nil {
			t.Errorf("watcher %d (namespace %q): %v", i, scopes[i], err)
		}
	}
}

// randomWrites creates, updates and deletes configmaps in namespaces a and
// b; conflicts and misses (409, 404) are part of the randomness.
func randomWrites(t *testing.T, ts *httptest.Server, r *rand.Rand, ops int) {
	for range ops {
		ns := []string{"a", "b"}[r.IntN(2)]
		name := fmt.Sprintf("k%d", r.IntN(10))
		path := ts.URL + "/api/v1/namespaces/" + ns + "/configmaps"
		var req *http.Request
		switch r.IntN(3) {
		case 0:
			req, _ = http.NewRequest("POST", path, strings.NewReader(fmt.Sprintf(`{"metadata":{"name":%q},"data":{"v":"%d"}}`, name, r.Int())))
			req.Header.Set("Content-Type", mediaJSON)
		case 1:
			req, _ = http.NewRequest("PATCH", path+"/"+name, strings.NewReader(fmt.Sprintf(`{"data":{"v":"%d"}}`, r.Int())))
			req.Header.Set("Content-Type", "application/merge-patch+json")
		default:
			req, _ = http.NewRequest("DELETE", path+"/"+name, nil)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Errorf("write: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode)
		}
	}
}

// storeHistory reads the configmap events in (from, to] from the store.
func storeHistory(t *testing.T, s storage.Interface, from, to int64) storagetest.History {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := s.Watch(ctx, "/registry/core/configmaps/", from)
	if err != nil {
		t.Fatal(err)
	}
	var h storagetest.History
	for len(h) == 0 || h[len(h)-1].Revision < to {
		select {
		case batch, ok := <-w.Events():
			if !ok {
				t.Fatalf("history watch ended: %v", w.Err())
			}
			for _, e := range batch {
				typ := api.Modified
				switch {
				case e.Type == storage.EventDelete:
					typ = api.Deleted
				case e.IsCreate():
					typ = api.Added
				}
				h = append(h, storagetest.Record{Type: typ, Key: strings.TrimPrefix(e.KV.Key, "/registry/core/configmaps/"), Revision: e.Revision})
			}
		case <-ctx.Done():
			if len(h) == 0 {
				return h // nothing was written
			}
			t.Fatalf("history stops at %d, want %d", h[len(h)-1].Revision, to)
		}
	}
	return h
}

func filterNamespace(h storagetest.History, ns string) storagetest.History {
	var out storagetest.History
	for _, r := range h {
		if strings.HasPrefix(r.Key, ns+"/") {
			out = append(out, r)
		}
	}
	return out
}

// resumingWatch watches from start until it has seen the revision end
// holds once set, dropping the connection after a random number of events
// and resuming from the last resourceVersion seen (events and bookmarks).
func resumingWatch(t *testing.T, ts *httptest.Server, r *rand.Rand, ns string, start int64, end *atomic.Int64) []storagetest.Record {
	path := "/api/v1/configmaps"
	if ns != "" {
		path = "/api/v1/namespaces/" + ns + "/configmaps"
	}
	var got []storagetest.Record
	last := start
	deadline := time.Now().Add(60 * time.Second)
	for (end.Load() == 0 || last < end.Load()) && time.Now().Before(deadline) {
		recs, rv, err := watchSome(t, ts, fmt.Sprintf("%s?watch=true&allowWatchBookmarks=true&resourceVersion=%d", path, last), r.IntN(40)+1)
		if err != nil {
			t.Errorf("watch from %d: %v", last, err)
			return got
		}
		got = append(got, recs...)
		last = max(last, rv)
	}
	if last < end.Load() {
		t.Errorf("watcher of %q reached %d, not %d, before the deadline", ns, last, end.Load())
	}
	return got
}

// watchSome reads n events (bookmarks included) from one watch and returns
// the others with the last resourceVersion seen.
func watchSome(t *testing.T, ts *httptest.Server, url string, n int) ([]storagetest.Record, int64, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+url, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var recs []storagetest.Record
	var last int64
	for seen := 0; seen < n && sc.Scan(); seen++ {
		var ev api.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return recs, last, err
		}
		obj, err := api.ParseObject(ev.Object)
		if err != nil {
			return recs, last, err
		}
		if ev.Type == api.Error {
			return recs, last, fmt.Errorf("ERROR event: %v", obj["message"])
		}
		fmt.Sscan(obj.ResourceVersion(), &last)
		if ev.Type != api.Bookmark {
			recs = append(recs, storagetest.Record{Type: ev.Type, Key: obj.Namespace() + "/" + obj.Name(), Revision: last})
		}
	}
	return recs, last, nil
}
