package cache

import (
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with jitter that forgets after a quiet
// period. Its defaults are client-go's Reflector backoff: 800 ms doubling to
// 30 s, each delay stretched by up to 100 % at random (so it settles in
// [30 s, 60 s), 0.22 requests a second), reset after 2 minutes without a
// failure. The Reflector also resets it whenever a watch delivers something.
type Backoff struct {
	Initial    time.Duration
	Factor     float64
	Jitter     float64 // delay = step·(1 + Jitter·rand[0,1))
	Cap        time.Duration
	ResetAfter time.Duration
}

// DefaultBackoff returns client-go's Reflector backoff.
func DefaultBackoff() Backoff {
	return Backoff{
		Initial:    800 * time.Millisecond,
		Factor:     2,
		Jitter:     1,
		Cap:        30 * time.Second,
		ResetAfter: 2 * time.Minute,
	}
}

// backoffState is one user's position in a Backoff. Not safe for concurrent
// use; the Reflector's goroutine owns it.
type backoffState struct {
	cfg  Backoff
	rand func() float64 // [0,1); replaceable in tests
	step time.Duration  // the next delay before jitter
	last time.Time      // when the attempt after the last delay began
}

func newBackoffState(cfg Backoff) *backoffState {
	return &backoffState{cfg: cfg, rand: rand.Float64, step: cfg.Initial}
}

// next returns the delay before the next attempt and grows the step. If the
// attempt after the previous delay ran healthy for more than ResetAfter,
// the step starts again from Initial.
func (b *backoffState) next() time.Duration {
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) > b.cfg.ResetAfter {
		b.step = b.cfg.Initial
	}
	d := b.step
	b.step = min(time.Duration(float64(b.step)*b.cfg.Factor), b.cfg.Cap)
	d += time.Duration(b.cfg.Jitter * b.rand() * float64(d))
	b.last = now.Add(d)
	return d
}

// reset starts the steps again from Initial: the last attempt worked.
func (b *backoffState) reset() {
	b.step = b.cfg.Initial
	b.last = time.Time{}
}
