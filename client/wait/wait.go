// Package wait holds the context-aware pause that the client library
// (its retries and backoffs) and the server's commands share.
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends; it returns ctx.Err() if ctx ended
// first (at once when d <= 0), else nil.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
