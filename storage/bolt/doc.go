// Package bolt is listwatch's embedded default store: a storage.Interface kept
// in one bbolt file (go.etcd.io/bbolt) in a data directory.
//
// # Semantics
//
// Revisions start at 1 with the first write and have no gaps: every committed
// Create, Update and Delete takes the next one, and a failed write takes none.
// The file holds three buckets: the current state (key -> create revision, mod
// revision, value), the history (revision -> event with the previous state of
// its key) and meta (the current and the compaction revisions). History is kept
// until Compact discards it, so after a restart a watch resumes from any
// revision at or above the compaction revision.
//
// List at revision 0 reads the current state. List at a past revision r
// (compaction revision <= r <= current) rebuilds the state at r from the
// current state by undoing, key by key, the history after r; its cost grows
// with the history written since r. Every page of a paginated list is read at
// the first page's revision, whatever is written in between, until compaction
// passes it (then storage.ErrCompacted).
//
// # Writes: group commit
//
// One committer at a time applies writes. It takes all the requests waiting
// (up to 10,000), applies them in one bbolt transaction, commits with one
// fsync, answers each caller with its own result, then publishes the batch's
// events to the watchers. A write that finds no commit under way is
// committed by its own caller (with whatever was queued meanwhile), without a
// hand-off to another goroutine; the requests queued during a commit are
// committed by the store's writer goroutine, to which the committer hands
// them over. A request that fails its own checks (existing or
// absent key, revision conflict, ended context) gets its own error and does not
// affect the rest of its batch; a failed commit fails the whole batch and
// applies none of it. fsync is on unless Options.NoSync is set. A commit that
// panics once its transaction is being written fails the store: every later
// call gets an error until it is reopened (a caller's panic may be recovered,
// and the store could no longer tell which revision is next).
// Options.CommitObserver, if set, is told how long each commit took (bbolt's
// Tx.Commit, its two fdatasyncs included) and how many requests its batch
// held.
//
// # Watch
//
// Each watch has a goroutine and is either synced, fed by the committer through a
// bounded buffer, or catching up, reading the history bucket in short read
// transactions of bounded size. A watch starts catching up from its revision;
// once near the head it joins the synced set and then reads the history
// published before it joined, so no event is missed or repeated. When a synced
// watcher's buffer overflows (its reader is slow), the committer drops its buffer
// and the watcher catches up from the last revision it delivered: a slow reader
// never blocks the committer or other watchers, and its stream ends with
// storage.ErrCompacted only if compaction passes its position.
//
// Watchers implement storage.ProgressWatcher. Progress advances as events are
// sent and as history is read; writes under other prefixes do not wake a
// synced watcher, so they advance its progress only on RequestProgress.
//
// # Concurrency
//
// All methods are safe for concurrent use. Close ends every watch with
// storage.ErrClosed, waits for the calls in flight and the goroutines of the
// store, and closes the file; later calls fail with storage.ErrClosed.
//
// # Caveats
//
//   - One process per data directory: Open takes an exclusive lock on the file
//     and fails after Options.Timeout if another process holds it.
//   - The file never shrinks: compaction frees pages for reuse but does not
//     return them to the file system.
//   - A write whose context ends while its batch is committing returns the
//     context's error but may have been applied (as with etcd).
//   - Each watcher receives its own copy of every event's values, so the cost
//     of a write grows with the number of watchers whose prefix it matches.
package bolt
