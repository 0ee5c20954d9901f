package client

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// Backoff is how often and how long to wait between attempts, as
// apimachinery's wait.Backoff: the first wait is Duration, each next one
// Factor times the last (0: the same), each stretched by up to Jitter
// times itself; at most Steps attempts in all.
type Backoff struct {
	Steps    int
	Duration time.Duration
	Factor   float64
	Jitter   float64
}

// Backoffs of client-go's util/retry.
var (
	// DefaultRetry is for conflicts a read and a write again resolve at
	// once: 5 attempts, 10 ms apart.
	DefaultRetry = Backoff{Steps: 5, Duration: 10 * time.Millisecond, Factor: 1.0, Jitter: 0.1}
	// DefaultBackoff is for conflicts another writer's burst causes: 4
	// attempts after 10, 50 and 250 ms.
	DefaultBackoff = Backoff{Steps: 4, Duration: 10 * time.Millisecond, Factor: 5.0, Jitter: 0.1}
)

// RetryOnConflict calls fn, a read-modify-write, until it returns an
// error that is not a Conflict (nil included), as client-go's
// retry.RetryOnConflict: at most b.Steps times, waiting as b says between
// calls. It returns fn's last error, or ctx's if ctx ends while waiting.
func RetryOnConflict(ctx context.Context, b Backoff, fn func() error) error {
	return OnError(ctx, b, IsConflict, fn)
}

// OnError is RetryOnConflict for the errors retriable reports.
func OnError(ctx context.Context, b Backoff, retriable func(error) bool, fn func() error) error {
	delay := b.Duration
	for step := 1; ; step++ {
		err := fn()
		if err == nil || !retriable(err) || step >= b.Steps {
			return err
		}
		d := delay
		if b.Jitter > 0 {
			d += time.Duration(rand.Float64() * b.Jitter * float64(d))
		}
		if err := wait.Sleep(ctx, d); err != nil {
			return err
		}
		if b.Factor != 0 {
			delay = time.Duration(float64(delay) * b.Factor)
		}
	}
}
