package bolt

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// waitTimeout bounds every wait on a condition in these tests.
const waitTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir))
	}
	code := m.Run()
	if code == 0 {
		if err := checkNoLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkNoLeaks fails if a goroutine of this package outlives its store.
func checkNoLeaks() error {
	deadline := time.Now().Add(waitTimeout)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		leaked := strings.Contains(stacks, "storage/bolt.(*watcher).run") ||
			strings.Contains(stacks, "storage/bolt.(*Store).writer")
		if !leaked {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leaked goroutines:\n%s", stacks)
		}
		runtime.Gosched()
	}
}

// openTest opens a store in a fresh directory, without fsync, closed at the
// end of the test.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	opts.NoSync = true
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustCreate(t testing.TB, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(context.Background(), key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

// collect reads w until it has n events, failing on a gap, a duplicate, an
// early end or the deadline.
func collect(t testing.TB, w storage.Watcher, n int) []storage.Event {
	t.Helper()
	var got []storage.Event
	deadline := time.After(waitTimeout)
	for len(got) < n {
		select {
		case batch, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended after %d of %d events: %v", len(got), n, w.Err())
			}
			for _, ev := range batch {
				if len(got) > 0 && ev.Revision <= got[len(got)-1].Revision {
					t.Fatalf("event at %d after %d", ev.Revision, got[len(got)-1].Revision)
				}
				got = append(got, ev)
			}
		case <-deadline:
			t.Fatalf("got %d of %d events before the deadline", len(got), n)
		}
	}
	if len(got) > n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	return got
}

// waitEnd reads w until it ends and returns its error.
func waitEnd(t testing.TB, w storage.Watcher) error {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		case <-deadline:
			t.Fatal("watch did not end before the deadline")
		}
	}
}
