package storagetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/storage"
)

func testCreateGet(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	if _, err := s.Get(ctx, "/a/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of a missing key: got %v, want ErrNotFound", err)
	}
	rev := mustCreate(t, s, "/a/one", "v1")
	if rev <= 0 {
		t.Fatalf("Create returned revision %d, want > 0", rev)
	}
	got, err := s.Get(ctx, "/a/one")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := storage.KV{Key: "/a/one", Value: []byte("v1"), CreateRevision: rev, ModRevision: rev}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after Create (-want +got):\n%s", diff)
	}
	if cur := mustCurrent(t, s); cur != rev {
		t.Errorf("CurrentRevision = %d, want the last write's %d", cur, rev)
	}
}

func testCreateExisting(t *testing.T, s storage.Interface) {
	rev := mustCreate(t, s, "/a/one", "v1")
	_, err := s.Create(ctxFor(t), "/a/one", []byte("v2"))
	expectErr(t, "Create of an existing key", err, storage.ErrKeyExists)
	got, err := s.Get(ctxFor(t), "/a/one")
	if err != nil || string(got.Value) != "v1" || got.ModRevision != rev {
		t.Fatalf("after a failed Create: Get = %+v, %v; want v1 at %d", got, err, rev)
	}
	if cur := mustCurrent(t, s); cur != rev {
		t.Errorf("a failed Create moved the revision from %d to %d", rev, cur)
	}
}

func testRevisionsGrow(t *testing.T, s storage.Interface) {
	last := mustCurrent(t, s)
	check := func(op string, rev int64) {
		t.Helper()
		if rev <= last {
			t.Fatalf("%s returned revision %d, not above the previous %d", op, rev, last)
		}
		if cur := mustCurrent(t, s); cur != rev {
			t.Fatalf("after %s at %d, CurrentRevision = %d", op, rev, cur)
		}
		last = rev
	}
	for i := range 5 {
		check("Create", mustCreate(t, s, key("/r/", i), "x"))
	}
	check("Update", mustUpdate(t, s, key("/r/", 0), 0, "y"))
	check("Delete", mustDelete(t, s, key("/r/", 1)))
	check("Create", mustCreate(t, s, key("/r/", 1), "z"))
}

func testUpdateCAS(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	created := mustCreate(t, s, "/a/k", "v1")
	rev := mustUpdate(t, s, "/a/k", created, "v2")
	got, err := s.Get(ctx, "/a/k")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := storage.KV{Key: "/a/k", Value: []byte("v2"), CreateRevision: created, ModRevision: rev}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Get after Update (-want +got):\n%s", diff)
	}

	_, err = s.Update(ctx, "/a/k", created, []byte("stale"))
	var conflict *storage.ConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Update with a stale revision: got %v, want a *ConflictError matching ErrConflict", err)
	}
	if diff := cmp.Diff(want, conflict.Current); diff != "" {
		t.Errorf("ConflictError.Current (-want +got):\n%s", diff)
	}
	if cur := mustCurrent(t, s); cur != rev {
		t.Errorf("a failed Update moved the revision from %d to %d", rev, cur)
	}

	_, err = s.Update(ctx, "/a/missing", 0, []byte("x"))
	expectErr(t, "Update of a missing key", err, storage.ErrNotFound)
	_, err = s.Update(ctx, "/a/missing", 5, []byte("x"))
	expectErr(t, "conditional Update of a missing key", err, storage.ErrNotFound)
}

func testUpdateUnconditional(t *testing.T, s storage.Interface) {
	created := mustCreate(t, s, "/a/k", "v1")
	mustUpdate(t, s, "/a/k", created, "v2")
	rev := mustUpdate(t, s, "/a/k", 0, "v3")
	got, err := s.Get(ctxFor(t), "/a/k")
	if err != nil || string(got.Value) != "v3" || got.ModRevision != rev || got.CreateRevision != created {
		t.Fatalf("after an unconditional Update: %+v, %v; want v3 at %d created %d", got, err, rev, created)
	}
}

func testDeleteCAS(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	created := mustCreate(t, s, "/a/k", "v1")
	updated := mustUpdate(t, s, "/a/k", created, "v2")

	_, _, err := s.Delete(ctx, "/a/k", created)
	var conflict *storage.ConflictError
	if !errors.As(err, &conflict) || conflict.Current.ModRevision != updated || string(conflict.Current.Value) != "v2" {
		t.Fatalf("Delete with a stale revision: got %v, want a *ConflictError with the current KV", err)
	}

	deleted, rev, err := s.Delete(ctx, "/a/k", updated)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := storage.KV{Key: "/a/k", Value: []byte("v2"), CreateRevision: created, ModRevision: updated}
	if diff := cmp.Diff(want, deleted); diff != "" {
		t.Errorf("deleted KV (-want +got):\n%s", diff)
	}
	if rev <= updated {
		t.Errorf("Delete revision %d not above %d", rev, updated)
	}
	_, err = s.Get(ctx, "/a/k")
	expectErr(t, "Get after Delete", err, storage.ErrNotFound)
	_, _, err = s.Delete(ctx, "/a/k", 0)
	expectErr(t, "Delete of a missing key", err, storage.ErrNotFound)
	if cur := mustCurrent(t, s); cur != rev {
		t.Errorf("a failed Delete moved the revision from %d to %d", rev, cur)
	}
}

func testRecreateAfterDelete(t *testing.T, s storage.Interface) {
	mustCreate(t, s, "/a/k", "v1")
	mustDelete(t, s, "/a/k")
	rev := mustCreate(t, s, "/a/k", "v2")
	got, err := s.Get(ctxFor(t), "/a/k")
	if err != nil || got.CreateRevision != rev || got.ModRevision != rev {
		t.Fatalf("recreated key: %+v, %v; want created and modified at %d", got, err, rev)
	}
}

func testValuesAreCopies(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	in := []byte("original")
	mustCreate(t, s, "/a/k", string(in))
	buf := []byte("original")
	if _, err := s.Update(ctx, "/a/k", 0, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXX") // the caller reuses its buffer
	got, err := s.Get(ctx, "/a/k")
	if err != nil || string(got.Value) != "original" {
		t.Fatalf("the store kept the caller's buffer: %q, %v", got.Value, err)
	}
	copy(got.Value, "YYYYYYYY") // the caller scribbles on what it got
	again, err := s.Get(ctx, "/a/k")
	if err != nil || string(again.Value) != "original" {
		t.Fatalf("a returned value aliases the store: %q, %v", again.Value, err)
	}
}

func testMaxValueSize(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	big := bytes.Repeat([]byte("x"), storage.MaxValueSize)
	if _, err := s.Create(ctx, "/a/big", big); err != nil {
		t.Fatalf("Create of a value of exactly MaxValueSize: %v", err)
	}
	got, err := s.Get(ctx, "/a/big")
	if err != nil || !bytes.Equal(got.Value, big) {
		t.Fatalf("Get of the largest value: %d bytes, %v", len(got.Value), err)
	}
	before := mustCurrent(t, s)
	tooBig := append(big, 'x')
	_, err = s.Create(ctx, "/a/bigger", tooBig)
	expectErr(t, "Create over MaxValueSize", err, storage.ErrValueTooLarge)
	_, err = s.Update(ctx, "/a/big", 0, tooBig)
	expectErr(t, "Update over MaxValueSize", err, storage.ErrValueTooLarge)
	if cur := mustCurrent(t, s); cur != before {
		t.Errorf("rejected writes moved the revision from %d to %d", before, cur)
	}
}

func testInvalidArguments(t *testing.T, s storage.Interface) {
	ctx := ctxFor(t)
	rev := mustCreate(t, s, "/a/k", "v")
	badKeys := []string{"", "relative/key", "/nul\x00key", "/bad-utf8-\xff", "/" + strings.Repeat("k", storage.MaxKeySize)}
	for _, k := range badKeys {
		_, err := s.Create(ctx, k, []byte("v"))
		expectErr(t, "Create("+k+")", err, storage.ErrInvalidArgument)
		_, err = s.Get(ctx, k)
		expectErr(t, "Get("+k+")", err, storage.ErrInvalidArgument)
		_, err = s.Update(ctx, k, 0, []byte("v"))
		expectErr(t, "Update("+k+")", err, storage.ErrInvalidArgument)
		_, _, err = s.Delete(ctx, k, 0)
		expectErr(t, "Delete("+k+")", err, storage.ErrInvalidArgument)
		_, err = s.List(ctx, k, storage.ListOptions{})
		expectErr(t, "List("+k+")", err, storage.ErrInvalidArgument)
		_, err = s.Watch(ctx, k, 0)
		expectErr(t, "Watch("+k+")", err, storage.ErrInvalidArgument)
	}
	_, err := s.Update(ctx, "/a/k", -1, []byte("v"))
	expectErr(t, "Update with a negative revision", err, storage.ErrInvalidArgument)
	_, _, err = s.Delete(ctx, "/a/k", -1)
	expectErr(t, "Delete with a negative revision", err, storage.ErrInvalidArgument)
	_, err = s.List(ctx, "/a/", storage.ListOptions{Revision: -1})
	expectErr(t, "List at a negative revision", err, storage.ErrInvalidArgument)
	_, err = s.List(ctx, "/a/", storage.ListOptions{Limit: -1})
	expectErr(t, "List with a negative limit", err, storage.ErrInvalidArgument)
	for _, token := range []string{"garbage!", "e30", storage.EncodeContinue("/", 0, "/x")} {
		_, err = s.List(ctx, "/a/", storage.ListOptions{Continue: token})
		expectErr(t, "List with continue "+token, err, storage.ErrInvalidArgument)
	}
	_, err = s.Watch(ctx, "/a/", -1)
	expectErr(t, "Watch from a negative revision", err, storage.ErrInvalidArgument)
	got, err := s.Get(ctx, "/a/k")
	if err != nil || string(got.Value) != "v" || mustCurrent(t, s) != rev {
		t.Fatalf("rejected calls changed the store: %+v, %v", got, err)
	}
}
