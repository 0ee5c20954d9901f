package cuttest

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Lags records how late a handler saw each write: a writer puts the time
// of the write in the object (Stamp), and the handler gives it back to
// Note when it sees the object.
type Lags struct {
	mu    sync.Mutex
	lags  []time.Duration // guarded by mu
	noted chan struct{}   // closed and replaced at each Note; guarded by mu
}

// Stamp is the value Write puts in each object: now, in Unix nanoseconds.
func Stamp() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }

// Note records the lag of a write stamped at; other values are ignored
// (an object the writer did not stamp).
func (l *Lags) Note(at string) {
	ns, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return
	}
	lag := time.Since(time.Unix(0, ns))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lags = append(l.lags, lag)
	if l.noted != nil {
		close(l.noted)
		l.noted = nil
	}
}

// Wait returns when n writes were noted, or with ctx's error.
func (l *Lags) Wait(ctx context.Context, n int) error {
	for {
		l.mu.Lock()
		seen := len(l.lags)
		if l.noted == nil {
			l.noted = make(chan struct{})
		}
		noted := l.noted
		l.mu.Unlock()
		if seen >= n {
			return nil
		}
		select {
		case <-noted:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Percentiles returns the 50th and 99th percentile lags.
func (l *Lags) Percentiles() (p50, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lags) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(l.lags))
	return s[len(s)/2], s[len(s)*99/100]
}

// Write calls write with a new Stamp every interval for run, or until ctx
// ends or a write fails, and returns how many writes it made.
func Write(ctx context.Context, run, interval time.Duration, write func(ctx context.Context, stamp string) error) (int, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	end := time.NewTimer(run)
	defer end.Stop()
	for n := 0; ; n++ {
		select {
		case <-tick.C:
		case <-end.C:
			return n, nil
		case <-ctx.Done():
			return n, ctx.Err()
		}
		if err := write(ctx, Stamp()); err != nil {
			return n, err
		}
	}
}
