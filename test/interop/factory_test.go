package interop

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestFactoryMetadataInformerMatchesClientGo runs our factory's
// metadata-only informer beside client-go's metadatainformer on the real
// binary through the same writes, and compares their caches: the same
// objects with the same metadata, field for field.
func TestFactoryMetadataInformerMatchesClientGo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	create := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"n": name},
			Annotations: map[string]string{"a": "b"}, Finalizers: []string{"example.com/keep"}}, Data: map[string]string{"k": "v"}}
		cm, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	for i := range 3 {
		create("before-" + strconv.Itoa(i))
	}

	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	gf := metadatainformer.NewFilteredSharedInformerFactory(metadataClient(t, lw.URL), 0, "default", nil)
	theirs := gf.ForResource(configMapGVR).Informer()
	if _, err := theirs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.ConfigForURL(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := cache.NewFactory(c, cache.FactoryOptions{})
	ours := cache.InformerFor[*api.PartialObjectMetadata](f, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cache.Scope{Namespace: "default"})
	if _, err := ours.AddEventHandler(cache.HandlerFuncs[*api.PartialObjectMetadata]{
		AddFunc:    func(*api.PartialObjectMetadata, bool) { poke() },
		UpdateFunc: func(_, _ *api.PartialObjectMetadata) { poke() },
		DeleteFunc: func(*api.PartialObjectMetadata, bool) { poke() },
	}); err != nil {
		t.Fatal(err)
	}
	defer gf.Shutdown()
	defer f.Shutdown()
	defer cancel()
	gf.Start(ctx.Done())
	f.Start(ctx)
	if synced := f.WaitForCacheSync(ctx); len(synced) != 1 {
		t.Fatalf("our factory synced %v", synced)
	}
	gf.WaitForCacheSync(ctx.Done())

	owner := create("after")
	patch := func(name, body string) {
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch("before-0", `{"metadata":{"labels":{"n":"changed"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"after","uid":"`+string(owner.UID)+`"}]}}`)
	patch("before-1", `{"metadata":{"finalizers":null}}`)
	if err := cms.Delete(ctx, "before-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before-2", metav1.DeleteOptions{}); err != nil { // kept by its finalizer
		t.Fatal(err)
	}
	final, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, cm := range final.Items {
		want[cm.Name] = cm.ResourceVersion
	}

	theirObjects := func() []*metav1.PartialObjectMetadata {
		var out []*metav1.PartialObjectMetadata
		for _, o := range theirs.GetStore().List() {
			out = append(out, o.(*metav1.PartialObjectMetadata))
		}
		return out
	}
	deadline := time.After(convergeTimeout)
	for !cmp.Equal(want, versions(theirObjects())) || !cmp.Equal(want, versions(ours.Indexer().List())) {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("caches never reached the server's state %v: client-go's %v, ours %v",
				want, versions(theirObjects()), versions(ours.Indexer().List()))
		}
	}
	for _, theirs := range theirObjects() {
		mine, ok := ours.Lister().Namespace("default").Get(theirs.Name)
		if !ok {
			t.Fatalf("our cache lacks %s", theirs.Name)
		}
		// client-go's typed decoding drops apiVersion and kind; ours keeps them.
		if diff := cmp.Diff(metaMap(t, theirs.ObjectMeta), metaMap(t, mine.ObjectMeta)); diff != "" {
			t.Errorf("%s: client-go's (-) and ours (+) differ:\n%s", theirs.Name, diff)
		}
	}
	patch("before-2", `{"metadata":{"finalizers":null}}`) // let the store drop it
}

// versions returns the resourceVersion of each name among objs.
func versions[T interface {
	GetName() string
	GetResourceVersion() string
}](objs []T) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// metaMap is v's JSON as a map, so that field order and Go types do not
// matter.
func metaMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return jsonObject(t, string(b))
}

// TestResourceCheckKubeTypes checks typed Resources of k8s.io/api (and
// apiextensions) types against the binary's discovery: a type and a
// resource of the same kind fit, another kind, another version, or the
// same kind name of another group (core/v1 Event on events.k8s.io) does
// not.
func TestResourceCheckKubeTypes(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	c, err := client.New(client.ConfigForURL(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rs, err := c.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	gvr := func(group, version, resource string) client.GroupVersionResource {
		return client.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	configMaps, events, coreEvents := gvr("", "v1", "configmaps"), gvr("events.k8s.io", "v1", "events"), gvr("", "v1", "events")
	crds, clusterRoles := gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), gvr("rbac.authorization.k8s.io", "v1", "clusterroles")
	checks := []struct {
		name string
		err  error
		want string // "" for no error
	}{
		{"ConfigMap", client.NewResource[*corev1.ConfigMap](c, configMaps, "default").Check(rs), ""},
		{"events.k8s.io Event", client.NewResource[*eventsv1.Event](c, events, "default").Check(rs), ""},
		{"core Event", client.NewResource[*corev1.Event](c, coreEvents, "").Check(rs), ""},
		{"CRD", client.NewResource[*apiextensionsv1.CustomResourceDefinition](c, crds, "").Check(rs), ""},
		{"ClusterRole", client.NewResource[*rbacv1.ClusterRole](c, clusterRoles, "").Check(rs), ""},
		{"Pod on configmaps", client.NewResource[*corev1.Pod](c, configMaps, "").Check(rs), "configmaps.v1 holds ConfigMap objects of v1, not *v1.Pod"},
		{"core Event on events.k8s.io", client.NewResource[*corev1.Event](c, events, "").Check(rs), "events.v1.events.k8s.io holds Event objects of events.k8s.io/v1, not *v1.Event"},
		{"Role on clusterroles", client.NewResource[*rbacv1.Role](c, clusterRoles, "").Check(rs), "clusterroles.v1.rbac.authorization.k8s.io holds ClusterRole objects"},
		{"ClusterRole in a namespace", client.NewResource[*rbacv1.ClusterRole](c, clusterRoles, "default").Check(rs), "is cluster-scoped"},
	}
	for _, c := range checks {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("%s: %v", c.name, c.err)
		case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", c.name, c.err, c.want)
		}
	}
}
