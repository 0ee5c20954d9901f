package gc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// waitTimeout bounds every wait of a test for the collector.
const waitTimeout = 20 * time.Second

// env is a store, a catalogue of the built-in resources, their watch
// caches, and collectors run over them.
type env struct {
	t       testing.TB
	store   storage.Interface
	catalog *resource.Catalog
	reg     *registry.Registry

	mu     sync.Mutex
	caches map[*resource.Resource]*watchcache.Cache // guarded by mu
	paused bool                                     // guarded by mu: cache gives none
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, store: memory.New(), catalog: resource.NewCatalog(resource.Builtins()...), caches: map[*resource.Resource]*watchcache.Cache{}}
	e.reg = registry.New(e.store, slog.Default())
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.caches {
			c.Close()
		}
	})
	for _, ns := range []string{"default", "other"} {
		e.create(e.res("", "v1", "namespaces"), "", ns, nil)
	}
	return e
}

// cache is the collector's Config.Cache: one cache per definition.
func (e *env) cache(res *resource.Resource) *watchcache.Cache {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.caches[res]; ok {
		return c
	}
	if e.paused {
		return nil
	}
	c := watchcache.New(watchcache.Config{
		Storage: e.store, Prefix: res.KeyPrefix(""),
		Codec: watchcache.Codec{
			Decode: func(ctx context.Context, kv storage.KV) (api.Object, error) { return registry.Decode(ctx, res, kv) },
			Fields: map[string][]string{"metadata.name": {"metadata", "name"}, "metadata.namespace": {"metadata", "namespace"}},
			Encode: func(kv storage.KV) ([]byte, bool) { return registry.JSON(res, kv) },
		},
	})
	e.caches[res] = c
	return c
}

// closeCaches closes every cache (their watchers end, as at a
// redefinition) and gives none until resume.
func (e *env) closeCaches() (resume func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for res, c := range e.caches {
		c.Close()
		delete(e.caches, res)
	}
	e.paused = true
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.paused = false
	}
}

// run starts a collector until the test ends or the returned stop.
func (e *env) run(attempted func(identity, error)) (stop func()) {
	c := New(Config{Catalog: e.catalog, Registry: e.reg, Cache: e.cache, Workers: 4})
	c.attempted = attempted
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

func (e *env) res(group, version, plural string) *resource.Resource {
	r, ok := e.catalog.Get(group, version, plural)
	if !ok {
		e.t.Fatalf("no resource %s/%s %s", group, version, plural)
	}
	return r
}

func (e *env) configMaps() *resource.Resource { return e.res("", "v1", "configmaps") }

// object is what create writes: owners and finalizers in metadata.
type object struct {
	owners     []ownerRef
	finalizers []string
}

// create creates an object and returns its reference, blocking as block says.
func (e *env) create(res *resource.Resource, ns, name string, o *object) api.Object {
	e.t.Helper()
	md := map[string]any{"name": name}
	if o != nil {
		var refs []any
		for _, r := range o.owners {
			m := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": r.UID}
			if r.BlockOwnerDeletion != nil {
				m["blockOwnerDeletion"] = *r.BlockOwnerDeletion
			}
			refs = append(refs, m)
		}
		if refs != nil {
			md["ownerReferences"] = refs
		}
		if o.finalizers != nil {
			var fs []any
			for _, f := range o.finalizers {
				fs = append(fs, f)
			}
			md["finalizers"] = fs
		}
	}
	w, err := e.reg.Create(context.Background(), res, ns, api.Object{"apiVersion": res.APIVersion(), "kind": res.Kind, "metadata": md})
	if err != nil {
		e.t.Fatalf("creating %s %s/%s: %v", res.Kind, ns, name, err)
	}
	return w.Object
}

// ref is a reference to obj, blocking its deletion if block.
func ref(obj api.Object, block bool) ownerRef {
	return ownerRef{APIVersion: obj.APIVersion(), Kind: obj.Kind(), Name: obj.Name(), UID: obj.UID(), BlockOwnerDeletion: &block}
}

// owned is an object with these owners.
func owned(refs ...ownerRef) *object { return &object{owners: refs} }

func (e *env) delete(res *resource.Resource, ns, name string) {
	e.t.Helper()
	if _, _, err := e.reg.Delete(context.Background(), res, ns, name, registry.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting %s %s/%s: %v", res.Kind, ns, name, err)
	}
}

// get returns the stored object, nil if there is none.
func (e *env) get(res *resource.Resource, ns, name string) api.Object {
	e.t.Helper()
	obj, err := e.reg.Get(context.Background(), res, ns, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return obj
}

// removeFinalizers lets the object go.
func (e *env) removeFinalizers(res *resource.Resource, ns, name string) {
	e.t.Helper()
	_, err := e.reg.Update(context.Background(), res, ns, name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		delete(next.Metadata(), "finalizers")
		delete(next.Metadata(), "resourceVersion") // retried over the collector's writes
		return next, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitFor waits, following res's watch cache from the store's current
// state, until cond holds for the object ns/name (nil while there is none).
func (e *env) waitFor(res *resource.Resource, ns, name, what string, cond func(api.Object) bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	now, err := e.store.CurrentRevision(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cache(res).WaitFresh(ctx, now); err != nil {
		e.t.Fatal(err)
	}
	w, err := e.cache(res).Watch(ctx, watchcache.WatchOptions{InitialEvents: true, InitialEventsEnd: true})
	if err != nil {
		e.t.Fatal(err)
	}
	defer w.Stop()
	var cur api.Object
	listed := false
	var items []watchcache.Item
	for {
		if items, err = w.Next(ctx, items[:0]); err != nil {
			e.t.Fatalf("%s %s/%s: %s: %v; last seen: %v", res.Kind, ns, name, what, err, cur)
		}
		for _, it := range items {
			if it.Type == api.Bookmark {
				listed = listed || it.InitialEventsEnd
				continue
			}
			obj, err := api.ParseObject(it.Object)
			if err != nil {
				e.t.Fatal(err)
			}
			if obj.Name() != name || obj.Namespace() != ns {
				continue
			}
			cur = obj
			if it.Type == api.Deleted {
				cur = nil
			}
		}
		if listed && cond(cur) {
			return
		}
	}
}

func (e *env) waitGone(res *resource.Resource, ns, name string) {
	e.t.Helper()
	e.waitFor(res, ns, name, "waiting for it to be deleted", func(o api.Object) bool { return o == nil })
}

func deleting(o api.Object) bool { return o != nil && o.Metadata()["deletionTimestamp"] != nil }

// attempts collects the collector's attemptToDelete outcomes.
type attempts struct {
	mu     sync.Mutex
	seen   map[string][]error // by uid
	notify chan struct{}      // closed and replaced on each attempt
}

func newAttempts() *attempts {
	return &attempts{seen: map[string][]error{}, notify: make(chan struct{})}
}

func (a *attempts) record(id identity, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[id.UID] = append(a.seen[id.UID], err)
	close(a.notify)
	a.notify = make(chan struct{})
}

// wait waits until uid has been attempted n times with errors matching target.
func (a *attempts) wait(t testing.TB, uid string, n int, match func(error) bool) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		a.mu.Lock()
		count := 0
		for _, err := range a.seen[uid] {
			if match(err) {
				count++
			}
		}
		notify := a.notify
		a.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-notify:
		case <-timeout:
			t.Fatalf("uid %s: %d matching attempts, want %d", uid, count, n)
		}
	}
}

func isError[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}
