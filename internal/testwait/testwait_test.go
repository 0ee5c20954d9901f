package testwait

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fails runs f with a recorder on its own goroutine and returns what it
// failed with ("" if it returned).
func fails(t *testing.T, f func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checks := 0
		start := time.Now()
		msg := fails(t, func(tb testing.TB) {
			Until(tb, time.Minute, "the fifth check", func() bool { checks++; return checks == 5 })
		})
		if msg != "" || checks != 5 {
			t.Fatalf("failed with %q after %d checks, want success at the fifth", msg, checks)
		}
		// Four pauses of the backoff: 1 + 2 + 4 + 8 ms.
		if took := time.Since(start); took != 15*time.Millisecond {
			t.Errorf("took %v, want the backoff's 15ms", took)
		}
	})
}

func TestUntilFailsNamingWhatItAwaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		msg := fails(t, func(tb testing.TB) { Until(tb, 10*time.Second, "the moon", func() bool { return false }) })
		if want := "waiting 10s for the moon: context deadline exceeded"; msg != want {
			t.Errorf("failed with %q, want %q", msg, want)
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("gave up after %v, want the limit", took)
		}
	})
}

func TestUntilNilReportsTheLastReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		checks := 0
		msg := fails(t, func(tb testing.TB) {
			UntilNil(tb, time.Second, "the count", func() error { checks++; return fmt.Errorf("count %d", checks) })
		})
		// 1, 2, ... 32 ms, then 50 ms pauses: 6 + 19 checks in a second.
		if want := "waiting 1s for the count: context deadline exceeded; last: count 25"; msg != want {
			t.Errorf("failed with %q, want %q", msg, want)
		}
	})
}

func TestPollEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("stopped")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if err := Poll(ctx, func() bool { return false }); !errors.Is(err, cause) {
			t.Errorf("Poll = %v, want the context's cause", err)
		}
		if err := Poll(t.Context(), func() bool { return true }); err != nil {
			t.Errorf("Poll of a condition that holds = %v", err)
		}
		if strings.Contains(fmt.Sprint(Poll(ctx, func() bool { return false })), errNotYet.Error()) {
			t.Error("a false condition's placeholder error leaked into the result")
		}
	})
}

func TestUntilWorksInACleanup(t *testing.T) {
	checks := 0
	t.Run("cleanup", func(t *testing.T) {
		t.Cleanup(func() { Until(t, time.Minute, "the second check", func() bool { checks++; return checks == 2 }) })
	})
	if checks != 2 {
		t.Errorf("%d checks in a cleanup, want 2", checks)
	}
}
