package cache_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/storage/memory"
)

// configMap is a program's own ConfigMap type: with api.ObjectMeta
// embedded, *configMap is a client.Object without methods of its own.
type configMap struct {
	api.TypeMeta
	api.ObjectMeta `json:"metadata"`
	Data           map[string]string `json:"data,omitempty"`
}

var configMaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// startServer runs a listwatch server on a memory store on a loopback
// port for the test, and returns a client of it.
func startServer(t *testing.T) *client.Client {
	t.Helper()
	store := memory.New()
	s, err := server.New(t.Context(), server.Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	c, err := client.New(client.ConfigForURL(ts.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close(); ts.Close(); store.Close() })
	return c
}

func createConfigMap(t *testing.T, cms *client.Resource[*configMap], name string, labels, data map[string]string) *configMap {
	t.Helper()
	cm, err := cms.Create(t.Context(), &configMap{ObjectMeta: api.ObjectMeta{Name: name, Labels: labels}, Data: data}, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// names lists the objects' names, sorted.
func names[T client.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestFactorySharesAndStartsInformers checks that the factory makes one
// informer per resource, scope and type, that Start runs those not yet
// started and WaitForCacheSync reports them, that an informer asked for
// after Start waits for the next Start, and that Shutdown waits for them.
func TestFactorySharesAndStartsInformers(t *testing.T) {
	c := startServer(t)
	cms := client.NewResource[*configMap](c, configMaps, "default")
	createConfigMap(t, cms, "a", map[string]string{"app": "x"}, nil)
	createConfigMap(t, cms, "b", nil, nil)

	f := cache.NewFactory(c, cache.FactoryOptions{})
	all := cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "default"})
	if again := cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "default"}); again != all {
		t.Error("a second InformerFor of the same resource, scope and type made another informer")
	}
	selected := cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "default", LabelSelector: "app=x"})
	if selected == all {
		t.Error("another label selector shares the informer")
	}
	untyped := cache.InformerFor[client.Unstructured](f, configMaps, cache.Scope{Namespace: "default"})

	ctx, cancel := context.WithCancel(t.Context())
	defer f.Shutdown()
	defer cancel()
	f.Start(ctx)
	key := func(typ reflect.Type, scope cache.Scope) cache.InformerKey {
		return cache.InformerKey{GVR: configMaps, Scope: scope, Type: typ}
	}
	cmType, uType := reflect.TypeFor[*configMap](), reflect.TypeFor[client.Unstructured]()
	want := map[cache.InformerKey]bool{
		key(cmType, cache.Scope{Namespace: "default"}):                         true,
		key(cmType, cache.Scope{Namespace: "default", LabelSelector: "app=x"}): true,
		key(uType, cache.Scope{Namespace: "default"}):                          true,
	}
	if diff := cmp.Diff(want, f.WaitForCacheSync(ctx)); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	if got := names(all.Indexer().List()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("informer of all has %v", got)
	}
	if got := names(selected.Indexer().List()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("informer of app=x has %v", got)
	}
	if got := names(untyped.Indexer().List()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("untyped informer has %v", got)
	}

	late := cache.InformerFor[*configMap](f, configMaps, cache.Scope{})
	lateKey := key(cmType, cache.Scope{})
	if synced := f.WaitForCacheSync(ctx); len(synced) != 3 {
		t.Errorf("before the next Start, WaitForCacheSync reported %v", synced)
	}
	f.Start(ctx)
	if synced := f.WaitForCacheSync(ctx); len(synced) != 4 || !synced[lateKey] {
		t.Errorf("after the next Start, WaitForCacheSync reported %v", synced)
	}
	if !late.HasSynced() {
		t.Error("the informer asked for after Start did not sync after the next Start")
	}

	cancel()
	f.Shutdown()
	cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "kube-system"})
	f.Start(ctx)
	if synced := f.WaitForCacheSync(ctx); len(synced) != 4 {
		t.Errorf("a Start after Shutdown started an informer: %v", synced)
	}
}

// TestMetadataInformer runs a metadata-only informer against the server,
// loading its state with a LIST and with a streaming list: its list and
// its watch deliver PartialObjectMetadata (labels and all metadata, no
// data), and a FilteringHandler given a context turns a label's removal
// into a delete.
func TestMetadataInformer(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(map[bool]string{false: "list", true: "streaming list"}[watchList], func(t *testing.T) {
			testMetadataInformer(t, watchList)
		})
	}
}

func testMetadataInformer(t *testing.T, watchList bool) {
	c := startServer(t)
	cms := client.NewResource[*configMap](c, configMaps, "default")
	createConfigMap(t, cms, "a", map[string]string{"mirror": "yes"}, map[string]string{"k": "v"})
	createConfigMap(t, cms, "b", nil, map[string]string{"k": "v"})

	f := cache.NewFactory(c, cache.FactoryOptions{Reflector: cache.ReflectorOptions{UseWatchList: watchList}})
	inf := cache.InformerFor[*api.PartialObjectMetadata](f, configMaps, cache.Scope{Namespace: "default"})
	type call struct {
		Op, Name, Kind string
		Initial        bool
	}
	calls := make(chan call, 16)
	mirrored := func(o *api.PartialObjectMetadata) bool { return o.Labels["mirror"] == "yes" }
	_, err := inf.AddEventHandler(cache.FilteringHandler[*api.PartialObjectMetadata]{Filter: mirrored,
		Handler: cache.ContextHandlerFuncs[*api.PartialObjectMetadata]{
			AddFunc: func(_ context.Context, o *api.PartialObjectMetadata, initial bool) {
				calls <- call{"add", o.Name, o.Kind, initial}
			},
			UpdateFunc: func(_ context.Context, _, o *api.PartialObjectMetadata) {
				calls <- call{"update", o.Name, o.Kind, false}
			},
			DeleteFunc: func(_ context.Context, o *api.PartialObjectMetadata, _ bool) {
				calls <- call{"delete", o.Name, o.Kind, false}
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer f.Shutdown()
	defer cancel()
	f.Start(ctx)
	if synced := f.WaitForCacheSync(ctx); len(synced) != 1 {
		t.Fatalf("WaitForCacheSync: %v", synced)
	}
	expect := func(want call) {
		t.Helper()
		select {
		case got := <-calls:
			if got != want {
				t.Errorf("handler got %+v, want %+v", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("handler never got %+v", want)
		}
	}
	expect(call{"add", "a", "PartialObjectMetadata", true})
	listed, ok := inf.Lister().Namespace("default").Get("b")
	if !ok || listed.Kind != "PartialObjectMetadata" || listed.APIVersion != "meta.k8s.io/v1" || listed.UID == "" {
		t.Errorf("listed b = %+v", listed)
	}

	createConfigMap(t, cms, "c", map[string]string{"mirror": "yes"}, map[string]string{"k": "v"})
	expect(call{"add", "c", "PartialObjectMetadata", false})
	if _, err := cms.Patch(ctx, "c", client.MergePatchType, []byte(`{"metadata":{"labels":{"mirror":null}}}`), client.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(call{"delete", "c", "PartialObjectMetadata", false})
	if _, err := cms.Patch(ctx, "b", client.MergePatchType, []byte(`{"metadata":{"labels":{"mirror":"yes"}}}`), client.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(call{"add", "b", "PartialObjectMetadata", false})
	if s := inf.Reflector().Stats(); s.Syncs != 1 || s.WatchListFallbacks != 0 || (s.ListCalls > 0) == watchList {
		t.Errorf("reflector stats %+v, want one sync by a %s", s, map[bool]string{false: "LIST", true: "streaming list"}[watchList])
	}
}

// TestMetadataResource reads and patches through a metadata-only
// Resource, and checks that it refuses writes of whole objects.
func TestMetadataResource(t *testing.T) {
	c := startServer(t)
	cms := client.NewResource[*configMap](c, configMaps, "default")
	createConfigMap(t, cms, "a", nil, map[string]string{"k": "v"})
	meta := client.NewResource[*api.PartialObjectMetadata](c, configMaps, "default")

	got, err := meta.Get(t.Context(), "a")
	if err != nil || got.Kind != "PartialObjectMetadata" || got.Name != "a" {
		t.Errorf("Get = %+v, %v", got, err)
	}
	items, _, _, err := meta.List(t.Context(), client.ListOptions{})
	if err != nil || len(items) != 1 || items[0].Kind != "PartialObjectMetadata" {
		t.Errorf("List = %+v, %v", items, err)
	}
	patched, err := meta.Patch(t.Context(), "a", client.MergePatchType, []byte(`{"metadata":{"labels":{"l":"1"}}}`), client.PatchOptions{})
	if err != nil || patched.Kind != "PartialObjectMetadata" || patched.Labels["l"] != "1" {
		t.Errorf("Patch = %+v, %v", patched, err)
	}
	if full, err := cms.Get(t.Context(), "a"); err != nil || full.Data["k"] != "v" {
		t.Errorf("after the patch, the object is %+v, %v", full, err)
	}
	if _, err := meta.Update(t.Context(), got, client.WriteOptions{}); !errors.Is(err, client.ErrMetadataOnly) {
		t.Errorf("Update through a metadata-only resource: %v", err)
	}
	if _, err := meta.Create(t.Context(), &api.PartialObjectMetadata{ObjectMeta: api.ObjectMeta{Name: "b"}}, client.WriteOptions{}); !errors.Is(err, client.ErrMetadataOnly) {
		t.Errorf("Create through a metadata-only resource: %v", err)
	}
}

// TestFactoryCheck checks the factory's informers against discovery: a
// resource not served and a namespace of a cluster-scoped resource are
// errors, a program's own type fits a served resource.
func TestFactoryCheck(t *testing.T) {
	c := startServer(t)
	f := cache.NewFactory(c, cache.FactoryOptions{})
	cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "default"})
	cache.InformerFor[client.Unstructured](f, client.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, cache.Scope{})
	if err := f.Check(t.Context()); err != nil {
		t.Fatalf("Check of served resources: %v", err)
	}
	cache.InformerFor[*configMap](f, client.GroupVersionResource{Version: "v2", Resource: "configmaps"}, cache.Scope{})
	cache.InformerFor[*api.PartialObjectMetadata](f, client.GroupVersionResource{Version: "v1", Resource: "namespaces"}, cache.Scope{Namespace: "default"})
	err := f.Check(t.Context())
	for _, want := range []string{"the server does not serve configmaps.v2", `namespaces.v1 is cluster-scoped: it has no namespace "default"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v, want an error saying %q", err, want)
		}
	}
}

// TestFactoryInformerForConcurrent asks for one informer from many
// goroutines at once: all get the same one.
func TestFactoryInformerForConcurrent(t *testing.T) {
	c, err := client.New(client.ConfigForURL("http://127.0.0.1:1")) // never contacted: nothing starts
	if err != nil {
		t.Fatal(err)
	}
	f := cache.NewFactory(c, cache.FactoryOptions{})
	got := make([]*cache.SharedIndexInformer[*configMap], 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = cache.InformerFor[*configMap](f, configMaps, cache.Scope{Namespace: "default"}) })
	}
	wg.Wait()
	for i, inf := range got {
		if inf != got[0] {
			t.Fatalf("caller %d got another informer", i)
		}
	}
}
