package server

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// TestCachesFollowAnotherServer checks that a resource's cache stops, and
// its watches end, as soon as another server on the same store redefines
// or deletes the resource's definition: this server changes no definition
// itself.
func TestCachesFollowAnotherServer(t *testing.T) {
	tests := []struct {
		name, method, body string
	}{
		{"redefined", "PATCH", `{"metadata":{"labels":{"edited":"yes"}}}`},
		{"deleted", "DELETE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newMemoryStore(t)
			_, writer := newCRDServer(t, store)
			follower, reader := newCRDServer(t, store)
			do(t, writer, "POST", crdsPath, "", gadgetCRD)
			waitFor(t, follower, func() bool { _, ok := follower.catalog.Get("example.com", "v1", "gadgets"); return ok })
			w := dialRawWatch(t, reader, gadgets+"?watch=true")
			if w.Head.StatusCode != 200 {
				t.Fatalf("watch: %d", w.Head.StatusCode)
			}
			if r := do(t, writer, tt.method, crdsPath+"/gadgets.example.com", "", tt.body); r.code != 200 {
				t.Fatalf("%s definition: %d %v", tt.method, r.code, r.obj)
			}
			w.Ends() // the cache closed under it
			follower.caches.mu.Lock()
			defer follower.caches.mu.Unlock()
			if _, ok := follower.caches.byGVR[resource.GVR{Group: "example.com", Version: "v1", Plural: "gadgets"}]; ok {
				t.Error("the cache of the old definition is still held")
			}
		})
	}
}

// TestCachesCloseWaitsForReplacedCaches checks that the cache of a
// redefined resource, replaced by get or by the catalogue's follower, has
// ended its watchers by the time close returns.
func TestCachesCloseWaitsForReplacedCaches(t *testing.T) {
	old := &resource.Resource{Group: "example.com", Version: "v1", Plural: "gadgets", Kind: "Gadget"}
	catalog := resource.NewCatalog()
	catalog.Replace("gadgets.example.com", []*resource.Resource{old})
	cs := newCaches(newMemoryStore(t), catalog, watchcache.Config{}, metrics.New(), nil)
	w, err := cs.get(old).Watch(t.Context(), watchcache.WatchOptions{InitialEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	redefined := *old
	catalog.Replace("gadgets.example.com", []*resource.Resource{&redefined})
	if cs.get(&redefined) == nil {
		t.Fatal("no cache for the current definition")
	}
	if cs.get(old) != nil {
		t.Error("get started a cache again for a definition the catalogue no longer serves")
	}
	cs.close()
	if _, err := w.Pending(t.Context(), nil); err == nil || errors.Is(err, t.Context().Err()) {
		t.Errorf("the old cache's watcher is still open after close: %v", err)
	}
	if cs.get(&redefined) != nil {
		t.Error("get after close returned a cache")
	}
}

// TestCacheCodecFields checks that the paths the cache reads selectable
// fields at, with their fallbacks and defaults, give what
// registry.FieldSet gives for every built-in resource.
func TestCacheCodecFields(t *testing.T) {
	objects := []api.Object{
		{"metadata": map[string]any{"name": "a", "namespace": "ns"}, "type": "Opaque", "status": map[string]any{"phase": "Active"}},
		{"metadata": map[string]any{"name": "e", "namespace": "ns"}, "type": "Warning", "reason": "Failed",
			"involvedObject": map[string]any{"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"}, "source": map[string]any{"component": "kubelet"}},
		{"metadata": map[string]any{"name": 5}, "type": map[string]any{}, "source": "flat"},
		{},
	}
	for _, res := range resource.Builtins() {
		codec := cacheCodec(res)
		for _, obj := range objects {
			got := map[string]string{}
			for f, p := range codec.Fields {
				got[f], _ = resource.Path(obj, p...).(string)
			}
			codec.Fill(got)
			if want := registry.FieldSet(res, obj); !maps.Equal(got, want) {
				t.Errorf("%s %v: cache's fields %v, want %v", res.Plural, obj, got, want)
			}
		}
	}
}

// TestCachesShareTheBudget checks that a CustomResourceDefinition's cache,
// started at run time, charges the server's watch cache budget for its
// ring, and gives every byte back when the definition is deleted.
func TestCachesShareTheBudget(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	do(t, ts, "POST", crdsPath, "", gadgetCRD)
	var res *resource.Resource
	waitFor(t, s, func() bool { r, ok := s.catalog.Get("example.com", "v1", "gadgets"); res = r; return ok })
	c := s.caches.get(res)
	if err := c.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	budget := s.caches.cfg.Budget
	before := budget.Used()
	r := do(t, ts, "POST", gadgets, "", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"size":"large"}}`)
	if r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	rv, _ := strconv.ParseInt(r.obj.ResourceVersion(), 10, 64)
	if err := c.WaitFresh(t.Context(), rv); err != nil {
		t.Fatal(err)
	}
	if used := budget.Used(); used <= before {
		t.Fatalf("budget used %d after the gadgets' cache applied a create, %d before", used, before)
	}
	if r := do(t, ts, "DELETE", crdsPath+"/gadgets.example.com", "", ""); r.code != 200 {
		t.Fatalf("delete definition: %d %v", r.code, r.obj)
	}
	testwait.UntilNil(t, 10*time.Second, "the budget to return after the definition's deletion", func() error {
		if used := budget.Used(); used != before {
			return fmt.Errorf("used %d, %d before the gadgets' cache", used, before)
		}
		return nil
	})
}
