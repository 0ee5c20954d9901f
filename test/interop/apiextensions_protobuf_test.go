package interop

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// TestApiextensionsClientsetProtobuf drives the binary with client-go's
// apiextensions clientset at its defaults, which send and ask protobuf: it
// installs a real-world definition (Gateway API's gateways, see
// testdata/crds/gateways.yaml), gets, lists and watches it, updates its
// status and deletes it, every body protobuf both ways; the schema comes
// back as sent, and the server applies its defaults to a Gateway.
func TestApiextensionsClientsetProtobuf(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	target, err := url.Parse(lw.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var exchanges []string // "METHOD request-type -> response-type" of each definitions call
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if req := resp.Request; strings.Contains(req.URL.Path, "/customresourcedefinitions") {
			mu.Lock()
			defer mu.Unlock()
			exchanges = append(exchanges, req.Method+" "+req.Header.Get("Content-Type")+" -> "+resp.Header.Get("Content-Type"))
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	cs, err := apiextensionsclientset.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	crds := cs.ApiextensionsV1().CustomResourceDefinitions()
	ctx := t.Context()

	data, err := os.ReadFile("testdata/crds/gateways.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sent apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &sent); err != nil {
		t.Fatal(err)
	}
	empty, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{ResourceVersion: empty.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := crds.Create(ctx, &sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// The server adds only the conversion strategy kube defaults.
	wantSpec := sent.Spec.DeepCopy()
	wantSpec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	if diff := cmp.Diff(wantSpec, &created.Spec); diff != "" {
		t.Errorf("created spec (-sent +got):\n%s", diff)
	}
	storage := slices.IndexFunc(sent.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Storage })
	if storage < 0 || !established(created) || !slices.Equal(created.Status.StoredVersions, []string{sent.Spec.Versions[storage].Name}) {
		t.Fatalf("created status %+v, want established and storing version %d", created.Status, storage)
	}
	got, err := crds.Get(ctx, sent.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get (-created +got):\n%s", diff)
	}
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %v", list, err)
	}
	if diff := cmp.Diff(*created, list.Items[0]); diff != "" {
		t.Errorf("list item (-created +got):\n%s", diff)
	}

	// A storage migration's status update: every version once stored.
	got.Status.StoredVersions = []string{sent.Spec.Versions[1-storage].Name, sent.Spec.Versions[storage].Name}
	updated, err := crds.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if !slices.Equal(updated.Status.StoredVersions, got.Status.StoredVersions) || updated.ResourceVersion == got.ResourceVersion {
		t.Errorf("updated status %+v at %s, want stored versions %q after %s", updated.Status, updated.ResourceVersion, got.Status.StoredVersions, got.ResourceVersion)
	}

	createGateway(t, lw.URL, sent.Spec.Group, sent.Spec.Versions[storage].Name)

	if err := crds.Delete(ctx, sent.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(created.UID))}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for _, want := range []struct {
		typ watch.EventType
		obj *apiextensionsv1.CustomResourceDefinition
	}{{watch.Added, created}, {watch.Modified, updated}, {watch.Deleted, updated}} {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before %s", want.typ)
			}
			obj, _ := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
			if ev.Type != want.typ || obj == nil {
				t.Fatalf("event %s %T, want %s", ev.Type, ev.Object, want.typ)
			}
			if want.typ == watch.Deleted {
				obj.ResourceVersion = want.obj.ResourceVersion // the delete's revision
			}
			if diff := cmp.Diff(want.obj, obj); diff != "" {
				t.Errorf("%s event (-want +got):\n%s", want.typ, diff)
			}
		case <-time.After(convergeTimeout):
			t.Fatalf("no %s event", want.typ)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	const pb = "application/vnd.kubernetes.protobuf"
	want := []string{"GET  -> " + pb, "GET  -> " + pb + ";stream=watch", "POST " + pb + " -> " + pb, "GET  -> " + pb,
		"GET  -> " + pb, "PUT " + pb + " -> " + pb, "DELETE " + pb + " -> " + pb}
	if diff := cmp.Diff(want, exchanges); diff != "" {
		t.Errorf("requests and answers (-want +got):\n%s", diff)
	}
}

// established reports whether the definition's Established condition is
// True.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

// createGateway creates a Gateway whose listener leaves out allowedRoutes,
// and checks that the server gave it the schema's default, which came to
// it as raw JSON in protobuf.
func createGateway(t *testing.T, url, group, version string) {
	t.Helper()
	gateways := dynamicClient(t, url).Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: "gateways"}).Namespace("default")
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/" + version, "kind": "Gateway", "metadata": map[string]any{"name": "gw"},
		"spec": map[string]any{"gatewayClassName": "example",
			"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}},
	}}
	created, err := gateways.Create(t.Context(), gw, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Gateway: %v", err)
	}
	listeners, _, _ := unstructured.NestedSlice(created.Object, "spec", "listeners")
	if len(listeners) != 1 {
		t.Fatalf("Gateway listeners %v", listeners)
	}
	from, _, _ := unstructured.NestedString(listeners[0].(map[string]any), "allowedRoutes", "namespaces", "from")
	if from != "Same" {
		t.Errorf("Gateway listener %v, want allowedRoutes.namespaces.from defaulted to Same", listeners[0])
	}
}
