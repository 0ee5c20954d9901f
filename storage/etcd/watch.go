package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/storage"
)

// Watch streams the changes under prefix after revision from.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	if err := s.checkKey(prefix); err != nil {
		return nil, fmt.Errorf("etcd: watch: %w", err)
	}
	if err := storage.ValidateRevision(from); err != nil {
		return nil, fmt.Errorf("etcd: watch %q: %w", prefix, err)
	}
	// etcd's revision 1 is its empty start, which no event has.
	last := max(from, 1)
	if err := s.checkHistory(ctx, prefix, last); err != nil {
		return nil, fmt.Errorf("etcd: watch %q from %d: %w", prefix, from, err)
	}
	if err := s.startWatch(); err != nil {
		return nil, fmt.Errorf("etcd: watch %q: %w", prefix, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closed, cancel)
	w := &watch{
		s:      s,
		caller: ctx,
		prefix: prefix,
		last:   last,
		events: make(chan []storage.Event),
	}
	go func() {
		defer s.watches.Done()
		defer cancel()
		defer stop()
		w.run(wctx)
	}()
	return w, nil
}

// checkHistory fails with ErrCompacted if the store no longer holds revision
// rev, read with the same test etcd applies to a watch from rev. A future
// revision is fine: the watch waits for it.
func (s *Store) checkHistory(ctx context.Context, prefix string, rev int64) error {
	_, err := s.cli.Get(ctx, s.key(prefix), clientv3.WithRev(rev), clientv3.WithCountOnly())
	if err != nil && !errors.Is(err, rpctypes.ErrFutureRev) {
		return s.mapErr(err)
	}
	return nil
}

// watch is one open Watch. Its goroutine (run) moves etcd's responses through
// a queue of at most the store's watchBacklog events to the reader.
type watch struct {
	s      *Store
	caller context.Context // the Watch call's ctx, whose end is the reader's doing
	prefix string
	events chan []storage.Event

	last int64 // revision of the last event queued; owned by run

	mu  sync.Mutex
	err error // why the watch ended; set before events is closed
}

func (w *watch) Events() <-chan []storage.Event { return w.events }

func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// run delivers events until ctx ends (the caller's ctx or Close) or the etcd
// watch fails. It pauses its etcd watch while the queue is full and reopens
// it after the last queued revision once the queue is empty.
func (w *watch) run(ctx context.Context) {
	var (
		queue  [][]storage.Event
		queued int                // events in queue
		up     clientv3.WatchChan // nil while paused
		stopUp = func() {}
	)
	defer func() { stopUp() }()
	for {
		if up == nil && len(queue) == 0 {
			up, stopUp = w.open(ctx)
		}
		var out chan<- []storage.Event
		var head []storage.Event
		if len(queue) > 0 {
			out, head = w.events, queue[0]
		}
		select {
		case out <- head:
			queue[0] = nil
			queue = queue[1:]
			queued -= len(head)
		case resp, ok := <-up:
			batch, err := w.receive(resp, ok)
			if err != nil {
				w.finish(fmt.Errorf("etcd: watch %q: %w", w.prefix, err))
				return
			}
			if len(batch) > 0 {
				queue = append(queue, batch)
				queued += len(batch)
			}
			if queued >= w.s.watchBacklog {
				stopUp()
				up = nil
			}
		case <-ctx.Done():
			w.finish(nil)
			return
		}
	}
}

// open starts an etcd watch from the last queued revision (its events are
// dropped by receive) and returns it with the function that stops it.
func (w *watch) open(ctx context.Context) (clientv3.WatchChan, context.CancelFunc) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	up := w.s.cli.Watch(ctx, w.s.key(w.prefix),
		clientv3.WithPrefix(), clientv3.WithRev(w.last), clientv3.WithPrevKV())
	return up, cancel
}

// receive converts one etcd response into the events after the last queued
// revision, or returns why the etcd watch ended.
func (w *watch) receive(resp clientv3.WatchResponse, ok bool) ([]storage.Event, error) {
	if !ok {
		return nil, errors.New("etcd closed the watch")
	}
	if err := resp.Err(); err != nil {
		return nil, w.s.mapErr(err)
	}
	var batch []storage.Event
	for _, ev := range resp.Events {
		if ev.Kv.ModRevision <= w.last {
			continue
		}
		e, err := w.s.event(ev)
		if err != nil {
			return nil, err
		}
		batch = append(batch, e)
	}
	if len(batch) > 0 {
		w.last = batch[len(batch)-1].Revision
	}
	return batch, nil
}

// finish records why the watch ended and closes events. The caller's ctx and
// Close take precedence over err, which they may have caused.
func (w *watch) finish(err error) {
	switch {
	case w.caller.Err() != nil:
		err = w.caller.Err()
	case w.s.closed.Err() != nil:
		err = storage.ErrClosed
	}
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	close(w.events)
}

// event converts an etcd event into a store event. An update or delete
// without its previous value (compacted before etcd read it) is ErrCompacted.
func (s *Store) event(ev *clientv3.Event) (storage.Event, error) {
	rev := ev.Kv.ModRevision
	e := storage.Event{Type: storage.EventPut, Revision: rev, KV: s.kv(ev.Kv)}
	if ev.Type == mvccpb.DELETE {
		e.Type = storage.EventDelete
		e.KV = storage.KV{Key: e.KV.Key, ModRevision: rev}
	} else if ev.IsCreate() {
		return e, nil
	}
	if ev.PrevKv == nil {
		return storage.Event{}, fmt.Errorf("%w: previous value of %q at revision %d", storage.ErrCompacted, e.KV.Key, rev)
	}
	prev := s.kv(ev.PrevKv)
	e.PrevKV = &prev
	return e, nil
}
