package storagetest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/storage"
)

// model is the expected state of a store, kept by the test beside it.
type model map[string]storage.KV

// list returns the model's KVs under prefix in key order.
func (m model) list(prefix string) []storage.KV {
	var out []storage.KV
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			out = append(out, m[k])
		}
	}
	return out
}

// applyWrites runs a scripted history of creates, updates and deletes under
// prefix and returns the model's state after each write, by revision.
func applyWrites(t testing.TB, s storage.Interface, prefix string) map[int64]model {
	state := model{}
	snapshots := map[int64]model{}
	record := func(rev int64) { snapshots[rev] = maps.Clone(state) }
	for i := range 6 {
		k := key(prefix, i)
		rev := mustCreate(t, s, k, fmt.Sprintf("v%d", i))
		state[k] = storage.KV{Key: k, Value: fmt.Appendf(nil, "v%d", i), CreateRevision: rev, ModRevision: rev}
		record(rev)
	}
	for _, i := range []int{1, 3} {
		k := key(prefix, i)
		kv := state[k]
		rev := mustUpdate(t, s, k, kv.ModRevision, "updated")
		kv.Value, kv.ModRevision = []byte("updated"), rev
		state[k] = kv
		record(rev)
	}
	for _, i := range []int{0, 3} {
		k := key(prefix, i)
		rev := mustDelete(t, s, k)
		delete(state, k)
		record(rev)
	}
	k := key(prefix, 0)
	rev := mustCreate(t, s, k, "again")
	state[k] = storage.KV{Key: k, Value: []byte("again"), CreateRevision: rev, ModRevision: rev}
	record(rev)
	return snapshots
}

func testListPrefixAndOrder(t *testing.T, s storage.Interface) {
	for _, k := range []string{"/b/2", "/a/1", "/ab/1", "/b/1", "/a/0", "/a/"} {
		mustCreate(t, s, k, k)
	}
	want := map[string][]string{
		"/a/": {"/a/", "/a/0", "/a/1"},
		"/a":  {"/a/", "/a/0", "/a/1", "/ab/1"},
		"/b/": {"/b/1", "/b/2"},
		"/c/": nil,
	}
	cur := mustCurrent(t, s)
	for prefix, keys := range want {
		resp := mustList(t, s, prefix, storage.ListOptions{})
		var got []string
		for _, kv := range resp.KVs {
			got = append(got, kv.Key)
			if string(kv.Value) != kv.Key {
				t.Errorf("List(%q): %s has value %q", prefix, kv.Key, kv.Value)
			}
		}
		if diff := cmp.Diff(keys, got); diff != "" {
			t.Errorf("List(%q) keys (-want +got):\n%s", prefix, diff)
		}
		if resp.Revision != cur || resp.Continue != "" {
			t.Errorf("List(%q): revision %d continue %q, want %d and none", prefix, resp.Revision, resp.Continue, cur)
		}
	}
}

func testListAtPastRevisions(t *testing.T, s storage.Interface) {
	snapshots := applyWrites(t, s, "/p/")
	mustCreate(t, s, "/q/other", "outside the prefix")
	for _, rev := range slices.Sorted(maps.Keys(snapshots)) {
		for _, limit := range []int64{0, 1, 4} {
			got, listRev := listAll(t, s, "/p/", storage.ListOptions{Revision: rev, Limit: limit})
			if listRev != rev {
				t.Errorf("List at %d (limit %d) says it read at %d", rev, limit, listRev)
			}
			if diff := cmp.Diff(snapshots[rev].list("/p/"), got); diff != "" {
				t.Errorf("List at %d, limit %d (-want +got):\n%s", rev, limit, diff)
			}
		}
	}
}

func testListFutureRevision(t *testing.T, s storage.Interface) {
	rev := mustCreate(t, s, "/a/k", "v")
	_, err := s.List(ctxFor(t), "/a/", storage.ListOptions{Revision: rev + 1000})
	expectErr(t, "List at a future revision", err, storage.ErrFutureRevision)
}

func testListPagination(t *testing.T, s storage.Interface) {
	want := model{}
	for i := range 23 {
		k := key("/pg/", i)
		rev := mustCreate(t, s, k, "v")
		want[k] = storage.KV{Key: k, Value: []byte("v"), CreateRevision: rev, ModRevision: rev}
	}
	for _, limit := range []int64{1, 5, 22, 23, 24, 100} {
		got, _ := listAll(t, s, "/pg/", storage.ListOptions{Limit: limit})
		if diff := cmp.Diff(want.list("/pg/"), got); diff != "" {
			t.Errorf("paginated with limit %d (-want +got):\n%s", limit, diff)
		}
	}
	first := mustList(t, s, "/pg/", storage.ListOptions{Limit: 23})
	if first.Continue != "" {
		t.Errorf("a page holding the last key has continue %q", first.Continue)
	}
}

func testListPaginationStableUnderWrites(t *testing.T, s storage.Interface) {
	for i := range 60 {
		mustCreate(t, s, key("/st/", 2*i), "v")
	}
	before := mustList(t, s, "/st/", storage.ListOptions{})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { churn(t, s, "/st/", stop) })
	first := mustList(t, s, "/st/", storage.ListOptions{Revision: before.Revision, Limit: 7})
	got := first.KVs
	for next := first.Continue; next != ""; {
		page := mustList(t, s, "/st/", storage.ListOptions{Limit: 7, Continue: next})
		if page.Revision != before.Revision {
			t.Errorf("page read at %d, want %d", page.Revision, before.Revision)
		}
		got = append(got, page.KVs...)
		next = page.Continue
		mustCreate(t, s, fmt.Sprintf("/st/between-pages-%d", len(got)), "v")
	}
	close(stop)
	wg.Wait()
	if diff := cmp.Diff(before.KVs, got); diff != "" {
		t.Errorf("pages read while others wrote (-want +got):\n%s", diff)
	}
}

// churn creates, updates and deletes keys under prefix until stop is closed.
func churn(t testing.TB, s storage.Interface, prefix string, stop <-chan struct{}) {
	ctx := ctxFor(t)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := s.Create(ctx, key(prefix, 2*i+1), []byte("new")); err != nil {
			t.Errorf("churn create: %v", err)
			return
		}
		if _, err := s.Update(ctx, key(prefix, 2*(i%60)), 0, []byte("changed")); err != nil {
			t.Errorf("churn update: %v", err)
			return
		}
		if i%3 == 0 {
			if _, _, err := s.Delete(ctx, key(prefix, 2*i+1), 0); err != nil {
				t.Errorf("churn delete: %v", err)
				return
			}
		}
	}
}
