package follow_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/storage/memory"
)

// view records what a Follower applies and signals each change.
type view struct {
	mu      sync.Mutex
	state   map[string]string
	changed chan string
}

func (v *view) apply(key string, _ int64, value []byte) {
	v.mu.Lock()
	if value == nil {
		delete(v.state, key)
	} else {
		v.state[key] = string(value)
	}
	v.mu.Unlock()
	select {
	case v.changed <- key:
	default:
	}
}

func (v *view) get(key string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.state[key]
	return s, ok
}

// waitFor waits until the view's value of key is want ("" for absent).
func (v *view) waitFor(t *testing.T, key, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got, _ := v.get(key); got == want {
			return
		}
		select {
		case <-v.changed:
		case <-deadline:
			got, _ := v.get(key)
			t.Fatalf("%s: got %q, want %q", key, got, want)
		}
	}
}

func TestFollowerLoadsFollowsAndRefreshes(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	if _, err := store.Create(ctx, "/p/a", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, "/other/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	v := &view{state: map[string]string{}, changed: make(chan string, 1)}
	f, err := follow.Start(ctx, store, "/p/", "things", v.apply, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if got, ok := v.get("/p/a"); !ok || got != "a1" {
		t.Fatalf("after Start: /p/a = %q, %v", got, ok)
	}
	if _, ok := v.get("/other/x"); ok {
		t.Fatal("a key outside the prefix was applied")
	}

	// Written by another server: the watch brings it.
	rev, err := store.Create(ctx, "/p/b", []byte("b1"))
	if err != nil {
		t.Fatal(err)
	}
	v.waitFor(t, "/p/b", "b1")

	// Written through this server: Refresh has it before it returns.
	if _, err := store.Update(ctx, "/p/b", rev, []byte("b2")); err != nil {
		t.Fatal(err)
	}
	if gone, err := f.Refresh(ctx, "/p/b"); err != nil || gone {
		t.Fatalf("Refresh: %v %v", gone, err)
	}
	if got, _ := v.get("/p/b"); got != "b2" {
		t.Fatalf("after Refresh: /p/b = %q, want b2", got)
	}
	kv, err := store.Get(ctx, "/p/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Delete(ctx, "/p/a", kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if gone, err := f.Refresh(ctx, "/p/a"); err != nil || !gone {
		t.Fatalf("Refresh of a deleted key: %v %v", gone, err)
	}
	if _, ok := v.get("/p/a"); ok {
		t.Fatal("a deleted key is still in the view after Refresh")
	}
	// The watch's events for writes Refresh applied change nothing: a
	// later write still arrives after them.
	if _, err := store.Create(ctx, "/p/c", []byte("c1")); err != nil {
		t.Fatal(err)
	}
	v.waitFor(t, "/p/c", "c1")
	if got, _ := v.get("/p/b"); got != "b2" {
		t.Fatalf("/p/b = %q after the watch caught up, want b2", got)
	}
	if _, ok := v.get("/p/a"); ok {
		t.Fatal("/p/a came back")
	}
}

// TestFollowerOnAnEmptyStore: a store without a write yet is at revision
// 0, which the watch follows from (no relist, which would leave a second
// without changes).
func TestFollowerOnAnEmptyStore(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	v := &view{state: map[string]string{}, changed: make(chan string, 1)}
	logs := &lockedBuffer{}
	f, err := follow.Start(ctx, store, "/p/", "things", v.apply, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	if _, err := store.Create(ctx, "/p/a", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	v.waitFor(t, "/p/a", "a1")
	if s := logs.String(); s != "" {
		t.Errorf("the follower logged:\n%s", s)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// TestFollowerForgetsDeletedKeys: keys created and deleted take no memory
// once the watch has delivered their deletion, and a refresh of one then
// brings no stale state back.
func TestFollowerForgetsDeletedKeys(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	v := &view{state: map[string]string{}, changed: make(chan string, 1)}
	f, err := follow.Start(ctx, store, "/p/", "things", v.apply, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		key := fmt.Sprintf("/p/%d", i)
		rev, err := store.Create(ctx, key, []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := store.Delete(ctx, key, rev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Create(ctx, "/p/last", []byte("v")); err != nil {
		t.Fatal(err)
	}
	v.waitFor(t, "/p/last", "v")
	if gone, err := f.Refresh(ctx, "/p/0"); err != nil || !gone {
		t.Fatalf("refresh of a deleted key: gone %v, %v", gone, err)
	}
	f.Close()
	if got := f.Remembered(); got > 2 {
		t.Errorf("the follower remembers %d keys after %d were created and deleted, want at most 2 (/p/last and the refreshed /p/0)", got, n)
	}
	if _, ok := v.get("/p/0"); ok {
		t.Error("a deleted key came back")
	}
}
