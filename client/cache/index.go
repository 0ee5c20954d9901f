package cache

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/listwatch/listwatch/client"
)

// NamespaceIndex is the name of the index every Indexer has, the one
// NamespaceLister reads: objects by namespace ("" for cluster-scoped
// ones), unless NewIndexer was given an index of that name, which is then
// the namespace index (as client-go's Indexers{NamespaceIndex: ...}).
const NamespaceIndex = "namespace"

// ErrNoIndex is returned, wrapped, for a query of an index that does not exist.
var ErrNoIndex = errors.New("no such index")

// IndexFunc returns the values an object is indexed under (none, one or many).
type IndexFunc[T any] func(obj T) []string

// Indexers names index functions.
type Indexers[T any] map[string]IndexFunc[T]

// namespaceIndexFunc indexes an object by its namespace.
func namespaceIndexFunc[T client.Object](obj T) []string { return []string{obj.GetNamespace()} }

// set is a set of keys.
type set map[string]struct{}

// Indexer is a thread-safe store of objects by key with secondary indices.
//
// Objects returned by Get, List, ByIndex and the Listers are the cached
// objects themselves, shared with every other reader: they must not be
// modified. Copy an object before changing it (for example to send an
// update). Index functions must depend only on the object.
type Indexer[T client.Object] struct {
	keyFunc KeyFunc[T]

	mu       sync.RWMutex
	items    map[string]T        // guarded by mu
	indexers Indexers[T]         // guarded by mu
	indices  map[string]indexMap // guarded by mu; index name -> value -> keys
	// byNamespace is indices[NamespaceIndex] when it is the built-in one
	// (nil when NewIndexer was given its own), and custom the other
	// indices, so that a write reindexes without iterating over maps or
	// allocating its namespace's one-value slice.
	byNamespace indexMap         // guarded by mu
	custom      []customIndex[T] // guarded by mu
}

// customIndex is an index other than the built-in namespace one.
type customIndex[T any] struct {
	f   IndexFunc[T]
	idx indexMap
}

// indexMap maps an index value to the keys of the objects that have it.
type indexMap map[string]set

// NewIndexer returns an empty Indexer keyed by MetaNamespaceKeyFunc, with
// the given indices and, unless they name one NamespaceIndex (which then
// replaces it), the built-in namespace index.
func NewIndexer[T client.Object](indexers Indexers[T]) *Indexer[T] {
	x := &Indexer[T]{
		keyFunc:  MetaNamespaceKeyFunc[T],
		items:    map[string]T{},
		indexers: Indexers[T]{},
		indices:  map[string]indexMap{},
	}
	if _, ok := indexers[NamespaceIndex]; !ok {
		x.byNamespace = indexMap{}
		x.indexers[NamespaceIndex] = namespaceIndexFunc[T]
		x.indices[NamespaceIndex] = x.byNamespace
	}
	for name, f := range indexers {
		x.addIndexLocked(name, f)
	}
	return x
}

// Key returns the key obj is stored under.
func (x *Indexer[T]) Key(obj T) string { return x.keyFunc(obj) }

// Add inserts or replaces obj.
func (x *Indexer[T]) Add(obj T) { x.Update(obj) }

// Update inserts or replaces obj.
func (x *Indexer[T]) Update(obj T) { x.updateKey(x.keyFunc(obj), obj) }

// updateKey inserts or replaces obj, whose key the caller has computed,
// and returns the object it replaced, if any.
func (x *Indexer[T]) updateKey(key string, obj T) (old T, had bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had = x.items[key]
	x.items[key] = obj
	x.reindexLocked(key, old, had, obj, true)
	return old, had
}

// Delete removes the object stored under obj's key.
func (x *Indexer[T]) Delete(obj T) { x.DeleteKey(x.keyFunc(obj)) }

// DeleteKey removes the object stored under key, if any.
func (x *Indexer[T]) DeleteKey(key string) { x.deleteKey(key) }

// deleteKey removes the object stored under key and reports whether there
// was one.
func (x *Indexer[T]) deleteKey(key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.items[key]
	if ok {
		delete(x.items, key)
		var zero T
		x.reindexLocked(key, old, true, zero, false)
	}
	return ok
}

// Get returns the stored object with obj's key.
func (x *Indexer[T]) Get(obj T) (T, bool) { return x.GetByKey(x.keyFunc(obj)) }

// GetByKey returns the object stored under key.
func (x *Indexer[T]) GetByKey(key string) (T, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	obj, ok := x.items[key]
	return obj, ok
}

// List returns every object, in no particular order.
func (x *Indexer[T]) List() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]T, 0, len(x.items))
	for _, obj := range x.items {
		out = append(out, obj)
	}
	return out
}

// ListKeys returns every key, in no particular order.
func (x *Indexer[T]) ListKeys() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.items))
	for key := range x.items {
		out = append(out, key)
	}
	return out
}

// Len returns the number of objects.
func (x *Indexer[T]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.items)
}

// AddIndexers adds indices, indexing the objects already stored. A name
// already in use is an error and changes nothing.
func (x *Indexer[T]) AddIndexers(indexers Indexers[T]) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for name := range indexers {
		if _, ok := x.indexers[name]; ok {
			return fmt.Errorf("adding index %q: an index with that name exists", name)
		}
	}
	for name, f := range indexers {
		idx := x.addIndexLocked(name, f)
		for key, obj := range x.items {
			idx.add(f(obj), key)
		}
	}
	return nil
}

// addIndexLocked adds an empty index.
func (x *Indexer[T]) addIndexLocked(name string, f IndexFunc[T]) indexMap {
	idx := indexMap{}
	x.indexers[name] = f
	x.indices[name] = idx
	x.custom = append(x.custom, customIndex[T]{f: f, idx: idx})
	return idx
}

// Index returns the objects that share an index value with obj.
func (x *Indexer[T]) Index(name string, obj T) ([]T, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, idx, err := x.lookupIndexLocked(name)
	if err != nil {
		return nil, err
	}
	keys := set{}
	for _, v := range f(obj) {
		for key := range idx[v] {
			keys[key] = struct{}{}
		}
	}
	return x.objectsLocked(keys), nil
}

// ByIndex returns the objects whose index function returned value.
func (x *Indexer[T]) ByIndex(name, value string) ([]T, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, idx, err := x.lookupIndexLocked(name)
	if err != nil {
		return nil, err
	}
	return x.objectsLocked(idx[value]), nil
}

// IndexKeys returns the keys of the objects whose index function returned value.
func (x *Indexer[T]) IndexKeys(name, value string) ([]string, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, idx, err := x.lookupIndexLocked(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(idx[value]))
	for key := range idx[value] {
		out = append(out, key)
	}
	return out, nil
}

// ListIndexFuncValues returns the values index name has objects under.
func (x *Indexer[T]) ListIndexFuncValues(name string) ([]string, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, idx, err := x.lookupIndexLocked(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(idx))
	for v := range idx {
		out = append(out, v)
	}
	return out, nil
}

func (x *Indexer[T]) lookupIndexLocked(name string) (IndexFunc[T], indexMap, error) {
	f, ok := x.indexers[name]
	if !ok {
		return nil, nil, fmt.Errorf("index %q: %w", name, ErrNoIndex)
	}
	return f, x.indices[name], nil
}

func (x *Indexer[T]) objectsLocked(keys set) []T {
	out := make([]T, 0, len(keys))
	for key := range keys {
		out = append(out, x.items[key])
	}
	return out
}

// reindexLocked moves key from the index values of old (if had) to those of
// obj (if has), leaving an index alone when they are the same.
func (x *Indexer[T]) reindexLocked(key string, old T, had bool, obj T, has bool) {
	if x.byNamespace != nil {
		x.reindexNamespaceLocked(key, old, had, obj, has)
	}
	for _, c := range x.custom {
		var before, after []string
		if had {
			before = c.f(old)
		}
		if has {
			after = c.f(obj)
		}
		if had && has && slices.Equal(before, after) {
			continue
		}
		c.idx.remove(before, key)
		c.idx.add(after, key)
	}
}

// reindexNamespaceLocked is reindexLocked for the built-in namespace index.
func (x *Indexer[T]) reindexNamespaceLocked(key string, old T, had bool, obj T, has bool) {
	switch {
	case had && has && old.GetNamespace() == obj.GetNamespace():
	case had && has:
		x.byNamespace.removeOne(old.GetNamespace(), key)
		x.byNamespace.addOne(obj.GetNamespace(), key)
	case had:
		x.byNamespace.removeOne(old.GetNamespace(), key)
	case has:
		x.byNamespace.addOne(obj.GetNamespace(), key)
	}
}

func (m indexMap) add(values []string, key string) {
	for _, v := range values {
		m.addOne(v, key)
	}
}

func (m indexMap) addOne(value, key string) {
	keys := m[value]
	if keys == nil {
		keys = set{}
		m[value] = keys
	}
	keys[key] = struct{}{}
}

// remove drops key from each value's set, and a set when it empties, so
// values that come and go (high cardinality) do not leak.
func (m indexMap) remove(values []string, key string) {
	for _, v := range values {
		m.removeOne(v, key)
	}
}

func (m indexMap) removeOne(value, key string) {
	keys := m[value]
	delete(keys, key)
	if len(keys) == 0 {
		delete(m, value)
	}
}
