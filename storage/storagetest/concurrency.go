package storagetest

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/storage"
)

// casGoroutines and casIncrements size the lost-update check.
const (
	casGoroutines = 16
	casIncrements = 25
)

func testConcurrentCASIncrements(t *testing.T, s storage.Interface) {
	mustCreate(t, s, "/cas/counter", "0")
	ctx := ctxFor(t)
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for range casGoroutines {
		wg.Go(func() {
			kv, err := s.Get(ctx, "/cas/counter")
			if err != nil {
				t.Errorf("Get: %v", err)
				return
			}
			for done := 0; done < casIncrements; {
				n, err := strconv.Atoi(string(kv.Value))
				if err != nil {
					t.Errorf("counter value %q: %v", kv.Value, err)
					return
				}
				next := []byte(strconv.Itoa(n + 1))
				rev, err := s.Update(ctx, kv.Key, kv.ModRevision, next)
				var conflict *storage.ConflictError
				switch {
				case err == nil:
					kv.Value, kv.ModRevision = next, rev
					done++
				case errors.As(err, &conflict):
					conflicts.Add(1)
					kv = conflict.Current // retry without another read
				default:
					t.Errorf("Update: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	kv, err := s.Get(ctx, "/cas/counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(casGoroutines * casIncrements); string(kv.Value) != want {
		t.Errorf("counter = %s after %d increments (%d conflicts retried): updates were lost", kv.Value, casGoroutines*casIncrements, conflicts.Load())
	}
}
