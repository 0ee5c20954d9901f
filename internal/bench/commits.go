package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// commitMetric is the histogram of the embedded store's commit durations
// that `listwatch serve` exports (internal/metrics); a server on etcd, or
// one built before it, does not.
const commitMetric = "listwatch_storage_commit_duration_seconds"

// StoreCommits summarises the server's store commits over a phase, from the
// buckets of commitMetric: a figure is the upper bound of its bucket, so
// the true value is at most it.
type StoreCommits struct {
	Count uint64
	// P99 is the bound of the bucket where the cumulative count reaches
	// 99 %; Max the bound of the highest bucket that counted a commit.
	// Either is Unbounded when it fell in the +Inf bucket.
	P99, Max time.Duration
}

// Unbounded is a StoreCommits figure past the histogram's last finite
// bucket.
const Unbounded = time.Duration(math.MaxInt64)

// buckets are a Prometheus histogram's cumulative counts, by bound
// ascending; the last bound is +Inf.
type buckets struct {
	bounds []float64 // seconds
	counts []uint64
}

// bucket is one `_bucket` line: its upper bound and cumulative count.
type bucket struct {
	le    float64
	count uint64
}

// parseBuckets reads histogram name's buckets from a text exposition; ok is
// false when it has none. It expects the histogram without labels other
// than le, as listwatch exports commitMetric.
func parseBuckets(text []byte, name string) (b buckets, ok bool, err error) {
	prefix := []byte(name + `_bucket{le="`)
	var lines []bucket
	for line := range bytes.Lines(text) {
		rest, found := bytes.CutPrefix(line, prefix)
		if !found {
			continue
		}
		bk, err := parseBucket(string(bytes.TrimSpace(rest)))
		if err != nil {
			return buckets{}, false, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		lines = append(lines, bk)
	}
	if len(lines) == 0 {
		return buckets{}, false, nil
	}
	slices.SortFunc(lines, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
	if last := lines[len(lines)-1].le; !math.IsInf(last, 1) {
		return buckets{}, false, fmt.Errorf("%s: no +Inf bucket", name)
	}
	for _, bk := range lines {
		b.bounds, b.counts = append(b.bounds, bk.le), append(b.counts, bk.count)
	}
	return b, true, nil
}

// parseBucket parses what follows `le="` on a bucket line: the bound, `"} `
// and the cumulative count (which the text format writes as a float).
func parseBucket(s string) (bucket, error) {
	le, count, ok := strings.Cut(s, `"} `)
	if !ok {
		return bucket{}, errors.New("not a bucket line")
	}
	count, _, _ = strings.Cut(count, " ") // a timestamp may follow
	bound, err := strconv.ParseFloat(le, 64)
	if err != nil {
		return bucket{}, fmt.Errorf("bound: %w", err)
	}
	n, err := strconv.ParseFloat(count, 64)
	if err != nil || n < 0 {
		return bucket{}, fmt.Errorf("count %q: not a count", count)
	}
	return bucket{le: bound, count: uint64(n)}, nil
}

// since is what b counted after earlier, a scrape of the same histogram;
// all of b when earlier has other bounds (or none: no scrape).
func (b buckets) since(earlier buckets) buckets {
	if !slices.Equal(b.bounds, earlier.bounds) {
		return b
	}
	d := buckets{bounds: b.bounds, counts: make([]uint64, len(b.counts))}
	for i, c := range b.counts {
		d.counts[i] = c - min(earlier.counts[i], c)
	}
	return d
}

// summary is the count, p99 and max of b, as bucket bounds.
func (b buckets) summary() StoreCommits {
	n := b.counts[len(b.counts)-1]
	s := StoreCommits{Count: n}
	if n == 0 {
		return s
	}
	rank := (99*n + 99) / 100 // ceil(0.99 n): where the cumulative count reaches 99 %
	p99 := slices.IndexFunc(b.counts, func(c uint64) bool { return c >= rank })
	top, below := 0, uint64(0)
	for i, c := range b.counts {
		if c > below {
			top, below = i, c
		}
	}
	s.P99, s.Max = b.bound(p99), b.bound(top)
	return s
}

// bound is bucket i's upper bound as a duration.
func (b buckets) bound(i int) time.Duration {
	if math.IsInf(b.bounds[i], 1) {
		return Unbounded
	}
	return time.Duration(math.Round(b.bounds[i] * float64(time.Second)))
}

// commitBuckets scrapes the server's commit histogram; ok is false when the
// server does not export it or does not answer (a protected /metrics).
func (a *apiClient) commitBuckets(ctx context.Context) (b buckets, ok bool) {
	text, err := a.request(ctx, http.MethodGet, "/metrics", "text/plain", nil)
	if err != nil {
		return buckets{}, false
	}
	b, ok, err = parseBuckets(text, commitMetric)
	return b, ok && err == nil
}

// storeCommits is the summary of the commits between before (a scrape of
// commitBuckets; zero: none) and a scrape made now; nil when the server
// does not export the histogram.
func (a *apiClient) storeCommits(ctx context.Context, before buckets) *StoreCommits {
	after, ok := a.commitBuckets(ctx)
	if !ok {
		return nil
	}
	s := after.since(before).summary()
	return &s
}
