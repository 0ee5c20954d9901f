package interop

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/internal/testwait"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "interop.example.com", Version: "v1", Resource: "widgets"}
)

// TestClientGoDynamicInformer runs client-go's dynamic (unstructured, JSON)
// informer on a CustomResourceDefinition's resources against the real
// binary, with and without the streaming list, through the same
// convergence check as the typed informer.
func TestClientGoDynamicInformer(t *testing.T) {
	bin := listwatchBin(t)
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			setWatchList(t, mode.on)
			lw := StartListwatch(t, bin, "--data-dir", t.TempDir(), "--unsafe-no-fsync")
			proxy, counts := startCountingProxy(t, lw.URL, "/"+widgetGVR.Resource)
			direct := dynamicClient(t, lw.URL)
			defineWidgets(t, direct)
			w := widgetWorkload{widgets: direct.Resource(widgetGVR).Namespace("default")}

			factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamicClient(t, proxy.URL), 0, "default", nil)
			informer := factory.ForResource(widgetGVR).Informer()
			runConvergence(t, w, factory, informer)
			checkLoadPath(t, mode.on, counts.Counts())
		})
	}
}

func dynamicClient(t testing.TB, url string) *dynamic.DynamicClient {
	t.Helper()
	dc, err := dynamic.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	return dc
}

// defineWidgets creates the widgets CustomResourceDefinition and waits
// until its resources are served.
func defineWidgets(t *testing.T, dc *dynamic.DynamicClient) {
	t.Helper()
	ctx := t.Context()
	if _, err := dc.Resource(crdGVR).Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CustomResourceDefinition: %v", err)
	}
	testwait.UntilNil(t, convergeTimeout, "widgets to be served", func() error {
		_, err := dc.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("list widgets: %v", err)
		}
		return err
	})
}

func widgetCRD() *unstructured.Unstructured {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"spec": map[string]any{
				"type":       "object",
				"properties": map[string]any{"gen": map[string]any{"type": "integer"}},
			},
		},
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": widgetGVR.Resource + "." + widgetGVR.Group},
		"spec": map[string]any{
			"group": widgetGVR.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": widgetGVR.Resource, "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{
				"name": widgetGVR.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": schema},
			}},
		},
	}}
}

// widgetWorkload writes widgets with client-go's dynamic client.
type widgetWorkload struct{ widgets dynamic.ResourceInterface }

func (w widgetWorkload) create(ctx context.Context, name string, gen int) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGVR.GroupVersion().String(),
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"gen": int64(gen)},
	}}
	_, err := w.widgets.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func (w widgetWorkload) update(ctx context.Context, name string, gen int) error {
	obj, err := w.widgets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(obj.Object, int64(gen), "spec", "gen"); err != nil {
		return err
	}
	_, err = w.widgets.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (w widgetWorkload) delete(ctx context.Context, name string) error {
	return w.widgets.Delete(ctx, name, metav1.DeleteOptions{})
}

func (w widgetWorkload) list(ctx context.Context) (map[string]string, error) {
	l, err := w.widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, obj := range l.Items {
		out[obj.GetNamespace()+"/"+obj.GetName()] = obj.GetResourceVersion()
	}
	return out, nil
}
