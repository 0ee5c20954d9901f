// Package testwait waits, in tests, for a condition that no event
// announces (a count in another process, a file, a metric): it checks the
// condition with a short backoff until it holds or a deadline passes, and
// then fails the test naming what it waited for. Where an event exists (a
// channel closed, a watch event), tests wait on it instead.
package testwait

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The backoff between checks: quick at first, for what is nearly there,
// then at most maxPause, so that a long wait costs a few checks a second.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

var errNotYet = errors.New("condition not met")

// Until checks cond until it holds, failing t after limit with what.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilNil(t, limit, what, func() error { return holds(cond) })
}

// UntilNil checks cond until it returns nil, failing t after limit with
// what and cond's last error, which says why it did not hold. It works in
// a cleanup too, where t.Context() has ended.
func UntilNil(t testing.TB, limit time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := poll(ctx, cond); err != nil {
		t.Fatalf("waiting %v for %s: %v", limit, what, err)
	}
}

// Poll checks cond until it holds or ctx ends, returning ctx's error then:
// the wait of a program (a benchmark's child process) rather than a test.
func Poll(ctx context.Context, cond func() bool) error {
	return poll(ctx, func() error { return holds(cond) })
}

func holds(cond func() bool) error {
	if cond() {
		return nil
	}
	return errNotYet
}

func poll(ctx context.Context, cond func() error) error {
	pause := firstPause
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		timer.Reset(pause)
		select {
		case <-ctx.Done():
			if errors.Is(err, errNotYet) {
				return context.Cause(ctx)
			}
			return fmt.Errorf("%w; last: %w", context.Cause(ctx), err)
		case <-timer.C:
		}
		pause = min(2*pause, maxPause)
	}
}
