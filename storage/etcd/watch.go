package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

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
		s:         s,
		caller:    ctx,
		prefix:    prefix,
		stream:    strconv.FormatUint(watchStreams.Add(1), 10),
		events:    make(chan []storage.Event),
		progressc: make(chan struct{}, 1),
		last:      last,
	}
	w.progress.Store(last)
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

// watchStreams numbers watches, so that each gets a gRPC stream of its own
// (clientv3 shares one among watches whose contexts carry the same metadata):
// etcd answers a progress request only when every watch on the stream is
// current, so a watch catching up would otherwise stall the progress of all.
var watchStreams atomic.Uint64

// watch is one open Watch. Its goroutine (run) moves etcd's responses through
// a queue of about the store's watchBacklog events to the reader.
type watch struct {
	s         *Store
	caller    context.Context // the Watch call's ctx, whose end is the reader's doing
	prefix    string
	stream    string // names the watch's gRPC stream; see watchStreams
	events    chan []storage.Event
	progressc chan struct{} // RequestProgress's request to run; buffered, coalescing
	progress  atomic.Int64  // see Progress; raised by run as batches are sent
	last      int64         // revision of the last event queued; owned by run

	mu  sync.Mutex
	err error // why the watch ended; set before events is closed
}

var _ storage.ProgressWatcher = (*watch)(nil)

func (w *watch) Events() <-chan []storage.Event { return w.events }

func (w *watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Progress returns a revision up to which every event has been sent.
func (w *watch) Progress() int64 { return w.progress.Load() }

// RequestProgress asks etcd, through the watch's goroutine, for a progress
// notification. etcd sends one only while the watch is current, so a watch
// that is catching up or paused gains nothing until it is; ask again.
func (w *watch) RequestProgress(context.Context) error {
	select {
	case w.progressc <- struct{}{}:
	default: // a request is already pending
	}
	return nil
}

// batch is events received together, and the progress their sending proves.
type batch struct {
	events   []storage.Event
	progress int64
}

// upstream is the etcd watch of a watch, while it is open.
type upstream struct {
	ch     clientv3.WatchChan // nil while paused or failed
	ctx    context.Context    // the context ch was opened with (its stream's key)
	cancel context.CancelFunc
}

func (u *upstream) stop() {
	if u.ch != nil {
		u.cancel()
		*u = upstream{}
	}
}

// run delivers events until ctx ends (the caller's ctx or Close) or the etcd
// watch fails, in which case it delivers what it has queued before it ends.
// It pauses its etcd watch while the queue is full and reopens it after the
// last queued revision once the queue is empty.
func (w *watch) run(ctx context.Context) {
	var (
		queue  []batch
		queued int // events in queue
		up     upstream
		failed error // why the etcd watch ended, once it has
	)
	defer up.stop()
	for {
		if len(queue) == 0 {
			if failed != nil {
				w.finish(failed)
				return
			}
			if up.ch == nil {
				up = w.open(ctx)
			}
		}
		var out chan<- []storage.Event
		var head batch
		if len(queue) > 0 {
			out, head = w.events, queue[0]
		}
		select {
		case out <- head.events:
			w.progress.Store(head.progress)
			queue[0] = batch{}
			queue = queue[1:]
			queued -= len(head.events)
		case resp, ok := <-up.ch:
			b, err := w.receive(resp, ok)
			switch {
			case err != nil:
				failed = fmt.Errorf("etcd: watch %q: %w", w.prefix, err)
			case len(b.events) > 0:
				queue = append(queue, b)
				queued += len(b.events)
			case len(queue) > 0: // progress, proven once the queue is sent
				queue[len(queue)-1].progress = b.progress
			default:
				w.progress.Store(b.progress)
			}
			if failed != nil || queued >= w.s.watchBacklog {
				up.stop()
			}
		case <-w.progressc:
			if up.ch != nil {
				// Best effort, like the notification itself: the reader asks again.
				_ = w.s.cli.RequestProgress(up.ctx)
			}
		case <-ctx.Done():
			w.finish(nil)
			return
		}
	}
}

// open starts an etcd watch from the last queued revision (its events are
// dropped by receive) on the watch's own gRPC stream.
func (w *watch) open(ctx context.Context) upstream {
	ctx = metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), "listwatch-watch", w.stream)
	ctx, cancel := context.WithCancel(ctx)
	ch := w.s.cli.Watch(ctx, w.s.key(w.prefix),
		clientv3.WithPrefix(), clientv3.WithRev(w.last), clientv3.WithPrevKV())
	return upstream{ch: ch, ctx: ctx, cancel: cancel}
}

// receive converts one etcd response into the events after the last queued
// revision, or a progress notification into a batch of none, or returns why
// the etcd watch ended.
func (w *watch) receive(resp clientv3.WatchResponse, ok bool) (batch, error) {
	if !ok {
		return batch{}, errors.New("etcd closed the watch")
	}
	if err := resp.Err(); err != nil {
		return batch{}, w.s.mapErr(err)
	}
	if resp.IsProgressNotify() {
		// etcd has sent every event up to the header's revision.
		return batch{progress: max(resp.Header.Revision, w.last)}, nil
	}
	var events []storage.Event
	for _, ev := range resp.Events {
		if ev.Kv.ModRevision <= w.last {
			continue
		}
		e, err := w.s.event(ev)
		if err != nil {
			return batch{}, err
		}
		events = append(events, e)
	}
	if len(events) > 0 {
		w.last = events[len(events)-1].Revision
	}
	return batch{events: events, progress: w.last}, nil
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
