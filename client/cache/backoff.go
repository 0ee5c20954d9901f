package cache

import (
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with jitter that starts again
// periodically. Its defaults are client-go's Reflector backoff: 800 ms
// doubling to 30 s, each delay stretched by up to 100 % at random (so it
// settles in [30 s, 60 s), 0.22 requests a second), the steps starting
// again from 800 ms at the first delay asked for more than 2 minutes after
// they last did, however many failures came between (client-go's
// backoffManager). The Reflector waits it out only after failures to
// (re)connect, and starts its steps again whenever a watch delivers.
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
	cfg     Backoff
	rand    func() float64 // [0,1); replaceable in tests
	step    time.Duration  // the next delay before jitter
	started time.Time      // when the steps last started from Initial
}

func newBackoffState(cfg Backoff) *backoffState {
	return &backoffState{cfg: cfg, rand: rand.Float64, step: cfg.Initial, started: time.Now()}
}

// next returns the delay before the next attempt and grows the step,
// starting the steps again first if they started more than ResetAfter ago.
func (b *backoffState) next() time.Duration {
	if now := time.Now(); now.Sub(b.started) > b.cfg.ResetAfter {
		b.step, b.started = b.cfg.Initial, now
	}
	d := b.step
	b.step = min(time.Duration(float64(b.step)*b.cfg.Factor), b.cfg.Cap)
	return d + time.Duration(b.cfg.Jitter*b.rand()*float64(d))
}

// reset starts the steps again from Initial: the last attempt worked.
func (b *backoffState) reset() {
	b.step, b.started = b.cfg.Initial, time.Now()
}
