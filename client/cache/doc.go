// Package cache keeps a local, indexed copy of a resource on a Kubernetes-
// style API server and tells handlers what changes: client-go's
// tools/cache, typed with generics over any T that satisfies client.Object
// (a struct pointer, a k8s.io/api type, client.Unstructured).
//
// # Pieces
//
//   - Reflector lists (in pages of 500, or as a streaming list) and then
//     watches one resource through a client.ListerWatcher, writing every
//     change to a ReflectorStore; a store that is a PartialReplacer (the
//     DeltaFIFO) gets each page of a LIST as it arrives, and a streaming
//     list's objects in parts of the page size (a DELETED among them as a
//     deletion after the part before it), so the informer applies the first
//     pages while the next are read (client-go applies nothing until it has
//     the whole list): the pages are one snapshot (all read at the first
//     page's resourceVersion, or the state the streaming list ends at) and
//     HasSynced waits for the end of the list (for a streaming list, its
//     initial-events-end bookmark); when a list fails after some pages (or
//     parts), they stay applied
//     and the next list asks for the current state (resourceVersion ""), so
//     that no object a handler saw goes back in time, and its end deletes
//     what it does not have. It re-watches from the last
//     resourceVersion when a watch ends or fails, and lists again only when
//     the server says that resourceVersion is gone (410 Expired). A watch
//     the server closed or the network cut (EOF, reset, timeout) is
//     resumed at once, as client-go does, unless watches keep ending with
//     nothing delivered; failures to (re)connect wait out client-go's
//     backoff (800 ms doubling to 30 s, up to 100 % jitter, started again
//     every 2 minutes), which a watch that delivers starts again; a 429's
//     Retry-After is honoured. A streaming list that fails is streamed
//     again (a cut one at once); it falls back to LIST for good when the
//     server cannot stream lists (400, 422, or no initial-events-end
//     bookmark within InitialEventsTimeout, where client-go would wait
//     forever), and for one sync when three in a row are cut after
//     delivering (the list outlasts the connections). reflector_next.go
//     has the table of what follows each way a watch or stream ends.
//   - DeltaFIFO queues keys with their accumulated deltas (Added, Updated,
//     Deleted, Replaced, Sync); Replace (or a list in parts: BeginReplace,
//     ReplacePart, EndReplace) reports objects missing from a relist as
//     deletions whose final state is unknown.
//   - Indexer is a thread-safe map by "namespace/name" with named indices,
//     always one named NamespaceIndex (built in, unless the caller gives
//     its own by that name, as client-go's callers do); Lister reads it by
//     label selector, in all namespaces or one (through that index).
//   - SharedIndexInformer ties them together: one Reflector, one DeltaFIFO
//     and one Indexer, shared by any number of ResourceEventHandlers, each
//     called on its own goroutine from its own bounded buffer.
//   - Factory shares informers among a program's parts, as client-go's
//     SharedInformerFactory: InformerFor[T] gives one informer per
//     resource, scope (namespace, selectors) and T; Start runs those not
//     yet started; WaitForCacheSync reports each; Check compares them with
//     discovery before they run. With T = *api.PartialObjectMetadata an
//     informer lists and watches objects' metadata alone.
//
// # Do not modify cached objects
//
// Get, List, ByIndex, the Listers and every handler receive the cached
// objects themselves, shared by all readers. Modifying one corrupts the
// cache (and its indices) for everyone. Copy before changing.
//
// # Handlers
//
// Each handler has its own goroutine and buffer, so a slow handler delays
// no other handler and never the cache. A handler's buffer keeps up to
// InformerOptions.HandlerBufferSize notifications in order; beyond that,
// notifications are coalesced per key until the handler catches up (see
// listener), so its memory is bounded by the number of objects, not by the
// event rate, and nothing is dropped: the handler always ends at every
// object's latest state. Registration.Pending and Registration.Coalesced
// make the backlog visible. client-go instead grows the buffer without
// bound.
//
// OnDelete receives the object, typed, and a flag for client-go's
// DeletedFinalStateUnknown: no type switch, no way to forget it.
//
// A handler with the ResourceEventHandlerWithContext calls (as
// ContextHandlerFuncs) gets a context that ends when it is removed or the
// informer stops; FilteringHandler passes on what a predicate accepts,
// with client-go's FilteringResourceEventHandler rules (an update that
// enters the filter is an add, one that leaves it a delete).
//
// # Concurrency and lock order
//
// Every exported method is safe for concurrent use unless its comment says
// otherwise (DeltaFIFO.Pop has one consumer). Locks are taken in this order,
// never the reverse:
//
//	SharedIndexInformer.mu -> DeltaFIFO.mu -> SharedIndexInformer.blockDeltas
//	  -> Indexer.mu, processor.mu -> listener.mu
//
// The DeltaFIFO holds its lock while its consumer applies a key's deltas to
// the Indexer, so Replace and Resync see the Indexer between pops only.
// Handlers are called with no lock held. Reflector.mu guards its progress
// and counters only and is a leaf.
//
// # Goroutines
//
// SharedIndexInformer.Run owns every goroutine the informer starts: the
// Reflector's, the resync timer's and one per handler (started by Run, or
// by AddEventHandler after Run). Each stops when Run's context is done (a
// handler's also on RemoveEventHandler), and Run returns only once all have.
// Reflector.Run runs on the caller's goroutine. A Factory runs each of
// its informers on a goroutine of its own until Start's context is done,
// and Shutdown waits for them.
//
// Time is read from the time package, so tests drive backoff, resync and
// deadlines with testing/synctest and a fake clock rather than sleeps.
package cache
