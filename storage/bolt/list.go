package bolt

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/listwatch/listwatch/storage"
)

// List returns the KVs under prefix in key order, at opts.Revision (0: now)
// or at the revision of the continue token.
//
// A list at a past revision r starts from the current state and undoes, for
// each key under the prefix, the events after r: the first event after r of a
// key carries the key's state at r as its PrevKV (none: the key was absent).
// Its cost therefore grows with the history written since r.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResponse, error) {
	q, err := newListQuery(prefix, opts)
	if err != nil {
		return storage.ListResponse{}, err
	}
	var resp storage.ListResponse
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		resp, err = q.run(ctx, tx)
		return err
	})
	return resp, err
}

// listQuery is a validated List call.
type listQuery struct {
	prefix string
	start  string // first key to return, at or after prefix
	rev    int64  // revision to read at; 0: current
	limit  int    // 0: none
}

func newListQuery(prefix string, opts storage.ListOptions) (listQuery, error) {
	if err := storage.ValidatePrefix(prefix); err != nil {
		return listQuery{}, err
	}
	if err := storage.ValidateRevision(opts.Revision); err != nil {
		return listQuery{}, err
	}
	if opts.Limit < 0 {
		return listQuery{}, fmt.Errorf("%w: negative limit %d", storage.ErrInvalidArgument, opts.Limit)
	}
	q := listQuery{prefix: prefix, start: prefix, rev: opts.Revision, limit: int(min(opts.Limit, int64(maxInt)))}
	if opts.Continue != "" {
		rev, start, err := storage.DecodeContinue(prefix, opts.Continue)
		if err != nil {
			return listQuery{}, err
		}
		q.rev, q.start = rev, start
	}
	return q, nil
}

const (
	maxInt = int(^uint(0) >> 1)
	// ctxCheckInterval is how many history records a list undoes between
	// checks of its context: often enough to stop within a millisecond.
	ctxCheckInterval = 1024
)

// run reads the page in tx.
func (q listQuery) run(ctx context.Context, tx *bbolt.Tx) (storage.ListResponse, error) {
	cur, compacted, err := readMeta(tx)
	if err != nil {
		return storage.ListResponse{}, err
	}
	rev := q.rev
	switch {
	case rev == 0:
		rev = cur
	case rev > cur:
		return storage.ListResponse{}, fmt.Errorf("list at %d, current revision %d: %w", rev, cur, storage.ErrFutureRevision)
	case rev < compacted:
		return storage.ListResponse{}, fmt.Errorf("list at %d, compacted at %d: %w", rev, compacted, storage.ErrCompacted)
	}
	past, err := q.undo(ctx, tx.Bucket(bucketHistory), rev)
	if err != nil {
		return storage.ListResponse{}, err
	}
	kvs, next, err := q.merge(tx.Bucket(bucketKV).Cursor(), past)
	if err != nil {
		return storage.ListResponse{}, err
	}
	resp := storage.ListResponse{KVs: kvs, Revision: rev}
	if next != "" {
		resp.Continue = storage.EncodeContinue(q.prefix, rev, next)
	}
	return resp, nil
}

// pastState is the state at the list revision of a key changed since: kv is
// nil when the key was absent then.
type pastState struct {
	key string
	kv  *storage.KV
}

// undo returns, sorted by key, the state at rev of every key in range that
// the events after rev changed.
func (q listQuery) undo(ctx context.Context, history *bbolt.Bucket, rev int64) ([]pastState, error) {
	seen := map[string]bool{}
	var past []pastState
	c := history.Cursor()
	n := 0
	for k, v := c.Seek(revKey(rev + 1)); k != nil; k, v = c.Next() {
		if n++; n%ctxCheckInterval == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		key, err := eventKey(v)
		if err != nil {
			return nil, err
		}
		if !q.inRange(key) || seen[string(key)] {
			continue
		}
		evRev, err := decodeRev(k)
		if err != nil {
			return nil, err
		}
		ev, err := decodeEvent(evRev, v)
		if err != nil {
			return nil, err
		}
		seen[ev.KV.Key] = true
		past = append(past, pastState{key: ev.KV.Key, kv: ev.PrevKV})
	}
	slices.SortFunc(past, func(a, b pastState) int { return strings.Compare(a.key, b.key) })
	return past, nil
}

func (q listQuery) inRange(key []byte) bool {
	return bytes.HasPrefix(key, []byte(q.prefix)) && string(key) >= q.start
}

// merge walks the current state from q.start and the past states together,
// the past state of a key replacing its current one. It returns up to
// q.limit KVs and the key that starts the next page ("" if none).
func (q listQuery) merge(c *bbolt.Cursor, past []pastState) ([]storage.KV, string, error) {
	var kvs []storage.KV
	k, v := c.Seek([]byte(q.start))
	for {
		if k != nil && !bytes.HasPrefix(k, []byte(q.prefix)) {
			k = nil
		}
		if k == nil && len(past) == 0 {
			return kvs, "", nil
		}
		var kv *storage.KV
		var key string
		switch {
		case len(past) > 0 && (k == nil || past[0].key <= string(k)):
			key, kv = past[0].key, past[0].kv
			if k != nil && past[0].key == string(k) {
				k, v = c.Next()
			}
			past = past[1:]
		default:
			cur, err := decodeKV(string(k), v)
			if err != nil {
				return nil, "", err
			}
			key, kv = cur.Key, &cur
			k, v = c.Next()
		}
		if kv == nil {
			continue
		}
		if q.limit > 0 && len(kvs) == q.limit {
			return kvs, key, nil
		}
		kvs = append(kvs, *kv)
	}
}
