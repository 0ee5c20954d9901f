// Package workqueue is the queue a controller's workers take keys from: a
// de-duplicating FIFO with delayed adds and per-item rate limiting, generic
// over the item type (usually a "namespace/name" string).
//
// # Semantics
//
// The queue is fair (items are handed out in the order they were first
// added) and stingy:
//   - An item added while it waits is not added again: however many times
//     it is added before a worker takes it, it is processed once.
//   - An item is never processed by two workers at once. An item added while
//     a worker holds it (between Get and Done) waits in the dirty set and is
//     queued again when Done is called, so the latest change is never lost.
//
// AddAfter makes an item ready after a delay; if the item already waits for
// a later time, the earlier one wins. AddRateLimited adds it after the delay
// its RateLimiter says; Forget tells the rate limiter the item succeeded, so
// its next failure starts from the base delay again. The default limiter
// (DefaultControllerRateLimiter) is client-go's: the larger of a per-item
// exponential backoff (5 ms·2^n, at most 1000 s) and an overall token bucket
// (10 per second, burst 100).
//
// ShutDown makes the queue ignore new items; workers still get what is
// queued, and Get reports shutdown once the queue is empty. ShutDownWithDrain
// also waits until every item handed out has been marked Done.
//
// # Concurrency
//
// All methods are safe for concurrent use. The queue has one mutex (a leaf:
// no other lock is taken while it is held, and rate limiters are called
// outside it). Delayed items wait on runtime timers (time.AfterFunc), which
// ShutDown stops; the queue starts no goroutine of its own.
//
// # Metrics
//
// Options.Metrics, a MetricsProvider, records client-go's workqueue
// metrics under Options.Name, with client-go's semantics (depth counts an
// item added while it is processed; every AddAfter is a retry). The
// package imports no metrics library: package controller provides one for
// Prometheus.
//
// Time is read with the time package, so tests drive it with
// testing/synctest rather than sleeps.
package workqueue
