package storage

import (
	"context"
	"log/slog"
	"time"
)

// CompactionPolicy says how much history a Compactor keeps: at least the last
// KeepRevisions revisions and at least the last KeepDuration of time, so a
// watcher that was disconnected for less than either can resume without a
// relist.
type CompactionPolicy struct {
	// KeepRevisions is how many of the latest revisions are never compacted.
	KeepRevisions int64
	// KeepDuration is how long a revision is kept after it was observed.
	KeepDuration time.Duration
	// Interval is how often the policy is applied.
	Interval time.Duration
}

// DefaultCompactionPolicy keeps the last 100,000 revisions and the last hour:
// far more than kube-apiserver's 5-minute compaction of etcd, so a client can
// be away for an hour (or 100,000 writes, whichever is longer) and resume
// where it left off. At 1 KiB per event, 100,000 revisions cost about 100 MiB
// of history on disk.
func DefaultCompactionPolicy() CompactionPolicy {
	return CompactionPolicy{KeepRevisions: 100_000, KeepDuration: time.Hour, Interval: time.Minute}
}

// compactable is the part of Interface a Compactor uses.
type compactable interface {
	CurrentRevision(ctx context.Context) (int64, error)
	Compact(ctx context.Context, revision int64) error
}

// CompactionClaimer is a store whose compaction several compactors share,
// as etcd's is cluster-wide: before it compacts, a Compactor claims the round
// through a shared record, so that of the servers on one cluster only one
// compacts per interval. The record's version is a logical clock of the
// compactions (kube-apiserver's compact_rev_key): a claim succeeds only if no
// other compactor has claimed since the caller last learned the version.
type CompactionClaimer interface {
	// ClaimCompaction records that the caller compacts to rev if the
	// record's version is still seen, and returns the record as it is
	// after the call: claimed says whether the caller's claim was recorded.
	ClaimCompaction(ctx context.Context, seen, rev int64) (claimed bool, version, recorded int64, err error)
}

// sample is the store's revision as observed at a time.
type sample struct {
	at  time.Time
	rev int64
}

// Compactor applies a CompactionPolicy to a store. It learns which revision
// was current when by sampling CurrentRevision every Interval, so after a
// restart it compacts by time only once KeepDuration has passed: it errs on
// keeping too much. On a CompactionClaimer it compacts only in the rounds it
// claims.
type Compactor struct {
	store   compactable
	policy  CompactionPolicy
	samples []sample // oldest first; only Run touches it
	// compacted is the last revision compacted to, by this Compactor or,
	// as the shared record says, another; only Run touches it.
	compacted int64
	// version is the shared record's version as this Compactor last saw
	// it (0: the record does not exist); only Run touches it.
	version int64
}

// NewCompactor returns a Compactor for s; zero fields of p take their defaults.
func NewCompactor(s Interface, p CompactionPolicy) *Compactor {
	d := DefaultCompactionPolicy()
	if p.KeepRevisions <= 0 {
		p.KeepRevisions = d.KeepRevisions
	}
	if p.KeepDuration <= 0 {
		p.KeepDuration = d.KeepDuration
	}
	if p.Interval <= 0 {
		p.Interval = d.Interval
	}
	return &Compactor{store: s, policy: p}
}

// Run applies the policy every Interval until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	tick := time.NewTicker(c.policy.Interval)
	defer tick.Stop()
	for {
		if err := c.step(ctx, time.Now()); err != nil && ctx.Err() == nil {
			slog.Warn("storage compaction failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// step samples the current revision and compacts to the newest revision that
// is both KeepRevisions behind the current one and KeepDuration old.
func (c *Compactor) step(ctx context.Context, now time.Time) error {
	cur, err := c.store.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	c.samples = append(c.samples, sample{at: now, rev: cur})
	target := c.oldEnough(now)
	target = min(target, cur-c.policy.KeepRevisions)
	if target <= c.compacted {
		return nil
	}
	if claimer, ok := c.store.(CompactionClaimer); ok {
		claimed, version, recorded, err := claimer.ClaimCompaction(ctx, c.version, target)
		if err != nil {
			return err
		}
		c.version = version
		if !claimed { // another compactor's round: this one's comes next interval at the earliest
			c.compacted = max(c.compacted, recorded)
			return nil
		}
	}
	if err := c.store.Compact(ctx, target); err != nil {
		return err
	}
	c.compacted = target
	return nil
}

// oldEnough returns the revision of the newest sample at least KeepDuration
// old (0 if none), and forgets the samples before it.
func (c *Compactor) oldEnough(now time.Time) int64 {
	i := -1
	for j, s := range c.samples {
		if now.Sub(s.at) >= c.policy.KeepDuration {
			i = j
		}
	}
	if i < 0 {
		return 0
	}
	c.samples = c.samples[i:]
	return c.samples[0].rev
}
