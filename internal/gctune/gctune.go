// Package gctune gives a server with a small live heap a floor under its
// garbage collector's heap goal.
//
// With GOGC=100 the collector runs each time the heap doubles its live
// size, so a server whose live heap is a few MiB but which allocates per
// request (a create allocates ~40 KB, half of it in bbolt)
// collects hundreds of times a second. Floor raises the GC percent while
// the live heap is small, so that the heap goal is at least live + floor,
// and gives the default back as the live heap grows past the floor: a
// large heap pays no more memory than with the default.
package gctune

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultPercent is the GC percent gctune never goes below (Go's default).
const DefaultPercent = 100

// Percent is the GC percent that makes the heap goal live + max(live,
// floor) for a live heap of live bytes.
func Percent(live, floor uint64) int {
	if live == 0 || floor <= live {
		return DefaultPercent
	}
	return int(min(floor*100/live, 100*DefaultPercent))
}

// Floor keeps the GC percent at Percent(live heap, floor), set again after
// every collection (when the live heap is known), until ctx ends; then it
// restores the default. It does nothing when the user set GOGC, whose
// choice stands.
func Floor(ctx context.Context, floor uint64) {
	if _, set := os.LookupEnv("GOGC"); set || floor == 0 {
		return
	}
	t := &tuner{floor: floor, current: DefaultPercent}
	t.arm()
	<-ctx.Done()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	debug.SetGCPercent(DefaultPercent)
}

// tuner sets the GC percent from a cleanup that each collection runs.
type tuner struct {
	floor uint64

	mu sync.Mutex
	// guarded by mu:
	current int
	stopped bool
}

// sentinel is an object made only to become garbage: its cleanup runs
// after the next collection. It is large enough not to share a tiny-object
// block, whose cleanups can wait for its neighbours.
type sentinel struct{ _ [4]*byte }

// arm makes the next collection call tune.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) { t.tune() }, t)
}

// tune runs after a collection: it sets the percent for the live heap that
// collection measured, and arms for the next one.
func (t *tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if p := Percent(sample[0].Value.Uint64(), t.floor); changed(t.current, p) {
		debug.SetGCPercent(p)
		t.current = p
	}
	t.arm()
}

// changed reports whether next differs from cur by more than a tenth, so
// that a live heap moving a little does not reset the collector's pacing.
func changed(cur, next int) bool {
	d := next - cur
	return d*10 > cur || -d*10 > cur
}
