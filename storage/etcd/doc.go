// Package etcd is a storage.Interface backed by an etcd v3 cluster, through
// go.etcd.io/etcd/client/v3.
//
// # Keys
//
// Every key lives under the store's prefix (Config.Prefix, default
// "/listwatch"): key "/registry/pods/ns/a" is etcd key
// "/listwatch/registry/pods/ns/a". Keys are returned without the prefix.
// Several stores may share a cluster under different prefixes.
//
// # Revisions
//
// Revisions are the cluster's: they only grow, but they are shared with every
// other writer of the cluster, so they have gaps, and a new cluster starts at
// revision 1 (CurrentRevision never returns 0). Create, Update and Delete are
// single etcd transactions: Create puts if the key's CreateRevision is 0;
// Update and Delete compare the key's ModRevision (or, for an expected
// revision of 0, that the key exists) and otherwise read the key in the same
// transaction, so a *storage.ConflictError carries the current KV without a
// second round trip.
//
// A cluster refuses requests over its --max-request-bytes, by default exactly
// storage.MaxValueSize, so a value near that size fails with
// storage.ErrValueTooLarge unless the limit is raised by the largest key and
// some framing (storage.MaxKeySize plus 64 KiB is ample).
//
// # List
//
// List reads one etcd range at the list's revision; a page with a Limit reads
// one key more than it returns, so that its continue token can name the next
// key (tokens may not hold the "\x00" successor kube-apiserver uses). Every
// page of a list is read at the first page's revision.
//
// # Watch
//
// Watch(ctx, prefix, from) opens an etcd watch on the prefix from revision
// from (1 when from is 0) with previous values, and drops the events at
// revision from itself. Starting one revision early makes etcd enforce the
// contract's boundary, also against a compaction racing the call: etcd
// rejects a watch starting below its compaction revision c, and the contract
// rejects every watch from below c, including from = c-1, which a watch
// starting at from+1 = c would let through. A read at revision from, made
// before the watch opens, reports ErrCompacted synchronously; a compaction
// racing the call ends the stream with ErrCompacted. An update or delete event
// whose previous value etcd could no longer read (compacted while the watch
// was catching up) ends the stream with ErrCompacted rather than be delivered
// without it.
//
// Each watch has one goroutine, which owns a queue of at most
// Config.WatchBacklog events (plus one etcd response) for its reader. When the
// queue is full the goroutine cancels its etcd watch, so neither etcd nor the
// client buffers more for a slow reader; once the reader has drained the
// queue, the goroutine reopens the watch after the last revision it queued.
// The stream ends with ErrCompacted only if that revision has been compacted
// by then. Other watchers and writers never wait for a slow reader.
//
// When its etcd watch fails, a watch first delivers the events it has queued,
// then ends with the error. Watches use clientv3.WithRequireLeader, so a
// member cut off from its cluster ends them (with etcd's "no leader" error)
// instead of leaving them silent.
//
// Caveat: etcd replays history to a watch that starts (or reopens) behind its
// current revision from a loop that runs every 100 ms and sends each such
// watch at most 1,000 revisions per run. A watch from an old revision, or one
// resuming after a long pause, therefore catches up at about 10,000
// revisions a second, and its first event can take up to 100 ms.
//
// Watchers are storage.ProgressWatchers. Progress rises as batches are sent,
// and with etcd's progress notifications, which RequestProgress asks for.
// etcd answers such a request only while every watch on the gRPC stream is
// current, so each watch has a stream of its own: a watch that is catching up
// or paused gains no progress until it is current again, but holds back no
// other.
//
// # Compaction
//
// Compact(ctx, rev) is etcd's compaction, which is cluster-wide: it discards
// the history of every prefix, not only the store's. Compacting at or below
// the cluster's compaction revision does nothing; above its current revision
// it returns storage.ErrFutureRevision.
//
// A Store is a storage.CompactionClaimer, so that the servers on one cluster
// compact once per interval between them rather than once each: a
// storage.Compactor compacts only after its compare-and-swap on the version
// of the key "compact_rev_key" (outside the prefix: one record per cluster)
// succeeds, as kube-apiserver's compactor does on the same key, with which it
// therefore takes turns. The key's value is the revision compacted to; a
// compactor that loses the swap learns it and the version, and may win the
// next interval's swap unless another compacts in between. Compactors on one
// cluster should have the same policy: the one that wins a round applies its
// own. With etcd's authentication on, the store's user needs read and write
// on compact_rev_key, as kube-apiserver's does, or its compactions fail.
//
// # Concurrency
//
// A Store is safe for concurrent use. Close ends every watch with
// storage.ErrClosed, waits for their goroutines, and closes the client if New
// created it; further calls fail with storage.ErrClosed.
package etcd
