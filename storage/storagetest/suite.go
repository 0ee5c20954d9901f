package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// NewStore returns an empty store of the backend under test.
type NewStore func(t testing.TB) storage.Interface

// waitTimeout bounds every wait for an event in the suite. It is a deadline
// for a condition, never a sleep: a correct backend meets it in milliseconds.
const waitTimeout = 30 * time.Second

// Run runs the whole conformance suite, each case as a subtest on a fresh store.
func Run(t *testing.T, newStore NewStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s storage.Interface)
	}{
		{"CreateGet", testCreateGet},
		{"CreateExisting", testCreateExisting},
		{"RevisionsGrow", testRevisionsGrow},
		{"UpdateCAS", testUpdateCAS},
		{"UpdateUnconditional", testUpdateUnconditional},
		{"DeleteCAS", testDeleteCAS},
		{"RecreateAfterDelete", testRecreateAfterDelete},
		{"ValuesAreCopies", testValuesAreCopies},
		{"MaxValueSize", testMaxValueSize},
		{"InvalidArguments", testInvalidArguments},
		{"ListPrefixAndOrder", testListPrefixAndOrder},
		{"ListAtPastRevisions", testListAtPastRevisions},
		{"ListFutureRevision", testListFutureRevision},
		{"ListPagination", testListPagination},
		{"ListPaginationStableUnderWrites", testListPaginationStableUnderWrites},
		{"ConcurrentCASIncrements", testConcurrentCASIncrements},
		{"WatchEvents", testWatchEvents},
		{"WatchPrefix", testWatchPrefix},
		{"WatchFromEveryRevision", testWatchFromEveryRevision},
		{"WatchFromFuture", testWatchFromFuture},
		{"WatchOrderUnderConcurrentWriters", testWatchOrderUnderConcurrentWriters},
		{"WatchCancel", testWatchCancel},
		{"WatchProgress", testWatchProgress},
		{"SlowWatcherDoesNotBlock", testSlowWatcherDoesNotBlock},
		{"Compaction", testCompaction},
		{"CompactionBounds", testCompactionBounds},
		{"CloseEndsWatches", testCloseEndsWatches},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			c.run(t, s)
		})
	}
}

// ctxFor returns a context that ends with the test.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// mustCreate creates key and returns its revision, failing the test on error.
func mustCreate(t testing.TB, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(ctxFor(t), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustUpdate(t testing.TB, s storage.Interface, key string, expected int64, value string) int64 {
	t.Helper()
	rev, err := s.Update(ctxFor(t), key, expected, []byte(value))
	if err != nil {
		t.Fatalf("Update(%q, %d): %v", key, expected, err)
	}
	return rev
}

func mustDelete(t testing.TB, s storage.Interface, key string) int64 {
	t.Helper()
	_, rev, err := s.Delete(ctxFor(t), key, 0)
	if err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	return rev
}

func mustCurrent(t testing.TB, s storage.Interface) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(ctxFor(t))
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func mustList(t testing.TB, s storage.Interface, prefix string, opts storage.ListOptions) storage.ListResponse {
	t.Helper()
	resp, err := s.List(ctxFor(t), prefix, opts)
	if err != nil {
		t.Fatalf("List(%q, %+v): %v", prefix, opts, err)
	}
	return resp
}

// listAll pages through a whole list with the given page size and checks that
// every page was read at the same revision.
func listAll(t testing.TB, s storage.Interface, prefix string, opts storage.ListOptions) ([]storage.KV, int64) {
	t.Helper()
	var all []storage.KV
	first := mustList(t, s, prefix, opts)
	all = append(all, first.KVs...)
	for next := first.Continue; next != ""; {
		page := mustList(t, s, prefix, storage.ListOptions{Limit: opts.Limit, Continue: next})
		if page.Revision != first.Revision {
			t.Fatalf("page read at revision %d, first page at %d", page.Revision, first.Revision)
		}
		if opts.Limit > 0 && int64(len(page.KVs)) > opts.Limit {
			t.Fatalf("page of %d KVs exceeds limit %d", len(page.KVs), opts.Limit)
		}
		all = append(all, page.KVs...)
		next = page.Continue
	}
	return all, first.Revision
}

// expectErr fails unless err matches want with errors.Is.
func expectErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// watchRecorder reads a watch into batches on demand.
type watchRecorder struct {
	t testing.TB
	w storage.Watcher
}

func mustWatch(t testing.TB, s storage.Interface, ctx context.Context, prefix string, from int64) *watchRecorder {
	t.Helper()
	w, err := s.Watch(ctx, prefix, from)
	if err != nil {
		t.Fatalf("Watch(%q, %d): %v", prefix, from, err)
	}
	return &watchRecorder{t: t, w: w}
}

// next returns the next n events, failing the test if they do not arrive in
// time, the watch ends first, or a batch brings more than n.
func (r *watchRecorder) next(n int) []storage.Event {
	r.t.Helper()
	got, err := r.collect(n)
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

// collect is next for use off the test goroutine: it returns what went wrong.
func (r *watchRecorder) collect(n int) ([]storage.Event, error) {
	var got []storage.Event
	for len(got) < n {
		batch, err := r.batch()
		if err != nil {
			return got, fmt.Errorf("after %d of %d events: %w", len(got), n, err)
		}
		got = append(got, batch...)
	}
	if len(got) > n {
		return got, fmt.Errorf("wanted %d events, got %d: %v", n, len(got), RecordsOf([][]storage.Event{got}))
	}
	return got, nil
}

// until reads events until one at revision rev or later has arrived.
func (r *watchRecorder) until(rev int64) []storage.Event {
	r.t.Helper()
	var got []storage.Event
	for len(got) == 0 || got[len(got)-1].Revision < rev {
		batch, err := r.batch()
		if err != nil {
			r.t.Fatalf("reading up to revision %d: %v", rev, err)
		}
		got = append(got, batch...)
	}
	return got
}

// batch returns the next non-empty batch, or why there is none.
func (r *watchRecorder) batch() ([]storage.Event, error) {
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	select {
	case batch, ok := <-r.w.Events():
		if !ok {
			return nil, fmt.Errorf("watch ended: %w", r.w.Err())
		}
		if len(batch) == 0 {
			return nil, fmt.Errorf("watch delivered an empty batch")
		}
		return batch, nil
	case <-deadline.C:
		return nil, fmt.Errorf("no event within %v", waitTimeout)
	}
}

// end waits for the watch to end and returns its error.
func (r *watchRecorder) end() error {
	r.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case batch, ok := <-r.w.Events():
			if !ok {
				return r.w.Err()
			}
			if len(batch) > 0 {
				r.t.Fatalf("watch delivered %v while it should end", RecordsOf([][]storage.Event{batch}))
			}
		case <-deadline.C:
			r.t.Fatalf("watch did not end within %v", waitTimeout)
		}
	}
}

func key(prefix string, i int) string { return fmt.Sprintf("%s%05d", prefix, i) }
