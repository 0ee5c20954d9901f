package gc

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// BenchmarkDeleteOwnerOf10000 deletes an owner of 10,000 ConfigMaps (in
// the background) and times until the collector has deleted them all, on
// the memory store; cpu-s/op is the process's CPU time meanwhile (the
// collector, the store, the watch caches, and this benchmark's watch).
func BenchmarkDeleteOwnerOf10000(b *testing.B) {
	const n = 10_000
	var cpu time.Duration
	for i := range b.N {
		b.StopTimer()
		e := newEnv(b)
		e.run(nil)
		cms := e.configMaps()
		owner := e.create(cms, "default", fmt.Sprint("owner-", i), nil)
		for j := range n {
			e.create(cms, "default", fmt.Sprint("dep-", j), owned(ref(owner, false)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		c := e.cache(cms)
		if err := c.WaitFresh(ctx, mustRevision(b, owner)); err != nil {
			b.Fatal(err)
		}
		w, err := c.Watch(ctx, watchcache.WatchOptions{From: c.Revision()})
		if err != nil {
			b.Fatal(err)
		}
		before := cpuTime()
		b.StartTimer()
		e.delete(cms, "default", owner.Name())
		for left := n + 1; left > 0; { // the owner too
			items, err := w.Next(ctx, nil)
			if err != nil {
				b.Fatalf("%d left: %v", left, err)
			}
			for _, it := range items {
				if it.Type == api.Deleted {
					left--
				}
			}
		}
		b.StopTimer()
		cpu += cpuTime() - before
		w.Stop()
		cancel()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

func mustRevision(b *testing.B, obj api.Object) int64 {
	var rev int64
	if _, err := fmt.Sscan(obj.ResourceVersion(), &rev); err != nil {
		b.Fatal(err)
	}
	return rev
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseMeta reads the metadata of a dependent with 1 KiB and
// 900 KiB of data, as a monitor does for each event.
func BenchmarkParseMeta(b *testing.B) {
	for _, size := range []int{1 << 10, 900 << 10} {
		obj := fmt.Appendf(nil, `{"apiVersion":"v1","data":{"pad":%q},"kind":"ConfigMap","metadata":{"name":"dep","namespace":"default","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u1"}],"resourceVersion":"7","uid":"u2"}}`, strings.Repeat("x", size))
		b.Run(fmt.Sprint(size>>10, "KiB"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if m, err := parseMeta(obj); err != nil || m.Metadata.UID != "u2" || len(m.Metadata.OwnerReferences) != 1 {
					b.Fatal(m, err)
				}
			}
		})
	}
}
