package bolt

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
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
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var stacks string
	err := testwait.Poll(ctx, func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "storage/bolt.(*watcher).run") && !strings.Contains(stacks, "storage/bolt.(*Store).writer")
	})
	if err != nil {
		return fmt.Errorf("leaked goroutines:\n%s", stacks)
	}
	return nil
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
