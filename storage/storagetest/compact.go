package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/storage"
)

func testCompaction(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	snapshots := applyWrites(t, s, "/p/")
	history := watchAll(t, s, "/p/")
	mid := history[len(history)/2].Revision
	page := mustList(t, s, "/p/", storage.ListOptions{Revision: mid - 1, Limit: 1})
	if page.Continue == "" {
		t.Fatalf("a one-key page at %d has no continue token", mid-1)
	}
	if err := s.Compact(ctx, mid); err != nil {
		t.Fatalf("Compact(%d): %v", mid, err)
	}

	_, err := s.List(ctx, "/p/", storage.ListOptions{Revision: mid - 1})
	expectErr(t, "List below the compaction revision", err, storage.ErrCompacted)
	_, err = s.List(ctx, "/p/", storage.ListOptions{Continue: page.Continue, Limit: 1})
	expectErr(t, "List with a continue token below the compaction revision", err, storage.ErrCompacted)
	for _, from := range []int64{0, 1, mid - 1} {
		if err := watchErr(t, s, "/p/", from); !errors.Is(err, storage.ErrCompacted) {
			t.Errorf("Watch from %d after Compact(%d): %v, want ErrCompacted", from, mid, err)
		}
	}

	for rev := mid; rev <= history[len(history)-1].Revision; rev++ {
		want, ok := snapshots[rev]
		if !ok {
			continue
		}
		got, _ := listAll(t, s, "/p/", storage.ListOptions{Revision: rev, Limit: 2})
		if diff := cmp.Diff(want.list("/p/"), got); diff != "" {
			t.Errorf("List at %d after Compact(%d) (-want +got):\n%s", rev, mid, diff)
		}
		w := mustWatch(t, s, ctx, "/p/", rev)
		tail := history.After(rev)
		if err := ValidateWatch(history, rev, RecordsOf([][]storage.Event{w.next(len(tail))}), true); err != nil {
			t.Errorf("watch from %d after Compact(%d): %v", rev, mid, err)
		}
	}
}

func testCompactionBounds(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	writeHistory(t, s, "/cb/", 10)
	cur := mustCurrent(t, s)
	expectErr(t, "Compact above the current revision", s.Compact(ctx, cur+1), storage.ErrFutureRevision)
	if err := s.Compact(ctx, cur-2); err != nil {
		t.Fatalf("Compact(%d): %v", cur-2, err)
	}
	if err := s.Compact(ctx, cur-5); err != nil {
		t.Errorf("Compact below the compaction revision should do nothing: %v", err)
	}
	if err := s.Compact(ctx, cur-2); err != nil {
		t.Errorf("Compact at the compaction revision again should do nothing: %v", err)
	}
	if _, err := s.List(ctx, "/cb/", storage.ListOptions{Revision: cur - 2}); err != nil {
		t.Errorf("List at the compaction revision: %v", err)
	}
	if err := s.Compact(ctx, cur); err != nil {
		t.Errorf("Compact at the current revision: %v", err)
	}
	rev := mustCreate(t, s, "/cb/after", "v")
	if got := mustList(t, s, "/cb/after", storage.ListOptions{}); len(got.KVs) != 1 || got.Revision != rev {
		t.Errorf("after compacting everything, a write is listed as %+v", got)
	}
	w := mustWatch(t, s, ctx, "/cb/", cur)
	if got := w.next(1); got[0].Revision != rev {
		t.Errorf("watch from the compaction revision got %v, want the write at %d", RecordsOf([][]storage.Event{got}), rev)
	}
}

// watchAll returns the whole retained history under prefix as seen by a watch
// from revision 0, read up to the current revision.
func watchAll(t testing.TB, s storage.Interface, prefix string) History {
	t.Helper()
	cur := mustCurrent(t, s)
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	w := mustWatch(t, s, ctx, prefix, 0)
	return RecordsOf([][]storage.Event{w.until(cur)})
}

// watchErr opens a watch expected to fail and returns its error, whether
// Watch returned it or the stream ended with it.
func watchErr(t testing.TB, s storage.Interface, prefix string, from int64) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	w, err := s.Watch(ctx, prefix, from)
	if err != nil {
		return err
	}
	return (&watchRecorder{t: t, w: w}).end()
}
