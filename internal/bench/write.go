package bench

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// writeObjects is how many objects the writer updates in turn: more than
// maxInFlight, so that concurrent writes never touch the same object.
const writeObjects = 64

// writes is what a writer did.
type writes struct {
	ok, failed atomic.Int64
	firstErr   atomic.Pointer[error]
	latency    histogram // request sent to response read, of writes that succeeded
	elapsed    time.Duration
}

func objectName(i int) string { return "bench-" + strconv.Itoa(i) }

// runWriter updates the writeObjects objects in turn at rate writes/s for
// d, each write stamped with its wall-clock time as it is sent. Writes due
// while maxInFlight are outstanding wait, so a server that cannot keep up
// shows as a lower achieved rate.
func runWriter(ctx context.Context, a *apiClient, rate int, d time.Duration, size int) *writes {
	w := &writes{}
	n := int(int64(rate) * int64(d) / int64(time.Second))
	period := time.Second / time.Duration(rate)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * period)))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			sent := time.Now()
			err := a.change(ctx, objectName(i%writeObjects), size, sent)
			if err == nil {
				w.latency.record(i, time.Since(sent))
			}
			w.count(err)
		})
	}
	wg.Wait()
	w.elapsed = time.Since(start)
	return w
}

func (w *writes) count(err error) {
	if err == nil {
		w.ok.Add(1)
		return
	}
	w.failed.Add(1)
	w.firstErr.CompareAndSwap(nil, &err)
}

// createObjects creates n objects of about size bytes with maxInFlight
// requests at once.
func createObjects(ctx context.Context, a *apiClient, n, size int) error {
	return createEach(ctx, a, n, func(i int) []byte { return a.kind.object(objectName(i), size, time.Now()) })
}

// createEach creates the n objects body gives with maxInFlight requests
// at once.
func createEach(ctx context.Context, a *apiClient, n int, body func(i int) []byte) error {
	w := &writes{}
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := a.do(ctx, http.MethodPost, a.kind.path, body(i))
			w.count(err)
		})
	}
	wg.Wait()
	if p := w.firstErr.Load(); p != nil {
		return *p
	}
	return ctx.Err()
}
