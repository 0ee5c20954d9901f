package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram is a log-linear latency histogram in microseconds, in the
// manner of HDR histograms: values below 64 µs are exact, larger ones are
// bucketed with a relative error under 1/32. Recording is lock-free and
// spread over shards so that watchers on different cores rarely share a
// cache line.
type histogram struct {
	shards [histShards]histShard
	max    atomic.Int64
}

const (
	histShards  = 16
	histSubBits = 5                                // 32 sub-buckets per power of two
	histBuckets = 2<<histSubBits + 40<<histSubBits // up to 2^45 µs
)

type histShard struct {
	counts [histBuckets]atomic.Uint64
}

// histIndex is the bucket of v µs (v >= 0).
func histIndex(v int64) int {
	if v < 2<<histSubBits {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1
	i := 2<<histSubBits + (shift-1)<<histSubBits + int(v>>shift) - 1<<histSubBits
	return min(i, histBuckets-1)
}

// histValue is the largest value of bucket i, in µs.
func histValue(i int) int64 {
	if i < 2<<histSubBits {
		return int64(i)
	}
	j := i - 2<<histSubBits
	shift := j>>histSubBits + 1
	sub := int64(j&(1<<histSubBits-1)) + 1<<histSubBits
	return (sub+1)<<shift - 1
}

// record adds one latency; shard spreads concurrent recorders.
func (h *histogram) record(shard int, d time.Duration) {
	us := max(d.Microseconds(), 0)
	h.shards[shard%histShards].counts[histIndex(us)].Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// Latency summarises a histogram.
type Latency struct {
	Count    uint64
	P50, P99 time.Duration
	Max      time.Duration
}

// summary returns the count, p50, p99 (bucket upper bounds) and exact max.
func (h *histogram) summary() Latency {
	var counts [histBuckets]uint64
	var n uint64
	for s := range h.shards {
		for i := range counts {
			c := h.shards[s].counts[i].Load()
			counts[i] += c
			n += c
		}
	}
	l := Latency{Count: n, Max: time.Duration(h.max.Load()) * time.Microsecond}
	if n == 0 {
		return l
	}
	l.P50 = quantile(&counts, n, 0.50, l.Max)
	l.P99 = quantile(&counts, n, 0.99, l.Max)
	return l
}

func quantile(counts *[histBuckets]uint64, n uint64, q float64, maxv time.Duration) time.Duration {
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i, c := range counts {
		if seen += c; seen >= rank {
			return min(time.Duration(histValue(i))*time.Microsecond, maxv)
		}
	}
	return maxv
}
