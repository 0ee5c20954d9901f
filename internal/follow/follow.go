// Package follow keeps a caller's in-memory view of the keys under one
// storage prefix current: it lists them, then follows their changes with a
// watch, relisting when the watch fails (the store unreachable, or its
// revision compacted), until Close.
//
// Every change reaches the caller's Apply at most once and never older over
// newer: the revision of the last state applied is kept per key, deletions
// included, so that a Refresh after a write through this server (read your
// writes) and the watch's later event for the same write agree. A deleted
// key is forgotten once the watch has delivered every revision up to its
// deletion: no older state of it can arrive after that.
//
// Apply calls are serialised under the Follower's mutex; Apply must not
// call the Follower back, and what it takes (a write of its own) holds up
// the watch and Refresh meanwhile.
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// retryDelay is how long a Follower waits before relisting after its watch
// failed.
const retryDelay = time.Second

// listPageSize bounds each page of a list.
const listPageSize = 500

// Apply receives the state of key at revision rev: its value, or nil when
// the key is gone. A key gone may be reported gone again, at a later
// revision (a relist does not tell deleted keys from absent ones).
type Apply func(key string, rev int64, value []byte)

// Follower follows one prefix of a store.
type Follower struct {
	store  storage.Interface
	prefix string
	what   string // names the keys in errors and logs
	apply  Apply
	log    *slog.Logger

	mu sync.Mutex // serialises apply; the Follower calls the store without it
	// guarded by mu:
	revs map[string]state // key -> the state applied
	// floor is the revision up to which the watch has delivered every
	// change; gone lists the keys whose state is a deletion, forgotten
	// once the floor passes it (a key without a state and a revision at or
	// below the floor is stale).
	floor int64
	gone  []string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// state is the last state applied of a key.
type state struct {
	rev  int64
	gone bool
}

// Start applies every key under prefix, then follows their changes until
// Close. what names the keys ("CustomResourceDefinitions") in errors and
// logs.
func Start(ctx context.Context, store storage.Interface, prefix, what string, apply Apply, log *slog.Logger) (*Follower, error) {
	f := &Follower{store: store, prefix: prefix, what: what, apply: apply, log: log, revs: map[string]state{}}
	rev, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f.cancel = cancel
	f.wg.Go(func() { f.run(wctx, rev) })
	return f, nil
}

// Close stops following changes and waits for the goroutine to end.
func (f *Follower) Close() {
	f.cancel()
	f.wg.Wait()
}

// Refresh applies the stored state of key, after a write through this
// server, so that the response goes out once the view has it. It reports
// whether the key is gone.
func (f *Follower) Refresh(ctx context.Context, key string) (gone bool, err error) {
	before, err := f.store.CurrentRevision(ctx)
	if err != nil {
		return false, fmt.Errorf("refreshing %s %s: %w", f.what, key, err)
	}
	kv, err := f.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		f.set(key, before, nil) // absent at some revision >= before
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("refreshing %s %s: %w", f.what, key, err)
	}
	f.set(kv.Key, kv.ModRevision, kv.Value)
	return false, nil
}

// run follows the store from rev, relisting after a failed watch, until ctx
// ends or the store closes.
func (f *Follower) run(ctx context.Context, rev int64) {
	for {
		err := f.follow(ctx, rev)
		if ctx.Err() != nil || errors.Is(err, storage.ErrClosed) {
			return
		}
		f.log.Warn("watch ended; relisting", "what", f.what, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryDelay):
		}
		if rev, err = f.load(ctx); err != nil {
			rev = notListed // retried by the next round's watch error
		}
	}
}

// notListed is the revision to follow from after a failed relist: none.
// (0 is a revision: that of an empty store, watched from its first write.)
const notListed = -1

// follow applies the events of one watch until it ends, returning why.
func (f *Follower) follow(ctx context.Context, rev int64) error {
	if rev == notListed {
		return errors.New("no revision to watch from")
	}
	w, err := f.store.Watch(ctx, f.prefix, rev)
	if err != nil {
		return fmt.Errorf("watching %s: %w", f.what, err)
	}
	for batch := range w.Events() {
		for _, ev := range batch {
			if ev.Type == storage.EventDelete {
				f.set(ev.KV.Key, ev.Revision, nil)
				continue
			}
			f.set(ev.KV.Key, ev.KV.ModRevision, ev.KV.Value)
		}
		if len(batch) > 0 {
			f.forget(batch[len(batch)-1].Revision)
		}
	}
	return w.Err()
}

// load lists every key, applies each, removes those no longer stored, and
// returns the revision of the list.
func (f *Follower) load(ctx context.Context) (int64, error) {
	opts := storage.ListOptions{Limit: listPageSize}
	stored := map[string]bool{}
	for {
		page, err := f.store.List(ctx, f.prefix, opts)
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", f.what, err)
		}
		for _, kv := range page.KVs {
			stored[kv.Key] = true
			f.set(kv.Key, kv.ModRevision, kv.Value)
		}
		if page.Continue == "" {
			f.removeAbsent(stored, page.Revision)
			return page.Revision, nil
		}
		opts = storage.ListOptions{Limit: listPageSize, Continue: page.Continue}
	}
}

func (f *Follower) removeAbsent(stored map[string]bool, rev int64) {
	f.mu.Lock()
	var gone []string
	for key := range f.revs {
		if !stored[key] {
			gone = append(gone, key)
		}
	}
	f.mu.Unlock()
	for _, key := range gone {
		f.set(key, rev, nil)
	}
}

// set applies key's state at rev unless a state at rev or later is
// already applied, or the key is forgotten and rev not past the floor.
func (f *Follower) set(key string, rev int64, value []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, ok := f.revs[key]
	if ok && rev <= last.rev || !ok && rev <= f.floor {
		return
	}
	f.revs[key] = state{rev: rev, gone: value == nil}
	if value == nil {
		f.gone = append(f.gone, key)
	}
	f.apply(key, rev, value)
}

// forget raises the floor to rev, the watch having delivered every change
// up to it, and forgets the deleted keys at or below it, so that keys
// deleted long ago take no memory and are not reported gone again at each
// relist.
func (f *Follower) forget(rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.floor = max(f.floor, rev)
	kept := f.gone[:0]
	for _, key := range f.gone {
		st, ok := f.revs[key]
		switch {
		case !ok || !st.gone:
		case st.rev <= f.floor:
			delete(f.revs, key)
		default:
			kept = append(kept, key)
		}
	}
	clear(f.gone[len(kept):])
	f.gone = kept
}
