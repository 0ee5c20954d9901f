package storage_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestCompactor checks both halves of the policy on a real (memory) store
// under a fake clock: nothing younger than KeepDuration and nothing within
// KeepRevisions of the current revision is ever compacted.
func TestCompactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := memory.New()
		defer s.Close()
		policy := storage.CompactionPolicy{KeepRevisions: 10, KeepDuration: 5 * time.Minute, Interval: time.Minute}
		c := storage.NewCompactor(s, policy)
		done := make(chan struct{})
		go func() { defer close(done); c.Run(ctx) }()
		defer func() { cancel(); <-done }()

		writeAt := map[int64]time.Time{} // revision -> when it was written
		for minute := range 20 {
			writes := 5 // a minute: time binds
			if minute >= 10 {
				writes = 1 // fewer than KeepRevisions in KeepDuration: revisions bind
			}
			for i := range writes {
				rev, err := s.Create(ctx, "/k/"+time.Duration(minute*5+i).String(), []byte("v"))
				if err != nil {
					t.Fatal(err)
				}
				writeAt[rev] = time.Now()
			}
			time.Sleep(time.Minute) // fake time: the compactor ticks
			synctest.Wait()
			cur, _ := s.CurrentRevision(ctx)
			compactedTo := firstListable(t, s, cur)
			if compactedTo == 1 {
				continue // nothing compacted yet
			}
			if compactedTo > cur-policy.KeepRevisions {
				t.Fatalf("minute %d: compacted to %d, but the last %d of %d revisions must stay", minute, compactedTo, policy.KeepRevisions, cur)
			}
			// The state before compactedTo ended when compactedTo was written.
			if age := time.Since(writeAt[compactedTo]); age < policy.KeepDuration {
				t.Fatalf("minute %d: compacted to %d, whose predecessor was current %v ago, within %v", minute, compactedTo, age, policy.KeepDuration)
			}
		}
		cur, _ := s.CurrentRevision(ctx)
		if firstListable(t, s, cur) == 1 {
			t.Fatalf("after 20 minutes nothing was compacted")
		}
	})
}

// firstListable returns the oldest revision List still accepts.
func firstListable(t *testing.T, s storage.Interface, cur int64) int64 {
	for rev := int64(1); rev <= cur; rev++ {
		if _, err := s.List(context.Background(), "/k/", storage.ListOptions{Revision: rev}); err == nil {
			return rev
		}
	}
	t.Fatalf("no revision up to %d can be listed", cur)
	return 0
}

// sharedStore is a memory store whose compaction several Compactors share
// through a record, as etcd's compact_rev_key; it notes when each
// compaction ran.
type sharedStore struct {
	*memory.Store
	mu        sync.Mutex
	version   int64 // guarded by mu
	recorded  int64 // guarded by mu
	compacted []time.Time
}

var _ storage.CompactionClaimer = (*sharedStore)(nil)

func (s *sharedStore) ClaimCompaction(_ context.Context, seen, rev int64) (bool, int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen != s.version {
		return false, s.version, s.recorded, nil
	}
	s.version++
	s.recorded = rev
	return true, s.version, s.recorded, nil
}

func (s *sharedStore) Compact(ctx context.Context, rev int64) error {
	s.mu.Lock()
	s.compacted = append(s.compacted, time.Now())
	s.mu.Unlock()
	return s.Store.Compact(ctx, rev)
}

// TestCompactorsShareRounds runs three Compactors, started at different
// times, on one store that coordinates them: together they compact once
// per interval, never twice within one, and keep compacting when the one
// that compacted stops.
func TestCompactorsShareRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sharedStore{Store: memory.New()}
		defer s.Close()
		policy := storage.CompactionPolicy{KeepRevisions: 1, KeepDuration: time.Second, Interval: time.Minute}
		var wg sync.WaitGroup
		stops := make([]context.CancelFunc, 3)
		for i := range stops {
			ctx, cancel := context.WithCancel(t.Context())
			stops[i] = cancel
			c := storage.NewCompactor(s, policy)
			wg.Go(func() { c.Run(ctx) })
			time.Sleep(20 * time.Second) // the next one ticks 20 s later
		}
		defer func() {
			for _, stop := range stops {
				stop()
			}
			wg.Wait()
		}()
		write := func(minutes int) {
			for range minutes {
				if _, err := s.Create(t.Context(), "/k/"+time.Now().String(), []byte("v")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
			}
			synctest.Wait()
		}
		write(10)
		stops[0]() // the first to start has claimed every round so far
		write(10)

		if n := len(s.compacted); n < 15 {
			t.Errorf("%d compactions in 20 minutes at a minute's interval, want at least 15", n)
		}
		for i := 1; i < len(s.compacted); i++ {
			if gap := s.compacted[i].Sub(s.compacted[i-1]); gap < policy.Interval {
				t.Errorf("compactions %d and %d %v apart, within one interval (%v)", i-1, i, gap, policy.Interval)
			}
		}
	})
}
