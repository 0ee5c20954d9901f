// Package controller runs a reconcile function over a work queue fed by
// informers: the loop controller-runtime's Controller runs, in a few
// hundred lines over this module's cache and workqueue.
//
// # Semantics
//
// A Controller is told which objects to reconcile by its sources:
//   - For(c, informer): every add, update and delete of an object of the
//     primary kind enqueues that object's Request (namespace and name).
//   - Owns(c, informer, owner, refs): an event on an owned object enqueues
//     the object named by its controller ownerReference (the one with
//     controller: true) when that reference's group and kind are owner's;
//     the version is not compared, as in controller-runtime, so an owner
//     served at several versions is matched by all. OwnerType.EveryOwner
//     enqueues every owner of the type instead. An update enqueues the
//     owners of the old object and of the new one.
//   - Watches(c, informer, mapper): the escape hatch; mapper says which
//     Requests an object's events enqueue.
//
// Start waits until every source's handler has seen its informer's first
// list (the informers are run by the caller), then runs
// Options.MaxConcurrentReconciles workers. The queue never hands one
// Request to two workers at once, and a Request enqueued many times while it
// waits is reconciled once. After each reconcile, as controller-runtime
// does:
//   - an error: the Request is queued again after the rate limiter's
//     backoff (Result is ignored);
//   - Result.RequeueAfter > 0: its backoff is forgotten and it is queued
//     again after that duration;
//   - Result.Requeue: queued again after the rate limiter's backoff;
//   - otherwise its backoff is forgotten.
//
// A panic in the Reconciler is recovered, logged with its stack, counted,
// and handled as an error (the Request is retried with backoff); the
// worker goes on.
//
// # Shutdown
//
// When Start's context is done, the context of every reconcile in flight
// is cancelled (it is Start's), workers take no new item, the queue is
// shut down and the controller's handlers are removed from the informers.
// Start returns once every worker has returned, or with ErrDrainTimeout
// after Options.DrainTimeout if a Reconciler ignores its context (its
// goroutine cannot be stopped and is left behind).
//
// # Concurrency
//
// Every function and method is safe for concurrent use. Start owns the
// workers it starts and joins them before it returns (except after
// ErrDrainTimeout); the informers' handler goroutines only add to the
// queue. Controller.mu guards its start and its sources; adding a source
// takes the informer's locks under it, and nothing takes it under another
// lock. The queue's lock is taken with no other held.
//
// # Health and metrics
//
// Probes serves /healthz and /readyz from the informers' HasSynced and
// their reflectors' last progress. Options.Metrics records the
// controller's and its queue's metrics through a MetricsProvider (package
// controllermetrics exports controller-runtime's and client-go's metrics
// to a Prometheus registry); without it nothing is recorded.
package controller
