package wait

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Errorf("Sleep(1m) = %v after %v, want nil after 1m", err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Sleep(1h) with a 1s context = %v after %v, want DeadlineExceeded after 1s", err, time.Since(start))
		}
		if err := Sleep(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Sleep(0) with an ended context = %v, want DeadlineExceeded", err)
		}
		if err := Sleep(t.Context(), -time.Second); err != nil {
			t.Errorf("Sleep(-1s) = %v, want nil", err)
		}
	})
}
