package registry

import (
	"context"
	"fmt"

	"github.com/listwatch/listwatch/storage"
)

type dryRunKey struct{}

// WithDryRun returns ctx marking the writes made with it as dry runs
// (dryRun=All): everything happens, checks and conflicts included, except
// that nothing is stored.
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

// Detached returns ctx without its values (a request's dry run and
// admission), keeping its deadline and cancellation: for the writes a
// request makes on the server's behalf (an allocation, a missing default
// account), which are plain writes of the server.
func Detached(ctx context.Context) context.Context { return valuesOff{ctx} }

type valuesOff struct{ context.Context }

func (valuesOff) Value(any) any { return nil }

// writer returns where a write made with ctx goes: the store, or for a dry
// run a view of it that checks and does not write.
func (r *Registry) writer(ctx context.Context) storage.Interface {
	if IsDryRun(ctx) {
		return dryRunStore{r.store}
	}
	return r.store
}

// dryRunStore answers writes as the store would, without making them. The
// revisions it gives are what kube's DryRunnableStorage answers: none for a
// create (0), the object's own for an update or a delete.
type dryRunStore struct{ storage.Interface }

func (d dryRunStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if _, err := d.Get(ctx, key); err == nil {
		return 0, fmt.Errorf("dry-run create %q: %w", key, storage.ErrKeyExists)
	}
	return 0, storage.ValidateValue(value)
}

func (d dryRunStore) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	kv, err := d.check(ctx, key, expected)
	if err != nil {
		return 0, err
	}
	return kv.ModRevision, storage.ValidateValue(value)
}

func (d dryRunStore) Delete(ctx context.Context, key string, expected int64) (storage.KV, int64, error) {
	kv, err := d.check(ctx, key, expected)
	if err != nil {
		return storage.KV{}, 0, err
	}
	return kv, kv.ModRevision, nil
}

// check returns key's KV if it exists and is at expected (0: any).
func (d dryRunStore) check(ctx context.Context, key string, expected int64) (storage.KV, error) {
	kv, err := d.Get(ctx, key)
	if err != nil {
		return storage.KV{}, err
	}
	if expected != 0 && kv.ModRevision != expected {
		return storage.KV{}, &storage.ConflictError{Key: key, Expected: expected, Current: kv}
	}
	return kv, nil
}
