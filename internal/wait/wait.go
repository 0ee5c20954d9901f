// Package wait holds the context-aware pause that the commands share: the
// CLI's watch follower backs off with it and the benchmarks settle with it.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, returning ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
