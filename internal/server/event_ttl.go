package server

import (
	"container/heap"
	"context"
	"encoding/json"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// eventExpiryRetry is how long event expiry waits before it follows the
// events again after its watch ended, and before it deletes again an
// event whose delete failed.
const eventExpiryRetry = time.Second

// expireEvents deletes each Event once Config.EventTTL has passed since
// its last write, as kube-apiserver does with the etcd lease it gives
// every event write (--event-ttl). It runs while this server leads, fed
// by the events' watch cache, with a timer for the next expiry. An event
// written while it follows expires TTL after it saw the write; one it
// finds at start (after a restart, or taking over from another server)
// TTL after the last write the event records (lastWrite), so that no
// event outlives its TTL for want of a server that saw it written.
func (s *Server) expireEvents(ctx context.Context) {
	events, _ := s.catalog.Get("", "v1", "events")
	var q expiryQueue
	initial := true // the watch's initial events, found rather than seen written
	watchcache.Follow(ctx, watchcache.FollowOptions{
		Cache:         func() *watchcache.Cache { return s.caches.get(events) },
		InitialEvents: true,
		OnStart:       func() { q, initial = expiryQueue{}, true },
		OnSynced:      func() { initial = false },
		Each:          func(items []watchcache.Item) { s.queueExpiries(&q, items, initial) },
		Due: func() (time.Time, bool) {
			if len(q.byAt) == 0 {
				return time.Time{}, false
			}
			return q.byAt[0].at, true
		},
		OnDue: func() { s.deleteExpired(ctx, events, &q) },
		Ended: func(err error, after time.Duration) {
			s.log.Warn("event expiry: the events' watch ended; starting over", "err", err, "after", after)
		},
		Retry: eventExpiryRetry,
	})
}

// queueExpiries gives each event of items its expiry in q: TTL after now,
// or, for an event found at start (initial), after its last write.
func (s *Server) queueExpiries(q *expiryQueue, items []watchcache.Item, initial bool) {
	now := time.Now()
	for _, it := range items {
		var ev eventTimes
		if err := json.Unmarshal(it.Object, &ev); err != nil {
			continue // the cache decoded it: cannot happen
		}
		md := ev.Metadata
		rev, err := registry.ParseResourceVersion(md.ResourceVersion)
		if err != nil {
			continue // the cache set it: cannot happen
		}
		key := expiryKey{md.Namespace, md.Name}
		switch {
		case it.Type == api.Deleted:
			q.remove(key)
		case initial:
			q.set(key, rev, ev.lastWrite(now).Add(s.cfg.EventTTL))
		default:
			q.set(key, rev, now.Add(s.cfg.EventTTL))
		}
	}
}

// deleteExpired deletes the events whose time has come, each at the
// revision it expired at and whatever its finalizers, as etcd deletes a
// key whose lease expired: one written since is left to the watch's event
// for that write, which gives it a new expiry.
func (s *Server) deleteExpired(ctx context.Context, events *resource.Resource, q *expiryQueue) {
	now := time.Now()
	for len(q.byAt) > 0 && !q.byAt[0].at.After(now) {
		e := q.byAt[0]
		err := s.registry.Expire(ctx, events, e.key.ns, e.key.name, e.rev)
		switch {
		case err == nil, isReason(err, api.StatusReasonNotFound), isReason(err, api.StatusReasonConflict):
			q.remove(e.key) // the watch brings what became of it
		case ctx.Err() != nil:
			return
		default:
			s.log.Warn("event expiry: deleting an event", "namespace", e.key.ns, "name", e.key.name, "err", err, "after", eventExpiryRetry)
			q.set(e.key, e.rev, now.Add(eventExpiryRetry))
		}
	}
}

// eventTimes is what event expiry reads of an Event.
type eventTimes struct {
	Metadata struct {
		Name              string `json:"name"`
		Namespace         string `json:"namespace"`
		ResourceVersion   string `json:"resourceVersion"`
		CreationTimestamp string `json:"creationTimestamp"`
		ManagedFields     []struct {
			Time string `json:"time"`
		} `json:"managedFields"`
	} `json:"metadata"`
	LastTimestamp string `json:"lastTimestamp"`
	EventTime     string `json:"eventTime"`
	Series        struct {
		LastObservedTime string `json:"lastObservedTime"`
	} `json:"series"`
}

// lastWrite is the time of an event's last write as the event records it,
// and never later than now: the latest time of its managedFields (the
// server sets an entry's on every write of its manager), else the latest
// of its own times (a client sets them, on each write of a series), else
// its creationTimestamp, else now.
func (ev *eventTimes) lastWrite(now time.Time) time.Time {
	latest := func(times ...string) time.Time {
		var t time.Time
		for _, s := range times {
			if p, err := time.Parse(time.RFC3339, s); err == nil && p.After(t) {
				t = p
			}
		}
		return t
	}
	var managed []string
	for _, f := range ev.Metadata.ManagedFields {
		managed = append(managed, f.Time)
	}
	t := latest(managed...)
	if t.IsZero() {
		t = latest(ev.LastTimestamp, ev.EventTime, ev.Series.LastObservedTime)
	}
	if t.IsZero() {
		t = latest(ev.Metadata.CreationTimestamp)
	}
	if t.IsZero() || t.After(now) {
		return now
	}
	return t
}

// expiryKey names an event.
type expiryKey struct{ ns, name string }

// expiry is when an event expires, at which revision.
type expiry struct {
	key   expiryKey
	rev   int64
	at    time.Time
	index int // in expiryQueue.byAt
}

// expiryQueue orders the events by expiry: a heap, each event in it once.
type expiryQueue struct {
	byAt  []*expiry
	byKey map[expiryKey]*expiry
}

func (q *expiryQueue) set(key expiryKey, rev int64, at time.Time) {
	if e, ok := q.byKey[key]; ok {
		e.rev, e.at = rev, at
		heap.Fix(q, e.index)
		return
	}
	if q.byKey == nil {
		q.byKey = map[expiryKey]*expiry{}
	}
	e := &expiry{key: key, rev: rev, at: at}
	q.byKey[key] = e
	heap.Push(q, e)
}

func (q *expiryQueue) remove(key expiryKey) {
	if e, ok := q.byKey[key]; ok {
		delete(q.byKey, key)
		heap.Remove(q, e.index)
	}
}

// heap.Interface, for the heap functions only.

func (q *expiryQueue) Len() int           { return len(q.byAt) }
func (q *expiryQueue) Less(i, j int) bool { return q.byAt[i].at.Before(q.byAt[j].at) }
func (q *expiryQueue) Swap(i, j int) {
	q.byAt[i], q.byAt[j] = q.byAt[j], q.byAt[i]
	q.byAt[i].index, q.byAt[j].index = i, j
}
func (q *expiryQueue) Push(x any) {
	e := x.(*expiry)
	e.index = len(q.byAt)
	q.byAt = append(q.byAt, e)
}
func (q *expiryQueue) Pop() any {
	e := q.byAt[len(q.byAt)-1]
	q.byAt[len(q.byAt)-1] = nil
	q.byAt = q.byAt[:len(q.byAt)-1]
	return e
}
