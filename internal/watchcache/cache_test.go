package watchcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

const prefix = "/registry/core/configmaps/"

// testCodec decodes stored JSON objects as the server does.
var testCodec = Codec{
	Decode: func(_ context.Context, kv storage.KV) (api.Object, error) {
		obj, err := api.ParseObject(kv.Value)
		if err != nil {
			return nil, err
		}
		obj.SetMeta("resourceVersion", strconv.FormatInt(kv.ModRevision, 10))
		return obj, nil
	},
	Fields: map[string][]string{"metadata.name": {"metadata", "name"}, "metadata.namespace": {"metadata", "namespace"}},
}

func newCache(t *testing.T, s storage.Interface, cfg Config) *Cache {
	t.Helper()
	return newCacheAt(t, s, prefix, cfg)
}

// newCacheAt is newCache for the objects under pfx.
func newCacheAt(t *testing.T, s storage.Interface, pfx string, cfg Config) *Cache {
	t.Helper()
	cfg.Storage, cfg.Prefix, cfg.Codec = s, pfx, testCodec
	c := New(cfg)
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// writer makes writes and records them as the history the validators use.
type writer struct {
	t       *testing.T
	s       storage.Interface
	history storagetest.History
	revs    map[string]int64
}

func newWriter(t *testing.T, s storage.Interface) *writer {
	return &writer{t: t, s: s, revs: map[string]int64{}}
}

func cm(ns, name string, labels map[string]string) []byte {
	obj := api.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}}
	if labels != nil {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		obj.SetMeta("labels", l)
	}
	b, _ := api.MarshalObject(obj)
	return b
}

// put creates or updates ns/name and records the event type a watcher
// without selectors sees.
func (w *writer) put(ns, name string, labels map[string]string) int64 {
	w.t.Helper()
	key := prefix + ns + "/" + name
	var rev int64
	var err error
	typ := api.Modified
	if _, ok := w.revs[key]; ok {
		rev, err = w.s.Update(context.Background(), key, 0, cm(ns, name, labels))
	} else {
		typ = api.Added
		rev, err = w.s.Create(context.Background(), key, cm(ns, name, labels))
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.revs[key] = rev
	w.history = append(w.history, storagetest.Record{Type: typ, Key: ns + "/" + name, Revision: rev})
	return rev
}

func (w *writer) del(ns, name string) int64 {
	w.t.Helper()
	key := prefix + ns + "/" + name
	_, rev, err := w.s.Delete(context.Background(), key, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	delete(w.revs, key)
	w.history = append(w.history, storagetest.Record{Type: api.Deleted, Key: ns + "/" + name, Revision: rev})
	return rev
}

// read collects n items from w (bookmarks skipped) as Records.
func read(t *testing.T, w *Watcher, n int) ([]storagetest.Record, []Item) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var recs []storagetest.Record
	var items []Item
	for len(recs) < n {
		got, err := next(ctx, w)
		if err != nil {
			t.Fatalf("after %d of %d items: %v", len(recs), n, err)
		}
		for _, it := range got {
			items = append(items, it)
			if it.Type != api.Bookmark {
				recs = append(recs, record(t, it))
			}
		}
	}
	if len(recs) > n {
		t.Fatalf("wanted %d items, got %d: %v", n, len(recs), recs)
	}
	return recs, items
}

// record is what the validators compare of an object's item.
func record(t *testing.T, it Item) storagetest.Record {
	t.Helper()
	obj, err := api.ParseObject(it.Object)
	if err != nil {
		t.Fatalf("item %v: %v", it.Type, err)
	}
	if obj.ResourceVersion() != strconv.FormatInt(it.Rev, 10) {
		t.Fatalf("item at %d carries resourceVersion %s", it.Rev, obj.ResourceVersion())
	}
	return storagetest.Record{Type: it.Type, Key: obj.Namespace() + "/" + obj.Name(), Revision: it.Rev}
}

// next is Next, for a polled watcher too: it waits for its chanWaker.
func next(ctx context.Context, w *Watcher) ([]Item, error) {
	wk, ok := w.waker.(chanWaker)
	if !ok {
		return w.Next(ctx, nil)
	}
	for {
		if items, err := w.Pending(ctx, nil); err != nil || len(items) > 0 {
			return items, err
		}
		select {
		case <-wk:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// chanWaker is a polled watcher's Waker: it signals the test reading it.
type chanWaker chan struct{}

func (c chanWaker) Wake() {
	select {
	case c <- struct{}{}:
	default:
	}
}

// woken reports whether c has a wake-up, taking it.
func (c chanWaker) woken() bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// watchModes runs a test with watchers fed by the dispatcher and with
// polled watchers (WatchOptions.Waker), through the watch function given.
func watchModes(t *testing.T, test func(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher)) {
	t.Run("fed", func(t *testing.T) { test(t, watch) })
	t.Run("polled", func(t *testing.T) { test(t, watchPolled) })
}

// watchPolled starts a polled watcher.
func watchPolled(t *testing.T, c *Cache, opts WatchOptions) *Watcher {
	t.Helper()
	opts.Waker = make(chanWaker, 1)
	return watch(t, c, opts)
}

func watch(t *testing.T, c *Cache, opts WatchOptions) *Watcher {
	t.Helper()
	w, err := c.Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchFromEveryRevision(t *testing.T) { watchModes(t, testWatchFromEveryRevision) }

func testWatchFromEveryRevision(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{})
	wr := newWriter(t, s)
	for i := range 20 {
		wr.put("ns", fmt.Sprint("a", i%4), map[string]string{"i": fmt.Sprint(i)})
		if i%5 == 4 {
			wr.del("ns", fmt.Sprint("a", i%4))
		}
	}
	for _, r := range append([]storagetest.Record{{Revision: 0}}, wr.history...) {
		validateFrom(t, c, watch, wr.history, r.Revision)
	}
}

// validateFrom checks that a watcher from revision from gets history's
// events after it.
func validateFrom(t *testing.T, c *Cache, watch func(*testing.T, *Cache, WatchOptions) *Watcher, history storagetest.History, from int64) {
	t.Helper()
	w := watch(t, c, WatchOptions{From: from})
	defer w.Stop()
	got, _ := read(t, w, len(history.After(from)))
	if err := storagetest.ValidateWatch(history, from, got, true); err != nil {
		t.Errorf("from %d: %v", from, err)
	}
}

func TestSlowWatcherIsParkedNotDropped(t *testing.T) {
	watchModes(t, testSlowWatcherIsParkedNotDropped)
}

func testSlowWatcherIsParkedNotDropped(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	s := memory.New()
	defer s.Close()
	obs := &countingObserver{}
	c := newCache(t, s, Config{WatcherBufferBytes: 2048, RingMaxEvents: 50, RingMinEvents: 10, Observer: obs})
	wr := newWriter(t, s)
	slow := watch(t, c, WatchOptions{InitialEvents: true}) // level with the cache from the start
	fast := watch(t, c, WatchOptions{From: 0})
	done := make(chan []storagetest.Record, 1)
	go func() {
		defer close(done) // also when read fails the test (Goexit)
		recs, _ := read(t, fast, 500)
		done <- recs
	}()
	for i := range 500 {
		wr.put("ns", fmt.Sprint("k", i), nil)
	}
	recs, ok := <-done
	if !ok {
		t.FailNow()
	}
	if err := storagetest.ValidateWatch(wr.history, 0, recs, true); err != nil {
		t.Fatalf("fast watcher: %v", err)
	}
	// slow read nothing while 500 events passed through a ring of 50 and a
	// buffer of 2 KiB: it is replayed from the ring and the store's history.
	got, _ := read(t, slow, 500)
	if err := storagetest.ValidateWatch(wr.history, 0, got, true); err != nil {
		t.Fatalf("slow watcher: %v", err)
	}
	// One more look at each queue finds it level with the cache (the last
	// replay may have reached the end without knowing it).
	for _, w := range []*Watcher{slow, fast} {
		if _, err := w.Pending(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	o := obs.snapshot()
	if o.parked == 0 || o.caughtUp != o.parked || o.received != 500 || o.objects != 500 || o.rev != c.Revision() || o.watchers != 2 {
		t.Errorf("observer saw %+v", o)
	}
}

// writeOthers creates n objects under another prefix than the cache's and
// returns the last one's revision.
func writeOthers(t *testing.T, s storage.Interface, n int) int64 {
	t.Helper()
	var rev int64
	for i := range n {
		var err error
		if rev, err = s.Create(t.Context(), fmt.Sprintf("/other/k%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	return rev
}

// TestReplayWithoutEventsOfItsPrefix: a watch from a revision older than
// the ring, where the store's history holds only other prefixes' writes
// up to the ring's start, is level with the cache at once; its replay
// waited for an event of its prefix before (a watch from
// resourceVersion=1 on a fresh server hung, deaf to its end).
func TestReplayWithoutEventsOfItsPrefix(t *testing.T) {
	s := memory.New()
	defer s.Close()
	rev := writeOthers(t, s, 5)
	c := newCache(t, s, Config{})
	w := watch(t, c, WatchOptions{From: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for i := 0; w.CatchingUp(); i++ { // the replay, then the ring
		items, err := w.Pending(ctx, nil)
		if err != nil || len(items) != 0 || ctx.Err() != nil || i == 3 {
			t.Fatalf("Pending %d: %d items, %v, %v; want level with the cache, nothing pending", i, len(items), err, ctx.Err())
		}
	}
	wr := newWriter(t, s)
	wr.put("ns", "a", nil)
	got, _ := read(t, w, 1)
	if err := storagetest.ValidateWatch(wr.history, rev, got, true); err != nil {
		t.Fatal(err)
	}
}

// progressStore is a store whose watches from before ring send
// nothing until asked for progress, then every event of events after
// their start at once, and report progress up to ring.
type progressStore struct {
	storage.Interface
	ring   int64
	events []storage.Event
}

func (s *progressStore) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	if from >= s.ring {
		return s.Interface.Watch(ctx, prefix, from)
	}
	w := &scriptedWatch{out: make(chan []storage.Event, len(s.events)), upTo: s.ring}
	for _, e := range s.events {
		if e.Revision > from {
			w.batches = append(w.batches, []storage.Event{e})
		}
	}
	w.progress.Store(from)
	return w, nil
}

type scriptedWatch struct {
	out      chan []storage.Event
	batches  [][]storage.Event // sent at the first RequestProgress
	upTo     int64             // the progress RequestProgress reports
	progress atomic.Int64
}

func (w *scriptedWatch) Events() <-chan []storage.Event { return w.out }
func (w *scriptedWatch) Err() error                     { return nil }
func (w *scriptedWatch) Progress() int64                { return w.progress.Load() }

func (w *scriptedWatch) RequestProgress(context.Context) error {
	for _, b := range w.batches {
		w.out <- b
	}
	w.batches = nil
	w.progress.Store(w.upTo)
	return nil
}

// TestReplayProgressKeepsTheBudget: a replay from the store's history
// that asks for progress takes the events sent meanwhile only up to the
// watcher's budget, as the replay of the events it receives does, and
// resumes after the last one it took; it took them all, however many.
func TestReplayProgressKeepsTheBudget(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	ring := writeOthers(t, mem, 5)
	s := &progressStore{Interface: mem, ring: ring}
	for rev := int64(2); rev < ring; rev++ {
		name := fmt.Sprintf("h%d", rev)
		s.events = append(s.events, storage.Event{Type: storage.EventPut, Revision: rev,
			KV: storage.KV{Key: prefix + "ns/" + name, Value: cm("ns", name, nil), CreateRevision: rev, ModRevision: rev}})
	}
	c := newCache(t, s, Config{WatcherBufferBytes: 1}) // one object fills a queue
	w := watch(t, c, WatchOptions{From: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var revs []int64
	for i := 0; w.CatchingUp(); i++ {
		items, err := w.Pending(ctx, nil)
		if err != nil || len(items) > 1 || i == 10*len(s.events) {
			t.Fatalf("Pending %d: %d items, %v (replayed %v); want at most the one the budget holds, and the watcher level", i, len(items), err, revs)
		}
		for _, it := range items {
			revs = append(revs, it.Rev)
		}
	}
	if want := []int64{2, 3, 4}; !slices.Equal(revs, want) {
		t.Errorf("replayed revisions %v, want %v", revs, want)
	}
}

func TestTooOldResourceVersionIsGone(t *testing.T) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{RingMaxEvents: 5, RingMinEvents: 1})
	wr := newWriter(t, s)
	for i := range 20 {
		wr.put("ns", fmt.Sprint("k", i), nil)
	}
	if err := s.Compact(context.Background(), wr.history[10].Revision); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFresh(t.Context(), wr.history[19].Revision); err != nil {
		t.Fatal(err)
	}
	w := watch(t, c, WatchOptions{From: wr.history[2].Revision})
	_, err := w.Next(t.Context(), nil)
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Code != http.StatusGone || se.Status.Reason != api.StatusReasonExpired {
		t.Fatalf("watch from a compacted revision: %v, want 410 Expired", err)
	}
}

func TestSelectorTransitions(t *testing.T) { watchModes(t, testSelectorTransitions) }

func testSelectorTransitions(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{})
	wr := newWriter(t, s)
	sel, _ := selector.ParseLabels("app=web")
	w := watch(t, c, WatchOptions{From: 0, Filter: Filter{Labels: sel}})
	in := wr.put("ns", "a", map[string]string{"app": "web"})
	mod := wr.put("ns", "a", map[string]string{"app": "web", "v": "2"})
	out := wr.put("ns", "a", map[string]string{"app": "db"})
	wr.put("ns", "a", map[string]string{"app": "db", "v": "3"}) // invisible
	back := wr.put("ns", "a", map[string]string{"app": "web"})
	got, items := read(t, w, 4)
	want := []storagetest.Record{
		{Type: api.Added, Key: "ns/a", Revision: in},
		{Type: api.Modified, Key: "ns/a", Revision: mod},
		{Type: api.Deleted, Key: "ns/a", Revision: out},
		{Type: api.Added, Key: "ns/a", Revision: back},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("item %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	deleted, _ := api.ParseObject(items[2].Object)
	if deleted.Labels()["app"] != "web" {
		t.Errorf("a DELETED transition carries %v, want the previous content", deleted.Labels())
	}
}

func TestInitialEventsAndBookmark(t *testing.T) {
	s := memory.New()
	defer s.Close()
	wr := newWriter(t, s)
	wr.put("a", "x", nil)
	wr.put("b", "y", nil)
	wr.put("a", "z", nil)
	c := newCache(t, s, Config{})
	w := watch(t, c, WatchOptions{InitialEvents: true, InitialEventsEnd: true, Filter: Filter{Namespace: "a"}})
	got, items := read(t, w, 2)
	if got[0].Key != "a/x" || got[1].Key != "a/z" || got[0].Type != api.Added {
		t.Fatalf("initial events %v", got)
	}
	if len(items) < 3 {
		more, err := w.Next(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, more...)
	}
	if last := items[2]; last.Type != api.Bookmark || !last.InitialEventsEnd || last.Rev != c.Revision() {
		t.Fatalf("after the initial events: %+v, want the initial-events-end bookmark at %d", last, c.Revision())
	}
	rev := wr.put("a", "x", map[string]string{"new": "1"})
	next, _ := read(t, w, 1)
	if next[0].Type != api.Modified || next[0].Revision != rev {
		t.Fatalf("after the bookmark: %v", next)
	}
}

func TestProgressMakesCacheFresh(t *testing.T) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{ProgressInterval: time.Hour})
	rev, err := s.Create(context.Background(), "/registry/core/secrets/ns/s", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitFresh(ctx, rev); err != nil {
		t.Fatalf("the cache never caught up with a write to another prefix: %v", err)
	}
	w := watch(t, c, WatchOptions{From: 0})
	bm, ok := w.Bookmark()
	for i := 0; !ok && i < 10; i++ { // the new watcher catches up from the ring first
		if _, err := w.Pending(ctx, nil); err != nil {
			t.Fatal(err)
		}
		bm, ok = w.Bookmark()
	}
	if bm != rev {
		t.Errorf("bookmark at %d, want the store's revision %d", bm, rev)
	}
}

// TestObjectDecodedOnDemand checks that the cache keeps an object's JSON
// and what filters test, not its decoded tree: it decodes the object when
// asked for it (not before, when the codec encodes without decoding), and
// again at each call, keeping nothing of one call for the next.
func TestObjectDecodedOnDemand(t *testing.T) {
	stored := cm("ns", "a", map[string]string{"l": "v"})
	tests := []struct {
		name        string
		encode      func(storage.KV) ([]byte, bool)
		madeDecodes int
	}{
		{"encoded from the decoded object", nil, 1},
		{"encoded from the stored bytes", func(storage.KV) ([]byte, bool) {
			return bytes.Replace(stored, []byte(`"name"`), []byte(`"resourceVersion":"7","name"`), 1), true
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decodes := 0
			codec := testCodec
			codec.Decode = func(ctx context.Context, kv storage.KV) (api.Object, error) {
				decodes++
				return testCodec.Decode(ctx, kv)
			}
			codec.Encode = tt.encode
			o, err := codec.compile().object(context.Background(), storage.KV{Key: prefix + "ns/a", Value: stored, ModRevision: 7})
			if err != nil {
				t.Fatal(err)
			}
			if decodes != tt.madeDecodes || o.Namespace() != "ns" || o.Labels()["l"] != "v" || o.Fields()["metadata.name"] != "a" {
				t.Fatalf("after making the object: %d decodes, namespace %q, labels %v, fields %v", decodes, o.Namespace(), o.Labels(), o.Fields())
			}
			var first api.Object
			for i := range 2 {
				obj, err := o.Obj()
				if err != nil {
					t.Fatal(err)
				}
				if obj.Name() != "a" || obj.ResourceVersion() != "7" || obj.Labels()["l"] != "v" {
					t.Fatalf("decoded: %v", obj)
				}
				if want := tt.madeDecodes + i + 1; decodes != want {
					t.Fatalf("after Obj call %d: %d decodes, want %d: one per call, none kept", i+1, decodes, want)
				}
				if i == 0 {
					first = obj
					first.SetMeta("name", "changed") // a caller's tree is its own
				}
			}
			if again, _ := o.Obj(); again.Name() != "a" {
				t.Errorf("a change to one call's tree shows in the next: name %q", again.Name())
			}
		})
	}
}

// TestWakePolled: each batch of events hands to Config.WakePolled the
// Wakers of the polled watchers of its namespaces and of all namespaces,
// and only theirs: not those of other namespaces, not a stopped
// watcher's, not a watcher's with a selector (fed by the dispatcher).
func TestWakePolled(t *testing.T) {
	s := memory.New()
	defer s.Close()
	woken := make(chan []Waker, 64)
	c := newCache(t, s, Config{WakePolled: func(b *PollBatch) { woken <- b.Wakers }})
	wr := newWriter(t, s)
	sel, _ := selector.ParseLabels("app=web")
	all := watchPolled(t, c, WatchOptions{InitialEvents: true})
	inA := watchPolled(t, c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
	inB := watchPolled(t, c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "b"}})
	web := watchPolled(t, c, WatchOptions{InitialEvents: true, Filter: Filter{Labels: sel}})
	wokenBy := func(rev int64) map[Waker]bool {
		t.Helper()
		waitRev(t, c, rev) // WakePolled runs before the cache's revision moves
		set := map[Waker]bool{}
		for {
			select {
			case ws := <-woken:
				for _, w := range ws {
					set[w] = true
				}
			default:
				return set
			}
		}
	}
	want := func(ws ...*Watcher) map[Waker]bool {
		set := map[Waker]bool{}
		for _, w := range ws {
			set[w.waker] = true
		}
		return set
	}
	if got := wokenBy(wr.put("a", "x", map[string]string{"app": "web"})); !maps.Equal(got, want(all, inA)) {
		t.Fatalf("a write in namespace a woke %v, want %v", got, want(all, inA))
	}
	all.Stop()
	if got := wokenBy(wr.put("b", "y", nil)); !maps.Equal(got, want(inB)) {
		t.Fatalf("after a Stop, a write in namespace b woke %v, want %v", got, want(inB))
	}
	for _, tc := range []struct {
		w    *Watcher
		want storagetest.Record
	}{{inA, wr.history[0]}, {inB, wr.history[1]}, {web, wr.history[0]}} {
		if got, _ := read(t, tc.w, 1); got[0] != tc.want {
			t.Errorf("read %v, want %v", got[0], tc.want)
		}
	}
}

// TestPolledWatcherTakesItsBudgetAtATime: a polled watcher takes from the
// ring at most its budget per Pending, and is woken to take the rest.
func TestPolledWatcherTakesItsBudgetAtATime(t *testing.T) {
	s := memory.New()
	defer s.Close()
	c := newCache(t, s, Config{WatcherBufferBytes: 300})
	wr := newWriter(t, s)
	w := watchPolled(t, c, WatchOptions{InitialEvents: true})
	for i := range 10 {
		wr.put("ns", fmt.Sprint("k", i), nil)
	}
	waitRev(t, c, wr.history[len(wr.history)-1].Revision)
	wk := w.waker.(chanWaker)
	wk.woken() // drop the wake-ups of the writes
	first, err := w.Pending(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || len(first) >= 10 {
		t.Fatalf("the first Pending took %d of 10 events with a 300-byte budget", len(first))
	}
	if !wk.woken() {
		t.Fatal("a polled watcher with more in the ring than its budget was not woken")
	}
	got, _ := read(t, w, 10-len(first))
	var recs []storagetest.Record
	for _, it := range first {
		recs = append(recs, record(t, it))
	}
	if err := storagetest.ValidateWatch(wr.history, 0, append(recs, got...), true); err != nil {
		t.Error(err)
	}
}

// TestPolledWatcherSeesEventsAfterItsQueue: an event that reaches the ring
// while a polled watcher still holds its initial events is taken, or
// announced by a wake, by the Pending that takes them, even if the wake
// the event sent was swallowed (a server's watch already waiting to be
// served ignores it).
func TestPolledWatcherSeesEventsAfterItsQueue(t *testing.T) {
	for _, budget := range []int{1 << 20, 100} { // room after the queue, and none
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			s := memory.New()
			defer s.Close()
			c := newCache(t, s, Config{WatcherBufferBytes: budget})
			wr := newWriter(t, s)
			wr.put("ns", "a", nil)
			wr.put("ns", "b", nil)
			waitRev(t, c, wr.history[1].Revision)
			w := watchPolled(t, c, WatchOptions{InitialEvents: true})
			waitRev(t, c, wr.put("ns", "c", nil))
			wk := w.waker.(chanWaker)
			wk.woken() // the wake-ups so far, as a server's queued watch swallows them
			items, err := w.Pending(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []storagetest.Record
			for _, it := range items {
				got = append(got, record(t, it))
			}
			if len(got) < 3 {
				if !wk.woken() {
					t.Fatalf("Pending took %v and announced nothing more, with %s in the ring", got, wr.history[2].Key)
				}
				rest, _ := read(t, w, 3-len(got))
				got = append(got, rest...)
			}
			if err := storagetest.ValidateWatch(wr.history, 0, got, true); err != nil {
				t.Error(err)
			}
		})
	}
}

// waitRev waits until c reflects rev.
func waitRev(t *testing.T, c *Cache, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitFresh(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// TestPendingThatLeavesWorkWakes: a Pending that returns a watcher's queue
// while the watcher is parked (its catch-up still to do) or ended (its
// error still to report) wakes its Waker, for a server's watch goes idle
// after a send unless woken. A watcher parked with items queued (fed and
// parked for its budget, or polled and parked for a trimmed ring) stayed
// parked, and one ended with items queued never ended, until something
// else woke it.
func TestPendingThatLeavesWorkWakes(t *testing.T) {
	sel, _ := selector.ParseLabels("app=web")
	web := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name   string
		filter Filter
		cfg    Config
		// leave writes what leaves w with its queue and more to do.
		leave func(t *testing.T, c *Cache, wr *writer, w *Watcher)
	}{{
		name: "fed watcher parked for its budget", filter: Filter{Labels: sel},
		cfg: Config{WatcherBufferBytes: 300},
		leave: func(t *testing.T, c *Cache, wr *writer, w *Watcher) {
			for i := range 10 {
				wr.put("ns", fmt.Sprint("k", i), web)
			}
			waitRev(t, c, wr.history[len(wr.history)-1].Revision)
		},
	}, {
		name: "polled watcher parked for a trimmed ring", cfg: Config{RingMaxEvents: 10, RingMinEvents: 5},
		leave: func(t *testing.T, c *Cache, wr *writer, w *Watcher) {
			for i := range 30 {
				wr.put("ns", fmt.Sprint("k", i), web)
			}
			waitRev(t, c, wr.history[len(wr.history)-1].Revision)
			if items, err := w.Pending(t.Context(), nil); err != nil || len(items) > 0 || !w.CatchingUp() {
				t.Fatalf("Pending past the ring returned %d items, %v, parked %v; want it parked", len(items), err, w.CatchingUp())
			}
		},
	}, {
		name: "watcher ended by Close", filter: Filter{Labels: sel},
		leave: func(t *testing.T, c *Cache, wr *writer, w *Watcher) { c.Close() },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := memory.New()
			defer s.Close()
			c := newCache(t, s, tc.cfg)
			wr := newWriter(t, s)
			wr.put("ns", "a", web)
			wr.put("ns", "b", web)
			waitRev(t, c, wr.history[1].Revision)
			w := watchPolled(t, c, WatchOptions{InitialEvents: true, Filter: tc.filter})
			tc.leave(t, c, wr, w)
			wk := w.waker.(chanWaker)
			wk.woken() // the wake-ups so far, as a server's queued watch swallows them
			items, err := w.Pending(t.Context(), nil)
			if err != nil || len(items) == 0 {
				t.Fatalf("Pending returned %d items, %v; want the queue", len(items), err)
			}
			if !wk.woken() {
				t.Fatal("Pending returned the queue and did not wake the watcher for what is left")
			}
		})
	}
}

// TestQuietNamespaceKeepsItsPlace: a polled watcher of a namespace whose
// events the ring has not dropped takes the next one from the ring, however
// many events of other namespaces went through the ring meanwhile (they do
// not wake it): it is neither parked nor replayed from a store that has
// compacted them away (410 Gone), as a fed watcher would not be.
func TestQuietNamespaceKeepsItsPlace(t *testing.T) {
	watchModes(t, func(t *testing.T, watch func(*testing.T, *Cache, WatchOptions) *Watcher) {
		s := memory.New()
		defer s.Close()
		obs := &countingObserver{}
		c := newCache(t, s, Config{RingMaxEvents: 10, RingMinEvents: 5, Observer: obs})
		wr := newWriter(t, s)
		inA := watch(t, c, WatchOptions{InitialEvents: true, Filter: Filter{Namespace: "a"}})
		wr.put("a", "x", nil)
		if got, _ := read(t, inA, 1); got[0] != wr.history[0] {
			t.Fatalf("read %v, want %v", got[0], wr.history[0])
		}
		for i := range 30 {
			wr.put("b", fmt.Sprint("k", i), nil)
		}
		waitRev(t, c, wr.history[len(wr.history)-1].Revision) // the cache's own watch is past it
		if err := s.Compact(t.Context(), wr.history[len(wr.history)-1].Revision); err != nil {
			t.Fatal(err)
		}
		wr.put("a", "y", nil)
		if got, _ := read(t, inA, 1); got[0] != wr.history[len(wr.history)-1] {
			t.Fatalf("read %v, want %v", got[0], wr.history[len(wr.history)-1])
		}
		if o := obs.snapshot(); o.parked != 0 {
			t.Errorf("the watcher of a quiet namespace was parked %d times", o.parked)
		}
	})
}

// TestGet: Get finds an object by its key as it is now, and nothing once
// it is deleted or for a key the cache never held.
func TestGet(t *testing.T) {
	s := memory.New()
	wr := newWriter(t, s)
	c := newCache(t, s, Config{})
	wr.put("ns", "a", nil)
	rev := wr.put("ns", "a", map[string]string{"v": "2"})
	wr.put("ns", "b", nil)
	if err := c.WaitFresh(t.Context(), rev); err != nil {
		t.Fatal(err)
	}
	o := c.Get(prefix + "ns/a")
	if o == nil || o.Rev != rev {
		t.Fatalf("Get(ns/a) = %v, want the object at revision %d", o, rev)
	}
	if c.Get(prefix+"ns/c") != nil || c.Get(prefix+"other/a") != nil {
		t.Error("Get found an object under a key never written")
	}
	if err := c.WaitFresh(t.Context(), wr.del("ns", "a")); err != nil {
		t.Fatal(err)
	}
	if c.Get(prefix+"ns/a") != nil {
		t.Error("Get(ns/a) found the deleted object")
	}
}

func TestWatchOfAClosedCacheFails(t *testing.T) {
	c := newCache(t, memory.New(), Config{})
	c.Close()
	if err := c.WaitReady(t.Context()); !errors.Is(err, errClosed) {
		t.Errorf("WaitReady: %v, want %v", err, errClosed)
	}
	if _, err := c.Watch(t.Context(), WatchOptions{InitialEvents: true}); !errors.Is(err, errClosed) {
		t.Errorf("Watch: %v, want %v", err, errClosed)
	}
}
