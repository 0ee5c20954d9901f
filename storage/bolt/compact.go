package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/listwatch/listwatch/storage"
)

// compactChunk is how many history records one write transaction deletes
// while compacting: compaction never holds the write lock for long, so
// writes interleave with it.
const compactChunk = 10000

// errNoop ends the transaction of a compaction that has nothing to record.
var errNoop = errors.New("no-op")

// Compact discards the history at and below revision. It first records the
// compaction revision (from then on reads below it fail with
// storage.ErrCompacted), then deletes the records in chunks. If ctx ends or
// the store closes during the deletion, the records left behind are invisible
// and the next Compact deletes them.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := storage.ValidateRevision(revision); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	compacted, err := s.recordCompaction(revision)
	if err != nil {
		return err
	}
	s.compacted.Store(compacted)
	return s.deleteHistory(ctx, compacted)
}

// recordCompaction raises the compaction revision to rev and returns the
// compaction revision now in force.
func (s *Store) recordCompaction(rev int64) (int64, error) {
	var compacted int64
	err := s.db.Update(func(tx *bbolt.Tx) error {
		cur, old, err := readMeta(tx)
		if err != nil {
			return err
		}
		if rev > cur {
			return fmt.Errorf("compact at %d, current revision %d: %w", rev, cur, storage.ErrFutureRevision)
		}
		compacted = max(old, rev)
		if rev <= old {
			return errNoop
		}
		if err := tx.Bucket(bucketMeta).Put(metaCompacted, revKey(rev)); err != nil {
			return fmt.Errorf("bolt: write compaction revision: %w", err)
		}
		return nil
	})
	if errors.Is(err, errNoop) {
		return compacted, nil
	}
	return compacted, err
}

// deleteHistory deletes the history records at and below rev, compactChunk
// per transaction.
func (s *Store) deleteHistory(ctx context.Context, rev int64) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case <-s.stop:
			return storage.ErrClosed
		default:
		}
		more, err := s.deleteChunk(rev)
		if err != nil || !more {
			return err
		}
	}
}

// deleteChunk deletes up to compactChunk records at and below rev and
// reports whether any may remain. It checks in a read transaction first, so
// that a compaction with nothing left to delete costs no commit.
func (s *Store) deleteChunk(rev int64) (more bool, err error) {
	var pending bool
	if err := s.db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketHistory).Cursor().First()
		pending = k != nil && string(k) <= string(revKey(rev))
		return nil
	}); err != nil || !pending {
		return false, err
	}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketHistory).Cursor()
		n := 0
		for k, _ := c.First(); k != nil && string(k) <= string(revKey(rev)); k, _ = c.First() {
			if n == compactChunk {
				more = true
				return nil
			}
			if err := c.Delete(); err != nil {
				return fmt.Errorf("bolt: delete history: %w", err)
			}
			n++
		}
		return nil
	})
	return more, err
}
