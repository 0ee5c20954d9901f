package crd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// retryDelay is how long Sync waits before relisting after its watch failed
// (the store unreachable, or the watch's revision compacted).
const retryDelay = time.Second

// listPageSize bounds each page of the definitions list.
const listPageSize = 500

// Sync keeps a catalogue serving the resources of the definitions in a store.
// Every change is applied at most once and never older over newer: the
// revision of the last state applied is kept per definition, deletions
// included.
type Sync struct {
	catalog     *resource.Catalog
	store       storage.Interface
	definitions *resource.Resource // the customresourcedefinitions resource, for keys
	log         *slog.Logger

	mu   sync.Mutex       // serialises apply; never held while calling the store
	revs map[string]int64 // guarded by mu: definition name -> revision applied

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start loads the definitions in store into catalog and follows their
// changes until Close. definitions is the customresourcedefinitions resource.
func Start(ctx context.Context, catalog *resource.Catalog, store storage.Interface, definitions *resource.Resource, log *slog.Logger) (*Sync, error) {
	s := &Sync{catalog: catalog, store: store, definitions: definitions, log: log, revs: map[string]int64{}}
	rev, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.wg.Go(func() { s.run(wctx, rev) })
	return s, nil
}

// Close stops following changes and waits for the goroutine to end.
func (s *Sync) Close() {
	s.cancel()
	s.wg.Wait()
}

// Refresh applies the stored state of one definition, after a write through
// this server, so the response goes out once the catalogue serves it. It
// reports whether the definition is gone.
func (s *Sync) Refresh(ctx context.Context, name string) (gone bool, err error) {
	before, err := s.store.CurrentRevision(ctx)
	if err != nil {
		return false, fmt.Errorf("refreshing CustomResourceDefinition %s: %w", name, err)
	}
	kv, err := s.store.Get(ctx, s.definitions.Key("", name))
	if errors.Is(err, storage.ErrNotFound) {
		s.apply(name, before, nil) // absent at some revision >= before
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("refreshing CustomResourceDefinition %s: %w", name, err)
	}
	s.applyKV(kv)
	return false, nil
}

// run follows the store from rev, relisting after a failed watch, until ctx
// ends or the store closes.
func (s *Sync) run(ctx context.Context, rev int64) {
	for {
		err := s.follow(ctx, rev)
		if ctx.Err() != nil || errors.Is(err, storage.ErrClosed) {
			return
		}
		s.log.Warn("CustomResourceDefinition watch ended; relisting", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryDelay):
		}
		if rev, err = s.load(ctx); err != nil {
			rev = 0 // a failed relist is retried by the next round's watch error
		}
	}
}

// follow applies the events of one watch until it ends, returning why.
func (s *Sync) follow(ctx context.Context, rev int64) error {
	if rev == 0 {
		return errors.New("no revision to watch from")
	}
	w, err := s.store.Watch(ctx, s.definitions.KeyPrefix(""), rev)
	if err != nil {
		return fmt.Errorf("watching CustomResourceDefinitions: %w", err)
	}
	for batch := range w.Events() {
		for _, ev := range batch {
			if ev.Type == storage.EventDelete {
				s.apply(nameOfKey(s.definitions, ev.KV.Key), ev.Revision, nil)
				continue
			}
			s.applyKV(ev.KV)
		}
	}
	return w.Err()
}

// load lists every definition, applies each, removes those no longer
// stored, and returns the revision of the list.
func (s *Sync) load(ctx context.Context) (int64, error) {
	opts := storage.ListOptions{Limit: listPageSize}
	stored := map[string]bool{}
	for {
		page, err := s.store.List(ctx, s.definitions.KeyPrefix(""), opts)
		if err != nil {
			return 0, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
		}
		for _, kv := range page.KVs {
			stored[nameOfKey(s.definitions, kv.Key)] = true
			s.applyKV(kv)
		}
		if page.Continue == "" {
			s.removeAbsent(stored, page.Revision)
			return page.Revision, nil
		}
		opts = storage.ListOptions{Limit: listPageSize, Continue: page.Continue}
	}
}

func (s *Sync) removeAbsent(stored map[string]bool, rev int64) {
	s.mu.Lock()
	var gone []string
	for name := range s.revs {
		if !stored[name] {
			gone = append(gone, name)
		}
	}
	s.mu.Unlock()
	for _, name := range gone {
		s.apply(name, rev, nil)
	}
}

func (s *Sync) applyKV(kv storage.KV) {
	name := nameOfKey(s.definitions, kv.Key)
	obj, err := api.ParseObject(kv.Value)
	if err != nil {
		s.log.Error("stored CustomResourceDefinition is not JSON; not serving it", "name", name, "err", err)
		obj = nil
	}
	s.apply(name, kv.ModRevision, obj)
}

// apply makes the catalogue serve obj's resources (none when obj is nil),
// unless a state at rev or later is already applied.
func (s *Sync) apply(name string, rev int64, obj api.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.revs[name]; ok && rev <= last {
		return
	}
	s.revs[name] = rev
	var rs []*resource.Resource
	if obj != nil {
		var err error
		if rs, err = Resources(obj); err != nil {
			s.log.Error("invalid stored CustomResourceDefinition; not serving it", "name", name, "err", err)
		}
	}
	s.catalog.Replace(name, rs)
}

// nameOfKey returns the definition name a storage key holds.
func nameOfKey(definitions *resource.Resource, key string) string {
	return strings.TrimPrefix(key, definitions.KeyPrefix(""))
}
