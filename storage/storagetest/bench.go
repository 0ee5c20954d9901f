package storagetest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/storage"
)

const (
	// benchWriters is the number of concurrent writers of the parallel
	// benchmarks: a busy API server's worth of in-flight writes, enough for a
	// group-committing backend to fill its batches.
	benchWriters = 64
	// benchListKeys is the size of the listed collection.
	benchListKeys = 10000
	// benchGetKeys is the number of keys Get cycles through.
	benchGetKeys = 1000
	// benchReplayEvents is the history each replaying watcher reads per iteration.
	benchReplayEvents = 10000
	// benchValue is the size of the values written: a small Kubernetes object.
	benchValue = 256
)

// RunBenchmarks measures a backend with sub-benchmarks shared by every
// backend: sequential and 64-way parallel creates, Get, a List of 10,000 keys,
// and watch delivery to 1 and 100 watchers, both replaying history and live.
// newStore must return an empty store and arrange for its closing.
func RunBenchmarks(b *testing.B, newStore func(b testing.TB) storage.Interface) {
	b.Run("CreateSequential", func(b *testing.B) { benchCreateSequential(b, newStore(b)) })
	b.Run("CreateParallel64", func(b *testing.B) { benchCreateParallel(b, newStore(b)) })
	b.Run("Get", func(b *testing.B) { benchGet(b, newStore(b)) })
	b.Run("List10000", func(b *testing.B) { benchList(b, newStore(b)) })
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("WatchReplay/watchers=%d", n), func(b *testing.B) { benchWatchReplay(b, newStore(b), n) })
		b.Run(fmt.Sprintf("WatchLive/watchers=%d", n), func(b *testing.B) { benchWatchLive(b, newStore(b), n) })
	}
}

func benchCreateSequential(b *testing.B, s storage.Interface) {
	ctx, value := b.Context(), make([]byte, benchValue)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Create(ctx, fmt.Sprintf("/bench/seq/%09d", i), value); err != nil {
			b.Fatal(err)
		}
		i++
	}
	benchReportRate(b, float64(i), "creates/s")
}

// benchCreateParallel creates from benchWriters goroutines.
func benchCreateParallel(b *testing.B, s storage.Interface) {
	ctx, value := b.Context(), make([]byte, benchValue)
	var next atomic.Int64
	b.SetParallelism((benchWriters + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Create(ctx, fmt.Sprintf("/bench/par/%09d", next.Add(1)), value); err != nil {
				b.Error(err)
				return
			}
		}
	})
	benchReportRate(b, float64(b.N), "creates/s")
}

func benchGet(b *testing.B, s storage.Interface) {
	ctx := b.Context()
	keys := benchFill(b, s, "/bench/get/", benchGetKeys)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func benchList(b *testing.B, s storage.Interface) {
	ctx := b.Context()
	benchFill(b, s, "/bench/list/", benchListKeys)
	b.ReportAllocs()
	lists := 0
	for b.Loop() {
		resp, err := s.List(ctx, "/bench/list/", storage.ListOptions{})
		if err != nil || len(resp.KVs) != benchListKeys {
			b.Fatalf("List: %d KVs, %v", len(resp.KVs), err)
		}
		lists++
	}
	benchReportRate(b, float64(lists*benchListKeys), "keys/s")
}

// benchWatchReplay opens n watchers from before benchReplayEvents events
// and drains them: delivery from history, independent of write speed.
func benchWatchReplay(b *testing.B, s storage.Interface, n int) {
	from, err := s.CurrentRevision(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	benchFill(b, s, "/bench/watch/", benchReplayEvents)
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		ctx, cancel := context.WithCancel(b.Context())
		done := benchWatchers(b, ctx, s, n, from, benchReplayEvents)
		done.Wait()
		cancel()
		events += n * benchReplayEvents
	}
	benchReportRate(b, float64(events), "events/s")
}

// benchWatchLive opens n watchers and counts the delivery of b.N events
// written by benchWriters goroutines: bounded by the write rate.
func benchWatchLive(b *testing.B, s storage.Interface, n int) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	from, err := s.CurrentRevision(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	done := benchWatchers(b, ctx, s, n, from, b.N)
	benchCreateN(b, s, "/bench/live/", b.N)
	done.Wait()
	benchReportRate(b, float64(b.N*n), "events/s")
}

// benchWatchers starts n watchers from rev, each reading want events; the
// returned group is done when all have.
func benchWatchers(b *testing.B, ctx context.Context, s storage.Interface, n int, from int64, want int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		w, err := s.Watch(ctx, "/bench/", from)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			got := 0
			for got < want {
				batch, ok := <-w.Events()
				if !ok {
					b.Errorf("watch ended after %d of %d events: %v", got, want, w.Err())
					return
				}
				got += len(batch)
			}
		})
	}
	return &wg
}

// benchFill creates n keys under prefix outside the timer and returns them.
func benchFill(b *testing.B, s storage.Interface, prefix string, n int) []string {
	b.StopTimer()
	defer b.StartTimer()
	return benchCreateN(b, s, prefix, n)
}

// benchCreateN creates n keys under prefix from benchWriters goroutines.
func benchCreateN(b *testing.B, s storage.Interface, prefix string, n int) []string {
	ctx, value := b.Context(), make([]byte, benchValue)
	keys := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchWriters {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				keys[i] = fmt.Sprintf("%s%09d", prefix, i)
				if _, err := s.Create(ctx, keys[i], value); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return keys
}

func benchReportRate(b *testing.B, n float64, unit string) {
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(n/sec, unit)
	}
}
