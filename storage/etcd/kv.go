package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/storage"
)

// Create stores value at key if the key is absent.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := s.checkWrite(key, value); err != nil {
		return 0, fmt.Errorf("etcd: create: %w", err)
	}
	k := s.key(key)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd: create %q: %w", key, s.mapErr(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcd: create %q: %w", key, storage.ErrKeyExists)
	}
	return resp.Header.Revision, nil
}

// Get returns key's current state.
func (s *Store) Get(ctx context.Context, key string) (storage.KV, error) {
	if err := s.checkKey(key); err != nil {
		return storage.KV{}, fmt.Errorf("etcd: get: %w", err)
	}
	resp, err := s.cli.Get(ctx, s.key(key))
	if err != nil {
		return storage.KV{}, fmt.Errorf("etcd: get %q: %w", key, s.mapErr(err))
	}
	if len(resp.Kvs) == 0 {
		return storage.KV{}, fmt.Errorf("etcd: get %q: %w", key, storage.ErrNotFound)
	}
	return s.kv(resp.Kvs[0]), nil
}

// Update replaces key's value if its ModRevision is expected (0: if it exists).
func (s *Store) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	if err := s.checkWrite(key, value); err != nil {
		return 0, fmt.Errorf("etcd: update: %w", err)
	}
	if err := storage.ValidateRevision(expected); err != nil {
		return 0, fmt.Errorf("etcd: update %q: %w", key, err)
	}
	k := s.key(key)
	resp, err := s.cli.Txn(ctx).
		If(matches(k, expected)).
		Then(clientv3.OpPut(k, string(value))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcd: update %q: %w", key, s.mapErr(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcd: update: %w", s.mismatch(key, expected, resp))
	}
	return resp.Header.Revision, nil
}

// Delete removes key if its ModRevision is expected (0: if it exists).
func (s *Store) Delete(ctx context.Context, key string, expected int64) (storage.KV, int64, error) {
	if err := s.checkKey(key); err != nil {
		return storage.KV{}, 0, fmt.Errorf("etcd: delete: %w", err)
	}
	if err := storage.ValidateRevision(expected); err != nil {
		return storage.KV{}, 0, fmt.Errorf("etcd: delete %q: %w", key, err)
	}
	k := s.key(key)
	resp, err := s.cli.Txn(ctx).
		If(matches(k, expected)).
		Then(clientv3.OpDelete(k, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return storage.KV{}, 0, fmt.Errorf("etcd: delete %q: %w", key, s.mapErr(err))
	}
	if !resp.Succeeded {
		return storage.KV{}, 0, fmt.Errorf("etcd: delete: %w", s.mismatch(key, expected, resp))
	}
	prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs()
	if len(prev) == 0 {
		return storage.KV{}, 0, fmt.Errorf("etcd: delete %q: etcd returned no previous value", key)
	}
	return s.kv(prev[0]), resp.Header.Revision, nil
}

// matches is the condition of a conditional write: key's ModRevision is
// expected or, for expected 0, key exists.
func matches(key string, expected int64) clientv3.Cmp {
	if expected == 0 {
		return clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", expected)
}

// mismatch explains a failed conditional write from the read in its Else
// branch: the key is absent, or a *storage.ConflictError with its state.
func (s *Store) mismatch(key string, expected int64, resp *clientv3.TxnResponse) error {
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return fmt.Errorf("%q: %w", key, storage.ErrNotFound)
	}
	return &storage.ConflictError{Key: key, Expected: expected, Current: s.kv(kvs[0])}
}

// List reads the KVs under prefix at one revision, a page at a time.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResponse, error) {
	rev, start, err := s.listStart(prefix, opts)
	if err != nil {
		return storage.ListResponse{}, fmt.Errorf("etcd: list: %w", err)
	}
	ops := []clientv3.OpOption{
		clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.key(prefix))),
		clientv3.WithRev(rev),
	}
	if opts.Limit > 0 && opts.Limit < math.MaxInt64 {
		// One more than asked names the next page's first key.
		ops = append(ops, clientv3.WithLimit(opts.Limit+1))
	}
	resp, err := s.cli.Get(ctx, s.key(start), ops...)
	if err != nil {
		return storage.ListResponse{}, fmt.Errorf("etcd: list %q at revision %d: %w", prefix, rev, s.mapErr(err))
	}
	if rev == 0 {
		rev = resp.Header.Revision
	}
	out := storage.ListResponse{Revision: rev}
	kvs := resp.Kvs
	if opts.Limit > 0 && int64(len(kvs)) > opts.Limit {
		out.Continue = storage.EncodeContinue(prefix, rev, s.kv(kvs[opts.Limit]).Key)
		kvs = kvs[:opts.Limit]
	}
	out.KVs = make([]storage.KV, len(kvs))
	for i, kv := range kvs {
		out.KVs[i] = s.kv(kv)
	}
	return out, nil
}

// listStart validates a List call and returns the revision to read at (0:
// the current one) and the key to start from.
func (s *Store) listStart(prefix string, opts storage.ListOptions) (rev int64, start string, err error) {
	if err := s.checkOpen(); err != nil {
		return 0, "", err
	}
	if err := storage.ValidatePrefix(prefix); err != nil {
		return 0, "", err
	}
	if opts.Limit < 0 {
		return 0, "", fmt.Errorf("%w: negative limit %d", storage.ErrInvalidArgument, opts.Limit)
	}
	if opts.Continue != "" {
		return storage.DecodeContinue(prefix, opts.Continue)
	}
	if err := storage.ValidateRevision(opts.Revision); err != nil {
		return 0, "", err
	}
	return opts.Revision, prefix, nil
}

// CurrentRevision returns the cluster's revision, read from the header of a
// count of one key.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, fmt.Errorf("etcd: current revision: %w", err)
	}
	resp, err := s.cli.Get(ctx, s.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd: current revision: %w", s.mapErr(err))
	}
	return resp.Header.Revision, nil
}

// Compact discards the cluster's history before rev.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := s.checkOpen(); err != nil {
		return fmt.Errorf("etcd: compact: %w", err)
	}
	if err := storage.ValidateRevision(rev); err != nil {
		return fmt.Errorf("etcd: compact: %w", err)
	}
	if rev == 0 {
		return nil // nothing precedes revision 0
	}
	_, err := s.cli.Compact(ctx, rev)
	switch err := s.mapErr(err); {
	case err == nil, errors.Is(err, storage.ErrCompacted):
		return nil // at or below the compaction revision: nothing to do
	default:
		return fmt.Errorf("etcd: compact at %d: %w", rev, err)
	}
}

// checkKey returns the error of a call on key: ErrClosed or an invalid key.
func (s *Store) checkKey(key string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return storage.ValidateKey(key)
}

// checkWrite is checkKey for a write of value.
func (s *Store) checkWrite(key string, value []byte) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	return storage.ValidateValue(value)
}
