package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/listwatch/listwatch/storage"
)

// watcher reads the store's log from its own position.
type watcher struct {
	s      *Store
	prefix string
	pos    int64        // revision of the last event considered; only run touches it
	sent   atomic.Int64 // every matching event up to it has been sent
	out    chan []storage.Event
	err    error // set before out is closed
}

var _ storage.ProgressWatcher = (*watcher)(nil)

// Progress implements storage.ProgressWatcher.
func (w *watcher) Progress() int64 { return w.sent.Load() }

// RequestProgress implements storage.ProgressWatcher: progress advances on
// every write already.
func (w *watcher) RequestProgress(context.Context) error { return nil }

func (w *watcher) Events() <-chan []storage.Event { return w.out }
func (w *watcher) Err() error                     { return w.err }

// Watch implements storage.Interface.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	if err := s.begin(prefix, nil, from); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if from < s.compacted {
		return nil, fmt.Errorf("watch %q from %d, compacted at %d: %w", prefix, from, s.compacted, storage.ErrCompacted)
	}
	w := &watcher{s: s, prefix: prefix, pos: from, out: make(chan []storage.Event)}
	w.sent.Store(from)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(w.out)
		w.err = w.run(ctx)
	}()
	return w, nil
}

// run delivers the log to the watcher until ctx ends or the store closes.
func (w *watcher) run(ctx context.Context) error {
	for {
		batch, changed, err := w.pending()
		if err != nil {
			return err
		}
		if len(batch) > 0 {
			select {
			case w.out <- batch:
				w.sent.Store(w.pos)
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		w.sent.Store(w.pos)
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pending returns the watcher's next events after pos (advancing it) and the
// channel closed on the next change.
func (w *watcher) pending() ([]storage.Event, <-chan struct{}, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, storage.ErrClosed
	}
	if w.pos < s.compacted {
		return nil, nil, fmt.Errorf("watch %q at %d, compacted at %d: %w", w.prefix, w.pos, s.compacted, storage.ErrCompacted)
	}
	i, _ := slices.BinarySearchFunc(s.log, w.pos+1, func(e storage.Event, r int64) int { return int(e.Revision - r) })
	var batch []storage.Event
	for ; i < len(s.log) && len(batch) < watchBatchMax; i++ {
		e := s.log[i]
		w.pos = e.Revision
		if strings.HasPrefix(e.KV.Key, w.prefix) {
			batch = append(batch, copyEvent(e))
		}
	}
	return batch, s.changed, nil
}

func copyEvent(e storage.Event) storage.Event {
	e.KV = cloneKV(e.KV)
	if e.PrevKV != nil {
		prev := cloneKV(*e.PrevKV)
		e.PrevKV = &prev
	}
	return e
}
