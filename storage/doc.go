// Package storage is the contract every listwatch store honours: keys mapped to
// opaque bytes, every write stamped with the next value of one store-wide
// revision counter, and an ordered watch that resumes from any revision the
// store still holds.
//
// # Revisions
//
// A store has a single counter. Every successful Create, Update and Delete gets
// a revision greater than every earlier one; failed writes consume none. The
// bolt backend's revisions start at 1 and have no gaps; the etcd backend's are
// the cluster's, shared with whatever else writes to it, so they only grow. A KV records the revision that created it (CreateRevision) and the one
// that last wrote it (ModRevision). The server uses ModRevision as an object's
// metadata.resourceVersion and a list's read revision as the list's.
//
// # Keys and values
//
// Keys are non-empty strings starting with "/" (the server uses
// /registry/<group>/<resource>/<namespace>/<name>), at most MaxKeySize bytes,
// without NUL bytes. Values are opaque and at most MaxValueSize bytes. Invalid
// arguments return errors wrapping ErrInvalidArgument or ErrValueTooLarge and
// never change the store.
//
// # Watch
//
// Watch(ctx, prefix, from) delivers every change under prefix with a revision
// greater than from, exactly once and in revision order, in batches. from = 0
// replays all history, so it fails with ErrCompacted once anything has been
// compacted. A watch from before the compaction
// revision fails with ErrCompacted, either at once or, if compaction races the
// call, as the stream's error. A slow reader never blocks writers or other
// watchers: backends buffer up to a bound and then replay from their history.
//
// # Compaction
//
// Compact(ctx, rev) discards history before rev: afterwards List at a revision
// below rev and Watch from a revision below rev fail with ErrCompacted, while
// the state at rev and every event after rev remain. A Compactor applies a
// policy (keep the last N revisions and the last T of time) on a schedule.
//
// # Concurrency
//
// Every method of an Interface is safe for concurrent use. Close ends all
// watches with ErrClosed and makes further calls fail with ErrClosed.
package storage
