package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/listwatch/listwatch/storage/bolt"
)

// commitDurationBuckets span 100 µs to 3.3 s, doubling: a commit on a fast
// SSD (two fdatasyncs) takes a few hundred µs, a disk's rare stalls reach
// hundreds of ms. etcd's etcd_disk_backend_commit_duration_seconds doubles
// from 1 ms to 8 s, which would put every commit of a fast disk in its first
// bucket.
var commitDurationBuckets = prometheus.ExponentialBuckets(100e-6, 2, 16)

// commitBatchBuckets span 1 to 8,192 requests, doubling; the store commits
// at most 10,000 in one batch.
var commitBatchBuckets = prometheus.ExponentialBuckets(1, 2, 14)

// Commits holds the collectors of the embedded store's commits; it is the
// bolt store's CommitObserver. Metrics.Commits registers them, so a server
// on another backend does not export them.
type Commits struct {
	durations prometheus.Histogram
	batches   prometheus.Histogram
}

var _ bolt.CommitObserver = (*Commits)(nil)

func newCommits() *Commits {
	return &Commits{
		durations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "listwatch_storage_commit_duration_seconds",
			Help:    "Time the embedded store took to commit a batch of writes (bbolt's transaction commit, its fdatasyncs included), as etcd_disk_backend_commit_duration_seconds",
			Buckets: commitDurationBuckets,
		}),
		batches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "listwatch_storage_commit_batch_size",
			Help:    "Write requests committed by the embedded store in one transaction (group commit), failed ones included",
			Buckets: commitBatchBuckets,
		}),
	}
}

// Commits returns the collectors of the store's commits, registering them
// the first time.
func (m *Metrics) Commits() *Commits {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.commits == nil {
		m.commits = newCommits()
		m.reg.MustRegister(m.commits.durations, m.commits.batches)
	}
	return m.commits
}

// Committed implements bolt.CommitObserver.
func (c *Commits) Committed(d time.Duration, batch int) {
	c.durations.Observe(d.Seconds())
	c.batches.Observe(float64(batch))
}
