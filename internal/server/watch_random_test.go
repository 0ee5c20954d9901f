package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
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
//
// Other watchers, opened while the writes go on, start from their initial
// events (resourceVersion 0 or unset, sendInitialEvents), or resume, with
// and without a label selector, of a namespace or of all, most without
// bookmarks (a bookmark's tick serves a watch, hiding a lost wake-up): the
// writes come in phases, and at the end of each, with nothing more
// written, every such watcher's stream must bring it to the store's state
// for what it watches, before a deadline. An event that reached the cache
// and that no send takes (a lost wake-up) leaves a watcher short of it.
//
// It runs with the machine's processors, and with four: three senders,
// whose tasks of consecutive batches run at once (a watch's lane slot
// claimed by two of them, taken out and handed over).
func TestWatchRandomized(t *testing.T) {
	for _, procs := range []int{runtime.GOMAXPROCS(0), 4} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			testWatchRandomized(t)
		})
	}
}

func testWatchRandomized(t *testing.T) {
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

	const writers, phases, opsPerPhase, watchers = 4, 30, 5, 8
	var end atomic.Int64 // set once the writers are done
	results := make([][]storagetest.Record, watchers)
	scopes := make([]string, watchers)
	var rg sync.WaitGroup
	for i := range watchers {
		scopes[i] = []string{"", "a", "b"}[i%3]
		rg.Go(func() { results[i] = resumingWatch(t, ts, rand.New(rand.NewPCG(uint64(i), 2)), scopes[i], start, &end) })
	}
	sctx, stopStateWatches := context.WithCancel(t.Context())
	var sg sync.WaitGroup
	defer sg.Wait()
	defer stopStateWatches() // also when the test fails
	var sws []*stateWatch
	for i, mode := range []watchMode{initialRV0, initialUnset, sendInitial, sendInitial, resumeFrom} {
		for j, scope := range []string{"", "a", "b"} {
			for k, sel := range []string{"", "parity=even"} {
				sw := newStateWatch(mode, scope, sel, mode == sendInitial && (j+k)%2 == 0, start)
				sws = append(sws, sw)
				r := rand.New(rand.NewPCG(uint64(100*i+10*j+k), 3))
				sg.Go(func() { sw.run(sctx, t, ts, r) })
			}
		}
	}
	for phase := range phases {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() { randomWrites(t, ts, rand.New(rand.NewPCG(uint64(w), uint64(phase+1))), opsPerPhase) })
		}
		wg.Wait()
		state, deadline := storeState(t, store), time.Now().Add(10*time.Second)
		for _, sw := range sws {
			sw.await(t, state, deadline)
		}
		if t.Failed() {
			break
		}
	}
	stopStateWatches()
	sg.Wait()
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
			req, _ = http.NewRequest("POST", path, strings.NewReader(fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"parity":%q}},"data":{"v":"%d"}}`, name, parity(r), r.Int())))
			req.Header.Set("Content-Type", mediaJSON)
		case 1:
			req, _ = http.NewRequest("PATCH", path+"/"+name, strings.NewReader(fmt.Sprintf(`{"metadata":{"labels":{"parity":%q}},"data":{"v":"%d"}}`, parity(r), r.Int())))
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
// It watches every key, as revisions other than configmaps' (the
// controller Lease's renewals) may end the range.
func storeHistory(t *testing.T, s storage.Interface, from, to int64) storagetest.History {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const prefix = "/registry/core/configmaps/"
	w, err := s.Watch(ctx, "/registry/", from)
	if err != nil {
		t.Fatal(err)
	}
	var h storagetest.History
	for seen := from; seen < to; {
		select {
		case batch, ok := <-w.Events():
			if !ok {
				t.Fatalf("history watch ended: %v", w.Err())
			}
			for _, e := range batch {
				seen = max(seen, e.Revision)
				if !strings.HasPrefix(e.KV.Key, prefix) || e.Revision > to {
					continue
				}
				typ := api.Modified
				switch {
				case e.Type == storage.EventDelete:
					typ = api.Deleted
				case e.IsCreate():
					typ = api.Added
				}
				h = append(h, storagetest.Record{Type: typ, Key: strings.TrimPrefix(e.KV.Key, prefix), Revision: e.Revision})
			}
		case <-ctx.Done():
			t.Fatalf("history stops at %d, want %d", seen, to)
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

// parity is a random value of the label that selector watches select on:
// updates move objects in and out of their view.
func parity(r *rand.Rand) string { return []string{"even", "odd"}[r.IntN(2)] }

// watchMode is how a stateWatch starts each of its connections.
type watchMode string

const (
	initialRV0   watchMode = "resourceVersion=0"
	initialUnset watchMode = "resourceVersion unset"
	sendInitial  watchMode = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
	resumeFrom   watchMode = "resourceVersion=last"
)

// stateWatch watches configmaps as an informer would, keeping the state
// (key to resourceVersion) its stream implies: each connection of an
// initial mode starts the state again from its initial events; one that
// resumes goes on from the last resourceVersion seen. It disconnects after
// a random number of events. Every event must fit the state: ADDED for an
// object it does not hold, MODIFIED and DELETED for one it holds at an
// older resourceVersion; after the initial events, revisions only grow.
type stateWatch struct {
	mode      watchMode
	ns, sel   string
	bookmarks bool

	mu sync.Mutex
	// guarded by mu:
	state   map[string]int64
	last    int64         // resumeFrom: the last resourceVersion seen
	changed chan struct{} // closed and replaced at each change of state
	failed  error
}

func newStateWatch(mode watchMode, ns, sel string, bookmarks bool, start int64) *stateWatch {
	return &stateWatch{mode: mode, ns: ns, sel: sel, bookmarks: bookmarks, state: map[string]int64{}, last: start, changed: make(chan struct{})}
}

func (sw *stateWatch) String() string {
	return fmt.Sprintf("watch of %q labelSelector %q from %s bookmarks %v", sw.ns, sw.sel, sw.mode, sw.bookmarks)
}

// url is the path and query of sw's next connection.
func (sw *stateWatch) url() string {
	path := "/api/v1/configmaps"
	if sw.ns != "" {
		path = "/api/v1/namespaces/" + sw.ns + "/configmaps"
	}
	q := "?watch=true"
	switch sw.mode {
	case initialRV0:
		q += "&resourceVersion=0"
	case sendInitial:
		q += "&" + string(sendInitial)
	case resumeFrom:
		sw.mu.Lock()
		q += fmt.Sprintf("&resourceVersion=%d", sw.last)
		sw.mu.Unlock()
	}
	if sw.bookmarks {
		q += "&allowWatchBookmarks=true"
	}
	if sw.sel != "" {
		q += "&labelSelector=" + sw.sel
	}
	return path + q
}

// run connects again and again until ctx ends.
func (sw *stateWatch) run(ctx context.Context, t *testing.T, ts *httptest.Server, r *rand.Rand) {
	for ctx.Err() == nil {
		if err := sw.connection(ctx, ts, r.IntN(40)+1); err != nil && ctx.Err() == nil {
			sw.fail(err)
			return
		}
	}
}

func (sw *stateWatch) fail(err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.failed == nil {
		sw.failed = err
		close(sw.changed)
		sw.changed = make(chan struct{})
	}
}

// connection reads n events (bookmarks included) from one watch.
func (sw *stateWatch) connection(ctx context.Context, ts *httptest.Server, n int) error {
	url := sw.url()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+url, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	initial := sw.mode != resumeFrom // the state starts again; revisions grow only after it
	if initial {
		sw.apply(func(map[string]int64) error { clear(sw.state); return nil })
	}
	var rev int64 // the last revision of an event after the initial ones
	sc := bufio.NewScanner(resp.Body)
	for seen := 0; seen < n && sc.Scan(); seen++ {
		var ev api.WatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return err
		}
		obj, err := api.ParseObject(ev.Object)
		if err != nil {
			return err
		}
		var v int64
		fmt.Sscan(obj.ResourceVersion(), &v)
		if ev.Type == api.Error {
			return fmt.Errorf("%s: ERROR event: %v", url, obj["message"])
		}
		if ev.Type == api.Bookmark {
			if obj.Annotations()[api.InitialEventsEndAnnotation] == "true" {
				initial, rev = false, v
			}
			continue
		}
		if !initial && sw.mode != resumeFrom && v <= rev {
			return fmt.Errorf("%s: %s %s/%s at %d after %d", url, ev.Type, obj.Namespace(), obj.Name(), v, rev)
		}
		rev = v
		key := obj.Namespace() + "/" + obj.Name()
		if err := sw.apply(func(state map[string]int64) error {
			had, ok := state[key]
			switch {
			case ev.Type == api.Added && ok, ev.Type != api.Added && (!ok || had >= v):
				return fmt.Errorf("%s: %s %s at %d, holding it at %d (%v)", url, ev.Type, key, v, had, ok)
			case sw.mode == resumeFrom && v <= sw.last:
				return fmt.Errorf("%s: %s %s at %d after %d", url, ev.Type, key, v, sw.last)
			case ev.Type == api.Deleted:
				delete(state, key)
			default:
				state[key] = v
			}
			if sw.mode == resumeFrom {
				sw.last = v
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// apply changes the state under the lock, and tells await.
func (sw *stateWatch) apply(f func(map[string]int64) error) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	err := f(sw.state)
	close(sw.changed)
	sw.changed = make(chan struct{})
	return err
}

// await waits until sw holds what it watches of state (every configmap:
// key to resourceVersion and labels), failing the test at the deadline.
func (sw *stateWatch) await(t *testing.T, state map[string]storedCM, deadline time.Time) {
	t.Helper()
	want := map[string]int64{}
	for key, o := range state {
		if (sw.ns == "" || strings.HasPrefix(key, sw.ns+"/")) && (sw.sel == "" || "parity="+o.labels["parity"] == sw.sel) {
			want[key] = o.rev
		}
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		sw.mu.Lock()
		got, changed, failed := maps.Clone(sw.state), sw.changed, sw.failed
		sw.mu.Unlock()
		switch {
		case failed != nil:
			t.Errorf("%v: %v", sw, failed)
			return
		case maps.Equal(got, want):
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Errorf("%v: at the deadline, with nothing written since, holds %v, want %v", sw, got, want)
			return
		}
	}
}

// storedCM is what a stateWatch's filter and state see of a configmap.
type storedCM struct {
	rev    int64
	labels map[string]string
}

// storeState reads every configmap from the store.
func storeState(t *testing.T, s storage.Interface) map[string]storedCM {
	t.Helper()
	out := map[string]storedCM{}
	opts := storage.ListOptions{}
	for {
		page, err := s.List(t.Context(), "/registry/core/configmaps/", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range page.KVs {
			obj, err := api.ParseObject(kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(kv.Key, "/registry/core/configmaps/")] = storedCM{rev: kv.ModRevision, labels: obj.Labels()}
		}
		if page.Continue == "" {
			return out
		}
		opts.Continue = page.Continue
	}
}
