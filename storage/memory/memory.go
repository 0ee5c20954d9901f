// Package memory is an in-memory storage.Interface: the reference backend the
// conformance suite is checked against, and a fast store for tests of the
// layers above (the watch cache, the server).
//
// It keeps the current state in a map and every change since the compaction
// revision in a log. A past revision is read by undoing the log's later
// events; a watch reads the log at its own pace, so a slow watcher costs
// memory (the log it holds back from nothing: compaction still trims it) but
// never blocks a writer. Nothing survives Close.
package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/storage"
)

// watchBatchMax caps the events handed to a watcher at once, so one slow
// consumer's batch does not grow without bound.
const watchBatchMax = 1000

// Store is an in-memory storage.Interface.
type Store struct {
	mu sync.Mutex
	// guarded by mu:
	kvs       map[string]storage.KV
	log       []storage.Event // events with revision > compacted, in order
	rev       int64
	compacted int64
	changed   chan struct{} // closed and replaced on every write and on Close
	closed    bool

	wg sync.WaitGroup // watcher goroutines
}

var _ storage.Interface = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{kvs: map[string]storage.KV{}, changed: make(chan struct{})}
}

func cloneKV(kv storage.KV) storage.KV {
	kv.Value = slices.Clone(kv.Value)
	return kv
}

// commit appends e to the log and wakes watchers. Called with mu held.
func (s *Store) commit(e storage.Event) {
	s.log = append(s.log, e)
	close(s.changed)
	s.changed = make(chan struct{})
}

// begin locks the store and validates a write's key, value and revision.
func (s *Store) begin(key string, value []byte, rev int64) error {
	if err := storage.ValidateKey(key); err != nil {
		return err
	}
	if err := storage.ValidateValue(value); err != nil {
		return err
	}
	if err := storage.ValidateRevision(rev); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	return nil
}

// Create implements storage.Interface.
func (s *Store) Create(_ context.Context, key string, value []byte) (int64, error) {
	if err := s.begin(key, value, 0); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.kvs[key]; ok {
		return 0, fmt.Errorf("create %q: %w", key, storage.ErrKeyExists)
	}
	s.rev++
	kv := storage.KV{Key: key, Value: slices.Clone(value), CreateRevision: s.rev, ModRevision: s.rev}
	s.kvs[key] = kv
	s.commit(storage.Event{Type: storage.EventPut, Revision: s.rev, KV: kv})
	return s.rev, nil
}

// Get implements storage.Interface.
func (s *Store) Get(_ context.Context, key string) (storage.KV, error) {
	if err := s.begin(key, nil, 0); err != nil {
		return storage.KV{}, err
	}
	defer s.mu.Unlock()
	kv, ok := s.kvs[key]
	if !ok {
		return storage.KV{}, fmt.Errorf("get %q: %w", key, storage.ErrNotFound)
	}
	return cloneKV(kv), nil
}

// current returns key's KV if it exists and matches expected (0: any).
// Called with mu held.
func (s *Store) current(key string, expected int64) (storage.KV, error) {
	kv, ok := s.kvs[key]
	if !ok {
		return storage.KV{}, fmt.Errorf("%q: %w", key, storage.ErrNotFound)
	}
	if expected != 0 && kv.ModRevision != expected {
		return storage.KV{}, &storage.ConflictError{Key: key, Expected: expected, Current: cloneKV(kv)}
	}
	return kv, nil
}

// Update implements storage.Interface.
func (s *Store) Update(_ context.Context, key string, expected int64, value []byte) (int64, error) {
	if err := s.begin(key, value, expected); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	prev, err := s.current(key, expected)
	if err != nil {
		return 0, fmt.Errorf("update: %w", err)
	}
	s.rev++
	kv := storage.KV{Key: key, Value: slices.Clone(value), CreateRevision: prev.CreateRevision, ModRevision: s.rev}
	s.kvs[key] = kv
	s.commit(storage.Event{Type: storage.EventPut, Revision: s.rev, KV: kv, PrevKV: &prev})
	return s.rev, nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(_ context.Context, key string, expected int64) (storage.KV, int64, error) {
	if err := s.begin(key, nil, expected); err != nil {
		return storage.KV{}, 0, err
	}
	defer s.mu.Unlock()
	prev, err := s.current(key, expected)
	if err != nil {
		return storage.KV{}, 0, fmt.Errorf("delete: %w", err)
	}
	s.rev++
	delete(s.kvs, key)
	s.commit(storage.Event{Type: storage.EventDelete, Revision: s.rev, KV: storage.KV{Key: key, ModRevision: s.rev}, PrevKV: &prev})
	return cloneKV(prev), s.rev, nil
}

// List implements storage.Interface.
func (s *Store) List(_ context.Context, prefix string, opts storage.ListOptions) (storage.ListResponse, error) {
	rev, start, err := listStart(prefix, opts)
	if err != nil {
		return storage.ListResponse{}, err
	}
	if err := s.begin(prefix, nil, rev); err != nil {
		return storage.ListResponse{}, err
	}
	defer s.mu.Unlock()
	if rev == 0 {
		rev = s.rev
	}
	state, err := s.stateAt(rev)
	if err != nil {
		return storage.ListResponse{}, fmt.Errorf("list %q at %d: %w", prefix, rev, err)
	}
	resp := storage.ListResponse{Revision: rev}
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if !strings.HasPrefix(k, prefix) || k < start {
			continue
		}
		if opts.Limit > 0 && int64(len(resp.KVs)) == opts.Limit {
			resp.Continue = storage.EncodeContinue(prefix, rev, k)
			break
		}
		resp.KVs = append(resp.KVs, cloneKV(state[k]))
	}
	return resp, nil
}

// listStart returns the revision and first key a List reads from.
func listStart(prefix string, opts storage.ListOptions) (int64, string, error) {
	if opts.Limit < 0 {
		return 0, "", fmt.Errorf("%w: negative limit %d", storage.ErrInvalidArgument, opts.Limit)
	}
	if opts.Continue == "" {
		return opts.Revision, prefix, nil
	}
	return storage.DecodeContinue(prefix, opts.Continue)
}

// stateAt returns the state as of rev. Called with mu held.
func (s *Store) stateAt(rev int64) (map[string]storage.KV, error) {
	switch {
	case rev > s.rev:
		return nil, storage.ErrFutureRevision
	case rev < s.compacted:
		return nil, storage.ErrCompacted
	case rev == s.rev:
		return s.kvs, nil
	}
	state := maps.Clone(s.kvs)
	for i := len(s.log) - 1; i >= 0 && s.log[i].Revision > rev; i-- {
		e := s.log[i]
		if e.PrevKV == nil {
			delete(state, e.KV.Key)
		} else {
			state[e.KV.Key] = *e.PrevKV
		}
	}
	return state, nil
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, storage.ErrClosed
	}
	return s.rev, nil
}

// Compact implements storage.Interface.
func (s *Store) Compact(_ context.Context, rev int64) error {
	if err := s.begin("/", nil, rev); err != nil {
		return err
	}
	defer s.mu.Unlock()
	switch {
	case rev > s.rev:
		return fmt.Errorf("compact at %d, current %d: %w", rev, s.rev, storage.ErrFutureRevision)
	case rev <= s.compacted:
		return nil
	}
	s.compacted = rev
	i, _ := slices.BinarySearchFunc(s.log, rev+1, func(e storage.Event, r int64) int { return int(e.Revision - r) })
	s.log = slices.Clone(s.log[i:])
	close(s.changed) // lagging watchers learn they were compacted
	s.changed = make(chan struct{})
	return nil
}

// Close implements storage.Interface.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.changed)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
