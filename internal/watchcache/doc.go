// Package watchcache keeps, per resource, an in-memory copy of the store's
// objects and a ring of recent events, fed by one upstream storage.Watch, and
// fans every event out to any number of watchers.
//
// # Data flow
//
// A Cache lists its prefix from the store, then watches it from the list's
// revision. Each event's JSON (with the event's resourceVersion stamped) is
// made once, from the stored bytes when the codec can (Codec.Encode), and
// the same bytes serve every watcher and every list. What filters test (the
// namespace, the labels, the selectable fields) is read from that JSON,
// skipping the rest; the object is decoded only when something asks for it
// (Object.Obj), so that the ring holds bytes, not trees of maps. Progress notifications from the store
// (storage.ProgressWatcher) move the cache's revision forward when other
// prefixes change, so a consistent read can tell the cache is as fresh as
// the store.
//
// # Watchers
//
// A Watcher holds a queue of references to events, bounded in bytes. The
// dispatcher never blocks on a watcher: when a queue is full the watcher is
// parked at the last revision it was given and stops receiving dispatches;
// its own goroutine (the reader, in Next) then catches up from the ring or, if
// the ring no longer holds its position, from the store's history, and
// rejoins the dispatch once level with the cache. A polled watcher (one
// with a Waker, served by a pool of senders, and no selector) is not fed:
// after each batch the dispatcher only wakes the polled watchers of the
// batch's namespaces and of all namespaces, each group at once through
// Config.WakePolled, and each watcher takes its events from the ring in
// Pending, on the goroutine that sends them, up to its budget at a time;
// one whose position the ring no longer holds is parked likewise, unless
// the ring dropped no event of its namespace after it (batches of other
// namespaces do not wake it, so its position may lag behind). A polled
// watcher with a lane slot (WatchOptions.Lane) that is level enters its
// group's lane (lane.go): the caller of WakePolled then sends it each
// batch from the slot (ServeLane) without reading the watcher, until
// anything else takes it out, its position back to the watcher. A Pending
// that returns a queue with a catch-up or an error still to come wakes
// the watcher for them. A watcher with a selector stays fed, as most
// events may not concern it. Only a watcher that falls behind everything
// the store still holds gets 410 Gone. Selector
// transitions follow kube-apiserver: an object that starts matching is ADDED,
// one that stops matching is DELETED (with its previous content at the
// event's revision).
//
// # Memory
//
// The ring is bounded in events (Config.RingMaxEvents), in age beyond a
// minimum count (RingMinEvents, RingMaxAge: a timer owned by the cache
// trims it when no write comes) and, first of all, in bytes: what its
// events pin (eventBytes: the object and the previous one, each its JSON
// and a measured overhead for its struct and maps, and the event's own;
// and, from when a watcher has them made, their second encodings:
// Object.Alt, a DELETED event's) is kept under Config.RingMaxBytes and
// under a share of a Budget that the server's caches share, whatever the
// minimum count. A watcher whose position the ring has dropped reads from
// the store's history, so the bounds cost catch-up time, never an event.
//
// What watchers pin is bounded apart. Events a watcher takes from the
// ring or the dispatch are references to the events' bytes, shared with
// the ring and every other watcher, up to WatcherBufferBytes at a time;
// the server's write of them keeps what its socket did not accept, so a
// watcher that stops reading pins at most one take beyond the ring, and
// watchers that stopped at the same events share them. Events replayed
// from the store's history are each watcher's own copies: they are
// charged to the Budget's replay bound from the replay until the
// reader's next Pending (or Stop), and while that bound is used up a
// replay takes one event at a time; and only four replays read the store
// at once, each holding what the store's watch reads ahead of it. So n
// watchers that stop reading pin at most the replay bound and one event
// each beyond the ring, unless they stopped at different events of the
// ring, n takes of theirs.
//
// # Followers
//
// Follow is how a controller follows one cache: from its objects (ADDED
// items, then OnSynced; after Fresh, a consistent list) or from its
// revision (OnStart marks where changes may have gone unseen), with a
// timer hook (Due, OnDue), and again after a backoff whenever the watch
// ends. It runs, hooks included, on its caller's goroutine and returns
// when the caller's context ends.
//
// # Concurrency
//
// Lock order: Cache.mu before LaneBlock.serving before Watcher.mu
// (internal/lockrank checks it in race builds), and before Budget.mu, a
// leaf.
// The dispatcher takes Cache.mu for writing; readers of the ring and of
// the objects take it for reading.
package watchcache
