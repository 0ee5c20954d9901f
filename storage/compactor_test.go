package storage_test

import (
	"context"
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
