package etcdstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/etcd"
	"github.com/listwatch/listwatch/storage/storagetest"
	"github.com/listwatch/listwatch/test/interop"
)

// waitTimeout bounds every wait for a watch event: a deadline, never a sleep.
const waitTimeout = 30 * time.Second

// newEtcdStore returns a store on an etcd of its own: compaction is
// cluster-wide, so stores that share a member do not have histories of their own.
func newEtcdStore(t testing.TB) *etcd.Store {
	return storeOn(t, interop.RunEtcd(t), "/test")
}

// storeOn returns a store on cli under prefix, closed when t ends.
func storeOn(t testing.TB, cli *clientv3.Client, prefix string) *etcd.Store {
	s := etcd.NewFromClient(cli, prefix)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Interface { return newEtcdStore(t) })
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestEtcdKeyLayout checks that keys live under the prefix in etcd, come back
// without it, and that stores under other prefixes, and other writers, stay apart.
func TestEtcdKeyLayout(t *testing.T) {
	cli := interop.RunEtcd(t)
	ctx := testCtx(t)
	a := storeOn(t, cli, "/a/") // the trailing "/" is dropped
	b := storeOn(t, cli, "/b")
	w, err := a.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := a.Create(ctx, "/registry/pods/ns/x", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cli.Get(ctx, "/a/registry/pods/ns/x")
	if err != nil || len(raw.Kvs) != 1 || string(raw.Kvs[0].Value) != "v" {
		t.Fatalf("raw etcd key: %v, %v", raw, err)
	}
	if _, err := cli.Put(ctx, "/ab/registry/foreign", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/registry/pods/ns/x", []byte("other")); err != nil {
		t.Fatalf("same key under another prefix: %v", err)
	}
	list, err := a.List(ctx, "/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.KV{{Key: "/registry/pods/ns/x", Value: []byte("v"), CreateRevision: rev, ModRevision: rev}}
	if diff := cmp.Diff(want, list.KVs); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if list.Revision != rev+2 {
		t.Errorf("List revision %d, want %d: other writers share the revision counter", list.Revision, rev+2)
	}
	// The watch sees only its own write, though it was opened first.
	mustCreate(t, a, "/registry/last", "v")
	got := storagetest.Collect(t, w, 2)
	if got[0].KV.Key != "/registry/pods/ns/x" || got[1].KV.Key != "/registry/last" {
		t.Errorf("watch delivered %v", storagetest.RecordsOf([][]storage.Event{got}))
	}
}

func mustCreate(t testing.TB, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(testCtx(t), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

// TestEtcdConflictCarriesCurrent checks that a failed CAS reports the key's
// current state, read in the same transaction.
func TestEtcdConflictCarriesCurrent(t *testing.T) {
	s := newEtcdStore(t)
	ctx := testCtx(t)
	c := mustCreate(t, s, "/k", "v1")
	u, err := s.Update(ctx, "/k", c, []byte("v2"))
	if err != nil {
		t.Fatal(err)
	}
	current := storage.KV{Key: "/k", Value: []byte("v2"), CreateRevision: c, ModRevision: u}
	_, err = s.Update(ctx, "/k", c, []byte("v3"))
	checkConflict(t, "Update", err, &storage.ConflictError{Key: "/k", Expected: c, Current: current})
	_, _, err = s.Delete(ctx, "/k", c)
	checkConflict(t, "Delete", err, &storage.ConflictError{Key: "/k", Expected: c, Current: current})
	prev, d, err := s.Delete(ctx, "/k", u)
	if err != nil || d <= u {
		t.Fatalf("Delete(%d) = %v, %d, %v", u, prev, d, err)
	}
	if diff := cmp.Diff(current, prev); diff != "" {
		t.Errorf("deleted KV (-want +got):\n%s", diff)
	}
	_, err = s.Update(ctx, "/k", 0, []byte("v"))
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unconditional Update of an absent key: %v, want ErrNotFound", err)
	}
	_, err = s.Update(ctx, "/k", u, []byte("v"))
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("conditional Update of an absent key: %v, want ErrNotFound", err)
	}
}

func checkConflict(t *testing.T, op string, err error, want *storage.ConflictError) {
	t.Helper()
	var got *storage.ConflictError
	if !errors.As(err, &got) || !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("%s: %v, want a *storage.ConflictError", op, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s conflict (-want +got):\n%s", op, diff)
	}
}

// TestEtcdWatchTxnIsOneBatch checks that the events of one etcd transaction
// (written by another client) arrive together, at one revision.
func TestEtcdWatchTxnIsOneBatch(t *testing.T) {
	cli := interop.RunEtcd(t)
	s := storeOn(t, cli, "/test")
	ctx := testCtx(t)
	w, err := s.Watch(ctx, "/t/", 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Txn(ctx).Then(clientv3.OpPut("/test/t/a", "1"), clientv3.OpPut("/test/t/b", "2")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Header.Revision
	select {
	case batch := <-w.Events():
		want := storagetest.History{{Type: "PUT", Key: "/t/a", Revision: rev}, {Type: "PUT", Key: "/t/b", Revision: rev}}
		if diff := cmp.Diff([]storagetest.Record(want), storagetest.RecordsOf([][]storage.Event{batch})); diff != "" {
			t.Errorf("first batch (-want +got):\n%s", diff)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no batch")
	}
}

// TestEtcdPausedWatchFallsBehindCompaction checks the slow-reader policy: a
// watch whose queue is full stops its etcd watch, and ends with ErrCompacted
// when it resumes from a revision compacted meanwhile, after delivering the
// events it had queued.
func TestEtcdPausedWatchFallsBehindCompaction(t *testing.T) {
	cli := interop.RunEtcd(t)
	const backlog = 4
	s, err := etcd.New(etcd.Config{Endpoints: cli.Endpoints(), WatchBacklog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := testCtx(t)
	w, err := s.Watch(ctx, "/p/", 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := s.Watch(ctx, "/p/", 0)
	if err != nil {
		t.Fatal(err)
	}
	// A first event read makes w's etcd watch current: it then gets one
	// response per write, rather than the whole history in one catch-up response.
	mustCreate(t, s, "/p/first", "v")
	storagetest.Collect(t, w, 1)
	storagetest.Collect(t, fast, 1)
	var last int64
	for i := range 20 * backlog {
		last = mustCreate(t, s, fmt.Sprintf("/p/%03d", i), "v")
	}
	// Once fast has every event, etcd has sent w's on the same stream too, so
	// w's goroutine holds its backlog and has paused.
	storagetest.Collect(t, fast, 20*backlog)
	if err := s.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	n := 0
	for batch := range w.Events() {
		n += len(batch)
	}
	if !errors.Is(w.Err(), storage.ErrCompacted) {
		t.Errorf("Err = %v after %d events, want ErrCompacted", w.Err(), n)
	}
	if n < backlog || n >= 20*backlog {
		t.Errorf("delivered %d events, want the %d+ queued before the pause and not all %d", n, backlog, 20*backlog)
	}
}

// TestEtcdWatchOrderAcrossPauses checks that a reader slower than the backlog
// gets every event exactly once, in order, across many pauses.
func TestEtcdWatchOrderAcrossPauses(t *testing.T) {
	cli := interop.RunEtcd(t)
	s, err := etcd.New(etcd.Config{Endpoints: cli.Endpoints(), WatchBacklog: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := testCtx(t)
	w, err := s.Watch(ctx, "/o/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var history storagetest.History
	for i := range 50 {
		k := fmt.Sprintf("/o/%d", i%5)
		rev, err := s.Update(ctx, k, 0, []byte("v"))
		typ := "PUT"
		if errors.Is(err, storage.ErrNotFound) {
			rev, err = s.Create(ctx, k, []byte("v"))
		}
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, storagetest.Record{Type: typ, Key: k, Revision: rev})
	}
	got := storagetest.RecordsOf([][]storage.Event{storagetest.Collect(t, w, len(history))})
	if err := storagetest.ValidateWatch(history, 0, got, true); err != nil {
		t.Error(err)
	}
}

// TestEtcdCompactFromZero checks the boundaries of Compact and of a watch
// from 0, which etcd starts at its empty revision 1.
func TestEtcdCompactFromZero(t *testing.T) {
	s := newEtcdStore(t)
	ctx := testCtx(t)
	first := mustCreate(t, s, "/z/a", "v")
	if err := s.Compact(ctx, first-1); err != nil { // etcd's revision 1: nothing is lost
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/z/", 0)
	if err != nil {
		t.Fatalf("Watch from 0 after compacting nothing: %v", err)
	}
	if got := storagetest.Collect(t, w, 1); got[0].Revision != first || !got[0].IsCreate() {
		t.Errorf("Watch from 0 delivered %v", storagetest.RecordsOf([][]storage.Event{got}))
	}
	if err := s.Compact(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, from := range []int64{0, first - 1} {
		if _, err := s.Watch(ctx, "/z/", from); !errors.Is(err, storage.ErrCompacted) {
			t.Errorf("Watch from %d after Compact(%d): %v, want ErrCompacted", from, first, err)
		}
	}
	if err := s.Compact(ctx, first); err != nil {
		t.Errorf("Compact at the compaction revision: %v, want nil", err)
	}
	if err := s.Compact(ctx, 0); err != nil {
		t.Errorf("Compact(0): %v, want nil", err)
	}
	if err := s.Compact(ctx, first+1); !errors.Is(err, storage.ErrFutureRevision) {
		t.Errorf("Compact above the current revision: %v, want ErrFutureRevision", err)
	}
}

// TestEtcdNew checks the constructor that dials: defaults, a failed first
// contact, bad TLS files, and Close closing the client it opened.
func TestEtcdNew(t *testing.T) {
	cli := interop.RunEtcd(t)
	ctx := testCtx(t)
	s, err := etcd.New(etcd.Config{Endpoints: cli.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/k", "v")
	if raw, err := cli.Get(ctx, etcd.DefaultPrefix+"/k"); err != nil || len(raw.Kvs) != 1 {
		t.Errorf("key under the default prefix: %v, %v", raw, err)
	}
	if !watchRunning() {
		t.Fatal("no watch goroutine in the stacks of a live watch")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := storagetest.WaitEnd(t, w); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("watch after Close: %v, want ErrClosed", err)
	}
	// Close waits for the goroutines of watches (every earlier test closed its stores).
	if watchRunning() {
		t.Error("a watch goroutine outlived Close")
	}
	if _, err := s.CurrentRevision(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("CurrentRevision after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Watch(ctx, "/", 0); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}

	ports, err := interop.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = etcd.New(etcd.Config{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", ports[0])}, DialTimeout: 200 * time.Millisecond})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Errorf("New on a closed port: %v after %v, want an error within the dial timeout", err, time.Since(start))
	}
	_, err = etcd.New(etcd.Config{Endpoints: cli.Endpoints(), TLS: etcd.TLSConfig{CAFile: t.TempDir() + "/missing.pem"}})
	if err == nil {
		t.Error("New with a missing CA file: no error")
	}
}

// watchRunning reports whether any goroutine is in a watch's loop.
func watchRunning() bool {
	stacks := make([]byte, 1<<22)
	stacks = stacks[:runtime.Stack(stacks, true)]
	return bytes.Contains(stacks, []byte("storage/etcd.(*watch).run"))
}

// TestEtcdRequestTooLarge checks that a value a cluster refuses for its size
// (here, etcd's default request limit, which leaves no room for the key) is
// ErrValueTooLarge.
func TestEtcdRequestTooLarge(t *testing.T) {
	cli := interop.RunEtcd(t, func(cfg *embed.Config) { cfg.MaxRequestBytes = embed.DefaultMaxRequestBytes })
	s := storeOn(t, cli, "/test")
	_, err := s.Create(testCtx(t), "/big", make([]byte, storage.MaxValueSize))
	if !errors.Is(err, storage.ErrValueTooLarge) {
		t.Errorf("Create of %d bytes on a default etcd: %v, want ErrValueTooLarge", storage.MaxValueSize, err)
	}
}

// TestEtcdProgressPerWatch checks that one watch's progress does not wait for
// another's: etcd answers a progress request only when every watch on its
// gRPC stream is current, which a watch from a future revision never is.
func TestEtcdProgressPerWatch(t *testing.T) {
	s := newEtcdStore(t)
	ctx := testCtx(t)
	now, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Watch(ctx, "/future/", now+1_000_000); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/a/", now)
	if err != nil {
		t.Fatal(err)
	}
	pw := w.(storage.ProgressWatcher)
	rev := mustCreate(t, s, "/elsewhere", "v")
	testwait.UntilNil(t, waitTimeout, fmt.Sprintf("Progress() to reach %d", rev), func() error {
		if p := pw.Progress(); p < rev {
			if err := pw.RequestProgress(ctx); err != nil {
				t.Fatal(err)
			}
			return fmt.Errorf("Progress() = %d", p)
		}
		return nil
	})
}
