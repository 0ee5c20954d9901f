package interop

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func metadataClient(t testing.TB, url string) metadata.Interface {
	t.Helper()
	mc, err := metadata.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		t.Fatalf("metadata client: %v", err)
	}
	return mc
}

// TestClientGoMetadataClient drives client-go's metadata client (what
// controller-runtime's metadata-only watches use) against the real binary:
// get, list, watch and patch answer PartialObjectMetadata in protobuf, which
// the client decodes with nothing but the meta.k8s.io types (a full object
// would fail to decode), and the watch follows an update and a delete.
func TestClientGoMetadataClient(t *testing.T) {
	ctx := t.Context()
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	proxy, counts := startCountingProxy(t, lw.URL, "/configmaps")
	cms := typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "y"}},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := metadataClient(t, proxy.URL).Resource(configMapGVR).Namespace("default")

	got, err := res.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Name != "a" || got.UID == "" || got.Labels["x"] != "y" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "a" || list.ResourceVersion == "" {
		t.Fatalf("List: %+v, %v", list, err)
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	patched, err := res.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"p":"q"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["p"] != "q" {
		t.Fatalf("Patch: %+v, %v", patched, err)
	}
	if err := res.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, want := range []watch.EventType{watch.Modified, watch.Deleted} {
		select {
		case e, ok := <-w.ResultChan():
			obj, isMeta := e.Object.(*metav1.PartialObjectMetadata)
			if !ok || e.Type != want || !isMeta || obj.Name != "a" || obj.Labels["p"] != "q" {
				t.Fatalf("watch event %s %#v (open %t), want %s of a with label p", e.Type, e.Object, ok, want)
			}
		case <-time.After(convergeTimeout):
			t.Fatalf("no %s event", want)
		}
	}
	if c := counts.Counts(); c.Protobuf != c.Lists+c.Watches || c.Lists != 1 || c.Watches != 1 {
		t.Errorf("want one LIST and one watch, both protobuf: %+v", c)
	}
}

// TestClientGoMetadataInformer runs client-go's metadata informer
// (metadatainformer) on ConfigMaps and on a custom resource against the
// real binary, with and without the streaming list, through the same
// convergence check as the typed informer: it syncs, follows concurrent
// creates, updates and deletes, and loads its state once (no relist).
func TestClientGoMetadataInformer(t *testing.T) {
	bin := listwatchBin(t)
	for _, mode := range watchListModes {
		for _, gvr := range []schema.GroupVersionResource{configMapGVR, widgetGVR} {
			t.Run(mode.name+"/"+gvr.Resource, func(t *testing.T) {
				setWatchList(t, mode.on)
				lw := StartListwatch(t, bin, "--data-dir", t.TempDir(), "--unsafe-no-fsync")
				proxy, counts := startCountingProxy(t, lw.URL, "/"+gvr.Resource)
				var w workload = configMapWorkload{cms: typedClientset(t, lw.URL).CoreV1().ConfigMaps("default")}
				if gvr == widgetGVR {
					direct := dynamicClient(t, lw.URL)
					defineWidgets(t, direct)
					w = widgetWorkload{widgets: direct.Resource(widgetGVR).Namespace("default")}
				}
				factory := metadatainformer.NewFilteredSharedInformerFactory(metadataClient(t, proxy.URL), 0, "default", nil)
				informer := factory.ForResource(gvr).Informer()
				runConvergence(t, w, factory, informer)
				c := counts.Counts()
				checkLoadPath(t, mode.on, c)
				if n := c.Lists + c.StreamingLists; n != 1 || c.Protobuf != n+c.Watches {
					t.Errorf("want one load and every response in protobuf: %+v", c)
				}
				for _, obj := range informer.GetStore().List() {
					if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
						t.Fatalf("the informer holds a %T, want *PartialObjectMetadata", obj)
					}
				}
			})
		}
	}
}
