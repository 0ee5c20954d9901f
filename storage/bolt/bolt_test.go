package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestCommitBatchResults applies one batch directly and checks that each
// request gets its own result and that failures consume no revision.
func TestCommitBatchResults(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	req := func(ctx context.Context, op opKind, key, value string, expected int64) *request {
		return &request{ctx: ctx, op: op, key: key, value: []byte(value), expected: expected, res: make(chan result, 1)}
	}
	batch := []*request{
		req(ctx, opCreate, "/a", "1", 0),       // rev 1
		req(ctx, opCreate, "/a", "x", 0),       // exists
		req(ctx, opUpdate, "/b", "x", 0),       // not found
		req(ctx, opCreate, "/b", "2", 0),       // rev 2
		req(ctx, opUpdate, "/b", "x", 1),       // conflict: /b is at 2
		req(cancelled, opCreate, "/c", "x", 0), // ctx ended
		req(ctx, opUpdate, "/a", "3", 1),       // rev 3
		req(ctx, opDelete, "/b", "", 2),        // rev 4
	}
	s.commit(batch)
	wantRev := []int64{1, 0, 0, 2, 0, 0, 3, 4}
	wantErr := []error{nil, storage.ErrKeyExists, storage.ErrNotFound, nil, storage.ErrConflict, context.Canceled, nil, nil}
	results := make([]result, len(batch))
	for i, r := range batch {
		res := <-r.res
		results[i] = res
		if res.rev != wantRev[i] || !errors.Is(res.err, wantErr[i]) || (wantErr[i] == nil) != (res.err == nil) {
			t.Errorf("request %d: got (%d, %v), want (%d, %v)", i, res.rev, res.err, wantRev[i], wantErr[i])
		}
	}
	var conflict *storage.ConflictError
	if !errors.As(results[4].err, &conflict) || conflict.Current.ModRevision != 2 || string(conflict.Current.Value) != "2" {
		t.Errorf("conflict error %v does not carry the current KV", results[4].err)
	}
	if prev := results[7].prev; prev.Key != "/b" || string(prev.Value) != "2" || prev.ModRevision != 2 {
		t.Errorf("delete returned %+v, want the deleted state", prev)
	}
	if rev, _ := s.CurrentRevision(ctx); rev != 4 {
		t.Errorf("CurrentRevision = %d, want 4", rev)
	}
	kv, err := s.Get(ctx, "/a")
	if err != nil || string(kv.Value) != "3" || kv.CreateRevision != 1 || kv.ModRevision != 3 {
		t.Errorf("Get(/a) = %+v, %v", kv, err)
	}
}

// TestGroupCommitConcurrent races many writers on shared and own keys: each
// gets its own outcome, and the revisions are exactly 1..n.
func TestGroupCommitConcurrent(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	base := mustCreate(t, s, "/shared", "0")
	const writers = 64
	var mu sync.Mutex
	var revs []int64
	wins, conflicts := 0, 0
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			own, err := s.Create(ctx, fmt.Sprintf("/own/%d", i), []byte("v"))
			if err != nil {
				t.Errorf("Create own: %v", err)
			}
			upd, uerr := s.Update(ctx, "/shared", base, []byte(fmt.Sprint(i)))
			mu.Lock()
			defer mu.Unlock()
			revs = append(revs, own)
			switch {
			case uerr == nil:
				wins++
				revs = append(revs, upd)
			case errors.Is(uerr, storage.ErrConflict):
				conflicts++
			default:
				t.Errorf("Update: %v", uerr)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != writers-1 {
		t.Errorf("wins=%d conflicts=%d, want 1 and %d", wins, conflicts, writers-1)
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
	for i, rev := range revs {
		if rev != base+1+int64(i) {
			t.Fatalf("revisions %v are not %d..%d", revs, base+1, base+int64(len(revs)))
		}
	}
}

// commitRecorder is a CommitObserver that keeps what it is told.
type commitRecorder struct {
	mu      sync.Mutex
	commits []recordedCommit // guarded by mu
}

// recordedCommit is one call of Committed.
type recordedCommit struct {
	d     time.Duration
	batch int
}

// Committed implements CommitObserver.
func (r *commitRecorder) Committed(d time.Duration, batch int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, recordedCommit{d, batch})
}

// batches returns the batch sizes observed so far, checking that every
// commit took some time.
func (r *commitRecorder) batches(t *testing.T) []int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	sizes := []int{}
	for i, c := range r.commits {
		if c.d <= 0 {
			t.Errorf("commit %d took %v, want a positive duration", i, c.d)
		}
		sizes = append(sizes, c.batch)
	}
	return sizes
}

// TestCommitObserver checks that the observer is told of each commit once,
// with its batch's size (failed requests included), before the batch's
// callers are answered; opening the store commits nothing it is told of.
func TestCommitObserver(t *testing.T) {
	rec := &commitRecorder{}
	s := openTest(t, Options{CommitObserver: rec})
	ctx := context.Background()
	if got := rec.batches(t); len(got) != 0 {
		t.Fatalf("after Open: batches %v, want none", got)
	}
	var batch []*request
	for _, key := range []string{"/a", "/b", "/a"} { // the second /a fails: it exists
		batch = append(batch, &request{ctx: ctx, op: opCreate, key: key, value: []byte("v"), res: make(chan result, 1)})
	}
	s.commit(batch)
	rev := mustCreate(t, s, "/c", "v") // through the writer: answered after the observer is told
	if _, err := s.Update(ctx, "/c", rev-1, []byte("w")); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Update with a stale revision: %v, want a conflict", err)
	}
	if diff := cmp.Diff([]int{3, 1, 1}, rec.batches(t)); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
}

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(dir, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, bolterrors.ErrTimeout) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: %v, want a lock timeout", err)
	}
}

// TestRestartResume writes, compacts, closes and reopens: state, revisions
// and history survive, and watches resume from any retained revision.
func TestRestartResume(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		mustCreate(t, s, fmt.Sprintf("/r/%02d", i), "v")
	}
	if _, _, err := s.Delete(ctx, "/r/00", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rev, _ := s.CurrentRevision(ctx); rev != 21 {
		t.Fatalf("CurrentRevision after restart = %d, want 21", rev)
	}
	if _, err := s.Get(ctx, "/r/00"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get deleted key: %v", err)
	}
	for _, from := range []int64{0, 9} {
		if _, err := s.Watch(ctx, "/r/", from); !errors.Is(err, storage.ErrCompacted) {
			t.Errorf("Watch from %d, below compaction: %v", from, err)
		}
	}
	for _, from := range []int64{10, 15} {
		wctx, cancel := context.WithCancel(ctx)
		w, err := s.Watch(wctx, "/r/", from)
		if err != nil {
			t.Fatal(err)
		}
		got := storagetest.Collect(t, w, int(21-from))
		if got[0].Revision != from+1 || got[len(got)-1].Type != storage.EventDelete {
			t.Errorf("watch from %d: first %d, last %v", from, got[0].Revision, got[len(got)-1])
		}
		cancel()
		if err := storagetest.WaitEnd(t, w); !errors.Is(err, context.Canceled) {
			t.Errorf("watch error after cancel: %v", err)
		}
	}
	if rev := mustCreate(t, s, "/r/new", "v"); rev != 22 {
		t.Errorf("first write after restart at %d, want 22", rev)
	}
}

// TestListPastRevisions checks every page of lists at every retained
// revision against a model, with writes between the pages.
func TestListPastRevisions(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]storage.KV{}
	states := []map[string]storage.KV{{}} // states[rev]
	write := func() {
		key := fmt.Sprintf("/p/%d", rng.IntN(30))
		if rng.IntN(2) == 0 {
			key = fmt.Sprintf("/q/%d", rng.IntN(5)) // outside the listed prefix
		}
		val := []byte(fmt.Sprint(rng.Int()))
		old, exists := model[key]
		var rev int64
		var err error
		switch {
		case !exists:
			rev, err = s.Create(ctx, key, val)
			model[key] = storage.KV{Key: key, Value: val, CreateRevision: rev, ModRevision: rev}
		case rng.IntN(3) == 0:
			_, rev, err = s.Delete(ctx, key, old.ModRevision)
			delete(model, key)
		default:
			rev, err = s.Update(ctx, key, old.ModRevision, val)
			model[key] = storage.KV{Key: key, Value: val, CreateRevision: old.CreateRevision, ModRevision: rev}
		}
		if err != nil || rev != int64(len(states)) {
			t.Fatalf("write %q: rev %d, %v; want rev %d", key, rev, err, len(states))
		}
		snap := map[string]storage.KV{}
		for k, v := range model {
			snap[k] = v
		}
		states = append(states, snap)
	}
	for range 200 {
		write()
	}
	if err := s.Compact(ctx, 50); err != nil {
		t.Fatal(err)
	}
	for rev := int64(50); rev < int64(len(states)); rev += 7 {
		want := sortedUnder(states[rev], "/p/")
		var got []storage.KV
		opts := storage.ListOptions{Revision: rev, Limit: 4}
		for {
			resp, err := s.List(ctx, "/p/", opts)
			if err != nil {
				t.Fatalf("List at %d: %v", rev, err)
			}
			if resp.Revision != rev || len(resp.KVs) > 4 {
				t.Fatalf("List at %d: revision %d, %d KVs", rev, resp.Revision, len(resp.KVs))
			}
			got = append(got, resp.KVs...)
			if resp.Continue == "" {
				break
			}
			write()
			opts = storage.ListOptions{Limit: 4, Continue: resp.Continue}
		}
		if err := diffKVs(want, got); err != nil {
			t.Fatalf("List at %d: %v", rev, err)
		}
	}
	if _, err := s.List(ctx, "/p/", storage.ListOptions{Revision: 49}); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("List below compaction: %v", err)
	}
	cur := int64(len(states) - 1)
	if _, err := s.List(ctx, "/p/", storage.ListOptions{Revision: cur + 1}); !errors.Is(err, storage.ErrFutureRevision) {
		t.Errorf("List in the future: %v", err)
	}
	resp, err := s.List(ctx, "/p/", storage.ListOptions{Revision: 60, Limit: 1})
	if err != nil || resp.Continue == "" {
		t.Fatalf("List: %v, continue %q", err, resp.Continue)
	}
	if err := s.Compact(ctx, 61); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "/p/", storage.ListOptions{Continue: resp.Continue}); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("continue after compaction: %v", err)
	}
}

func sortedUnder(state map[string]storage.KV, prefix string) []storage.KV {
	var kvs []storage.KV
	for k, v := range state {
		if strings.HasPrefix(k, prefix) {
			kvs = append(kvs, v)
		}
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	return kvs
}

func diffKVs(want, got []storage.KV) error {
	if len(want) != len(got) {
		return fmt.Errorf("got %d KVs, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Key != g.Key || !bytes.Equal(w.Value, g.Value) || w.CreateRevision != g.CreateRevision || w.ModRevision != g.ModRevision {
			return fmt.Errorf("KV %d: got %+v, want %+v", i, g, w)
		}
	}
	return nil
}

// TestSlowWatcher checks that a watcher that does not read blocks neither
// the writers nor a fast watcher, and later receives every event exactly once
// while writes go on.
func TestSlowWatcher(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 8})
	ctx := context.Background()
	slow, err := s.Watch(ctx, "/w/", 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := s.Watch(ctx, "/w/", 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n / 2 {
			mustCreate(t, s, fmt.Sprintf("/w/a%d", i), "v")
		}
	})
	wg.Go(func() {
		for i := range n / 2 {
			mustCreate(t, s, fmt.Sprintf("/w/b%d", i), "v")
			mustCreate(t, s, fmt.Sprintf("/other/%d", i), "v")
		}
	})
	fastGot := storagetest.Collect(t, fast, n)
	wg.Wait() // the writers finished although slow was never read
	for i := range n / 2 {
		wg.Go(func() { mustCreate(t, s, fmt.Sprintf("/w/c%d", i), "v") })
	}
	slowGot := storagetest.Collect(t, slow, n+n/2)
	wg.Wait()
	for i, ev := range fastGot {
		if slowGot[i].Revision != ev.Revision || slowGot[i].KV.Key != ev.KV.Key {
			t.Fatalf("event %d: slow %v, fast %v", i, slowGot[i], ev)
		}
	}
}

// TestLaggingWatcherCompacted ends a lagging watcher's stream with
// ErrCompacted when compaction passes its position.
func TestLaggingWatcherCompacted(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 4})
	ctx := context.Background()
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 100 {
		last = mustCreate(t, s, fmt.Sprintf("/k%d", i), "v")
	}
	if err := s.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := storagetest.WaitEnd(t, w); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("lagging watch ended with %v, want ErrCompacted", err)
	}
}

func TestWatchFuture(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	w, err := s.Watch(ctx, "/", 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustCreate(t, s, fmt.Sprintf("/k%d", i), "v")
	}
	if got := storagetest.Collect(t, w, 2); got[0].Revision != 4 || got[1].Revision != 5 {
		t.Fatalf("watch from 3 got revisions %d, %d", got[0].Revision, got[1].Revision)
	}
}

func TestClose(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/a", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := storagetest.WaitEnd(t, w); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("watch after Close: %v", err)
	}
	if _, err := s.Create(ctx, "/b", nil); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Create after Close: %v", err)
	}
	if _, err := s.Get(ctx, "/a"); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := s.Watch(ctx, "/", 0); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Watch after Close: %v", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	mustCreate(t, s, "/a", "v")
	for name, err := range map[string]error{
		"empty key":       func() error { _, err := s.Get(ctx, ""); return err }(),
		"relative key":    func() error { _, err := s.Create(ctx, "a", nil); return err }(),
		"NUL in key":      func() error { _, err := s.Update(ctx, "/a\x00", 0, nil); return err }(),
		"negative limit":  func() error { _, err := s.List(ctx, "/", storage.ListOptions{Limit: -1}); return err }(),
		"negative rev":    func() error { _, err := s.List(ctx, "/", storage.ListOptions{Revision: -1}); return err }(),
		"bad token":       func() error { _, err := s.List(ctx, "/", storage.ListOptions{Continue: "!!"}); return err }(),
		"negative expect": func() error { _, _, err := s.Delete(ctx, "/a", -1); return err }(),
		"negative watch":  func() error { _, err := s.Watch(ctx, "/", -1); return err }(),
		"negative compact": func() error {
			return s.Compact(ctx, -1)
		}(),
	} {
		if !errors.Is(err, storage.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := s.Create(ctx, "/big", make([]byte, storage.MaxValueSize+1)); !errors.Is(err, storage.ErrValueTooLarge) {
		t.Errorf("large value: %v", err)
	}
	if err := s.Compact(ctx, 2); !errors.Is(err, storage.ErrFutureRevision) {
		t.Errorf("Compact in the future: %v", err)
	}
	if rev, _ := s.CurrentRevision(ctx); rev != 1 {
		t.Errorf("rejected calls changed the revision to %d", rev)
	}
}

// TestWatchersUnderChurn runs watchers with a two-event buffer (so that they
// overflow, catch up and rejoin all the time) and readers of uneven speed
// against concurrent writers, and validates every stream against the
// history.
func TestWatchersUnderChurn(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 2})
	ctx := context.Background()
	type stream struct {
		prefix string
		from   int64
		got    []storage.Event
	}
	var streams []*stream
	var readers sync.WaitGroup
	watch := func(prefix string, slowness int) {
		from, _ := s.CurrentRevision(ctx)
		w, err := s.Watch(ctx, prefix, from)
		if err != nil {
			t.Fatal(err)
		}
		st := &stream{prefix: prefix, from: from}
		streams = append(streams, st)
		rng := rand.New(rand.NewPCG(uint64(len(streams)), 0))
		readers.Go(func() {
			for {
				for range rng.IntN(slowness + 1) {
					runtime.Gosched()
				}
				batch, ok := <-w.Events()
				if !ok {
					t.Errorf("watch %q ended early: %v", prefix, w.Err())
					return
				}
				st.got = append(st.got, batch...)
				if batch[len(batch)-1].KV.Key == prefix+"end" {
					return
				}
			}
		})
	}
	watch("/churn/", 0)
	watch("/churn/", 50)
	var writers sync.WaitGroup
	for g := range 8 {
		writers.Go(func() {
			for i := range 300 {
				key := fmt.Sprintf("/churn/%d/%d", g, i%20)
				_, err := s.Create(ctx, key, []byte("v"))
				if errors.Is(err, storage.ErrKeyExists) {
					if i%3 == 0 {
						_, _, err = s.Delete(ctx, key, 0)
					} else {
						_, err = s.Update(ctx, key, 0, []byte(fmt.Sprint(i)))
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
		if g%3 == 0 {
			watch(fmt.Sprintf("/churn/%d/", g), 10)
		}
	}
	watch("/churn/", 200)
	writers.Wait()
	for _, g := range []int{0, 3, 6} {
		mustCreate(t, s, fmt.Sprintf("/churn/%d/end", g), "")
	}
	end := mustCreate(t, s, "/churn/end", "")
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-readersDone:
	case <-time.After(waitTimeout):
		t.Fatal("readers did not see the end of their streams before the deadline")
	}
	all, err := s.Watch(ctx, "/churn/", 0)
	if err != nil {
		t.Fatal(err)
	}
	history := storagetest.RecordsOf([][]storage.Event{storagetest.Collect(t, all, int(end))})
	for _, st := range streams {
		var want storagetest.History
		for _, r := range history {
			if strings.HasPrefix(r.Key, st.prefix) {
				want = append(want, r)
			}
		}
		got := storagetest.RecordsOf([][]storage.Event{st.got})
		if err := storagetest.ValidateWatch(want, st.from, got, true); err != nil {
			t.Errorf("watch %q from %d: %v", st.prefix, st.from, err)
		}
	}
}

// TestWatchEventsOwned checks PrevKV on live events and that each watcher
// and each caller owns the values it is given.
func TestWatchEventsOwned(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	a, _ := s.Watch(ctx, "/", 0)
	b, _ := s.Watch(ctx, "/", 0)
	value := []byte("one")
	mustCreate(t, s, "/k", string(value))
	value[0] = 'X' // the caller's buffer is its own
	if _, err := s.Update(ctx, "/k", 1, []byte("two")); err != nil {
		t.Fatal(err)
	}
	prev, _, err := s.Delete(ctx, "/k", 2)
	if err != nil {
		t.Fatal(err)
	}
	prev.Value[0] = 'Y'
	evA := storagetest.Collect(t, a, 3)
	for _, ev := range evA {
		if ev.PrevKV != nil {
			ev.PrevKV.Value[0] = 'Z'
		}
		if ev.KV.Value != nil {
			ev.KV.Value[0] = 'Z'
		}
	}
	evB := storagetest.Collect(t, b, 3)
	if string(evB[0].KV.Value) != "one" || evB[0].PrevKV != nil {
		t.Errorf("create event %+v", evB[0])
	}
	if string(evB[1].KV.Value) != "two" || string(evB[1].PrevKV.Value) != "one" || evB[1].KV.CreateRevision != 1 {
		t.Errorf("update event %+v, prev %+v", evB[1], evB[1].PrevKV)
	}
	if evB[2].Type != storage.EventDelete || string(evB[2].PrevKV.Value) != "two" || evB[2].PrevKV.ModRevision != 2 {
		t.Errorf("delete event %+v, prev %+v", evB[2], evB[2].PrevKV)
	}
}

// gatedObserver is a CommitObserver that records, for each commit, its
// batch size and whether the writer goroutine made it; a commit made while
// hold is set waits in Committed (after signalling entered) until release.
type gatedObserver struct {
	entered chan struct{} // receives once per held commit
	release chan struct{} // a held commit goes on when this receives
	mu      sync.Mutex
	hold    bool           // guarded by mu: hold the next commit
	commits []turnedCommit // guarded by mu
}

// turnedCommit is a commit as gatedObserver saw it.
type turnedCommit struct {
	batch    int
	onWriter bool
}

// Committed implements CommitObserver.
func (o *gatedObserver) Committed(_ time.Duration, batch int) {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	o.mu.Lock()
	o.commits = append(o.commits, turnedCommit{batch, strings.Contains(stack, "storage/bolt.(*Store).writer(")})
	hold := o.hold
	o.hold = false
	o.mu.Unlock()
	if hold {
		o.entered <- struct{}{}
		<-o.release
	}
}

// TestCommitTurn checks who commits: a write that finds no commit under
// way is committed by its caller, alone; the writes queued during a commit
// are committed together by the writer goroutine once that commit ends.
func TestCommitTurn(t *testing.T) {
	obs := &gatedObserver{entered: make(chan struct{}), release: make(chan struct{})}
	s := openTest(t, Options{CommitObserver: obs})
	ctx := context.Background()
	mustCreate(t, s, "/lone", "v")

	obs.mu.Lock()
	obs.hold = true
	obs.mu.Unlock()
	const queued = 5
	revs := make(chan int64, queued+1)
	var wg sync.WaitGroup
	create := func(key string) {
		rev, err := s.Create(ctx, key, []byte("v"))
		if err != nil {
			t.Errorf("Create(%q): %v", key, err)
		}
		revs <- rev
	}
	wg.Go(func() { create("/held") })
	<-obs.entered // /held's caller is committing, held in the observer
	for i := range queued {
		wg.Go(func() { create(fmt.Sprintf("/queued/%d", i)) })
	}
	testwait.UntilNil(t, waitTimeout, "the requests to queue during the held commit", func() error {
		s.queueMu.Lock()
		defer s.queueMu.Unlock()
		if n := len(s.queue); n != queued {
			return fmt.Errorf("%d queued, want %d", n, queued)
		}
		return nil
	})
	obs.release <- struct{}{}
	wg.Wait()
	close(revs)
	seen := map[int64]bool{}
	for rev := range revs {
		if seen[rev] {
			t.Errorf("revision %d given twice", rev)
		}
		seen[rev] = true
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []turnedCommit{{1, false}, {1, false}, {queued, true}}
	if diff := cmp.Diff(want, obs.commits, cmp.AllowUnexported(turnedCommit{})); diff != "" {
		t.Errorf("commits (-want +got):\n%s", diff)
	}
}

// panicCtx is a context whose Err panics from its calls'th call on: a
// commit that checks the request's context panics inside its transaction,
// which is rolled back.
type panicCtx struct {
	context.Context
	calls atomic.Int32
	from  int32
}

func (c *panicCtx) Err() error {
	if c.calls.Add(1) >= c.from {
		panic("request context")
	}
	return nil
}

// TestLeadPanicReleasesStore checks that a write whose caller's commit
// panics (net/http recovers a handler's panic) leaves the store usable
// and closable: the committer's turn and the call's admission both end.
func TestLeadPanicReleasesStore(t *testing.T) {
	s := openTest(t, Options{})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the first commit did not panic")
			}
		}()
		// Err's first call is begin's, its second the commit's.
		_, _ = s.Create(&panicCtx{Context: context.Background(), from: 2}, "/panic", []byte("v"))
	}()
	mustCreate(t, s, "/after", "v")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return after a commit panicked")
	}
}

// TestLeadPanicAnswersBatch checks that when a caller's commit panics, the
// other requests of its batch are answered with an error rather than left
// waiting for their contexts.
func TestLeadPanicAnswersBatch(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	newRequest := func(ctx context.Context, key string) *request {
		return &request{ctx: ctx, op: opCreate, key: key, value: []byte("v"), res: make(chan result, 1)}
	}
	other, own := newRequest(ctx, "/other"), newRequest(&panicCtx{Context: ctx, from: 1}, "/own")
	if err := s.begin(ctx); err != nil { // as do, which lead ends
		t.Fatal(err)
	}
	s.queueMu.Lock()
	s.queue = append(s.queue, other, own) // as if other queued before own's caller took the turn
	s.committing = true
	s.queueMu.Unlock()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the commit did not panic")
			}
		}()
		s.lead()
	}()
	select {
	case res := <-other.res:
		if res.err == nil {
			t.Errorf("the other request of a panicked commit was answered %+v, want an error", res)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the other request of a panicked commit was never answered")
	}
	mustCreate(t, s, "/after", "v")
}

// panickingObserver panics at its first commit, after the transaction has
// committed.
type panickingObserver struct{ done atomic.Bool }

func (o *panickingObserver) Committed(time.Duration, int) {
	if o.done.CompareAndSwap(false, true) {
		panic("observer")
	}
}

// TestPanicAfterWriteFailsStore checks that a caller's commit that panics
// once its transaction is written (here in the CommitObserver, before the
// store's revision is updated) fails the store: net/http recovers the
// panic, and a write after it would otherwise take a revision already
// written. The store closes, and reopened holds the written batch.
func TestPanicAfterWriteFailsStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true, CommitObserver: &panickingObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the commit did not panic")
			}
		}()
		_, _ = s.Create(context.Background(), "/written", []byte("v"))
	}()
	if _, err := s.Create(context.Background(), "/after", []byte("v")); !errors.Is(err, errStoreFailed) {
		t.Errorf("a write after the panic: %v, want %v", err, errStoreFailed)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kv, err := s.Get(context.Background(), "/written")
	if err != nil || string(kv.Value) != "v" {
		t.Fatalf("reopened: /written %+v, %v", kv, err)
	}
	if next, err := s.Create(context.Background(), "/after", []byte("v")); err != nil || next <= kv.ModRevision {
		t.Errorf("reopened: a write at %d (%v) after revision %d", next, err, kv.ModRevision)
	}
}

// TestCatchUpChunkBytes checks that a watcher catching up from the history
// reads it in chunks of about catchUpChunkBytes, not catchUpChunk records
// whatever their size: ten records of 300 KiB come as 4, 4 and 2.
func TestCatchUpChunkBytes(t *testing.T) {
	s := openTest(t, Options{})
	value := strings.Repeat("x", 300<<10)
	for i := range 10 {
		mustCreate(t, s, fmt.Sprintf("/k%d", i), value)
	}
	w, err := s.Watch(t.Context(), "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for n := 0; n < 10; {
		select {
		case batch := <-w.Events():
			sizes = append(sizes, len(batch))
			n += len(batch)
		case <-time.After(10 * time.Second):
			t.Fatalf("batches of %v events after 10 s, want 10 events", sizes)
		}
	}
	if fmt.Sprint(sizes) != "[4 4 2]" {
		t.Errorf("caught up in batches of %v events, want [4 4 2]", sizes)
	}
}
