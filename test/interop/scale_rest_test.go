package interop

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
)

// shardDefinition defines shards, whose scale subresource reads spec.count,
// status.count and status.selector.
const shardDefinition = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"shards.example.com"},
	"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"shards","kind":"Shard"},
	"versions":[{"name":"v1","served":true,"storage":true,
		"subresources":{"status":{},"scale":{"specReplicasPath":".spec.count","statusReplicasPath":".status.count","labelSelectorPath":".status.selector"}},
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// kubeShards is kube's storage of shards, scale subresource included, on
// an etcd of its own.
func kubeShards(t *testing.T) customresource.CustomResourceStorage {
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	config.Codec = unstructured.UnstructuredJSONScheme
	gr := schema.GroupResource{Group: "example.com", Resource: "shards"}
	opts := generic.RESTOptions{StorageConfig: config.ForResource(gr), Decorator: generic.UndecoratedStorage, DeleteCollectionWorkers: 1, ResourcePrefix: "shards"}
	params := runtime.NewScheme()
	params.AddUnversionedTypes(schema.GroupVersion{Group: "example.com", Version: "v1"}, &metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{})
	typer := apiserver.UnstructuredObjectTyper{Delegate: params, UnstructuredTyper: crdserverscheme.NewUnstructuredObjectTyper()}
	kind := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Shard"}
	selector := ".status.selector"
	scale := &apiextensionsinternal.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.count", StatusReplicasPath: ".status.count", LabelSelectorPath: &selector}
	table, err := tableconvertor.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	storage, err := customresource.NewStorage(gr, gr, kind, kind.GroupVersion().WithKind("ShardList"),
		customresource.NewStrategy(typer, true, kind, nil, nil, nil, &apiextensionsinternal.CustomResourceSubresourceStatus{}, scale, nil),
		opts, nil, table, managedfields.ResourcePathMappings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(storage.CustomResource.DestroyFunc)
	return storage
}

// sameObject is an update that changes nothing: a patch that leaves the
// Scale as it was.
type sameObject struct{}

func (sameObject) Preconditions() *metav1.Preconditions { return nil }
func (sameObject) UpdatedObject(_ context.Context, old runtime.Object) (runtime.Object, error) {
	return old, nil
}

// scaleStep is one request to the scale subresource of shard name: a GET
// when scale is nil, else a PUT of it (sameObject when it is "same").
type scaleStep struct {
	name, shard string
	scale       map[string]any
}

// TestScaleRESTAsKube runs the same requests on kube's ScaleREST and on
// the binary and compares what they answer: the Scale (identity and times
// aside), the object's count and generation, or the error's code, reason
// and message.
func TestScaleRESTAsKube(t *testing.T) {
	kube := kubeShards(t)
	lw := StartListwatch(t, listwatchBin(t))
	if code, body := request(t, lw.URL, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", shardDefinition); code != 201 {
		t.Fatalf("definition: %d %s", code, body)
	}
	const shards = "/apis/example.com/v1/namespaces/default/shards"
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), "default")
	for _, obj := range []string{
		`{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a","namespace":"default"},"spec":{"count":1},"status":{"count":4,"selector":"app=a"}}`,
		`{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"b","namespace":"default"},"spec":{}}`,
		`{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"c","namespace":"default"},"spec":{"count":"two"}}`,
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(obj)); err != nil {
			t.Fatal(err)
		}
		_, kerr := kube.CustomResource.Create(ctx, u, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		code, body := request(t, lw.URL, "POST", shards, obj)
		if got, want := code, errorCode(kerr, 201); got != want {
			t.Fatalf("create %s: %d, kube %d (%v): %s", u.GetName(), got, want, kerr, body)
		}
	}
	for _, st := range []scaleStep{
		{"get", "a", nil},
		{"update", "a", map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"replicas": 3}}},
		{"to zero", "a", map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{}}},
		{"negative", "a", map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"replicas": -1}}},
		{"stale", "a", map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "1"}, "spec": map[string]any{"replicas": 2}}},
		{"same", "a", map[string]any{"same": true}},
		{"get unset", "b", nil},
		{"same unset", "b", map[string]any{"same": true}},
		{"set unset", "b", map[string]any{"metadata": map[string]any{"name": "b"}, "spec": map[string]any{"replicas": 2}}},
		{"get mistyped", "c", nil},
		{"missing", "nope", nil},
	} {
		t.Run(st.name, func(t *testing.T) {
			var kobj runtime.Object
			var kerr error
			code, body := 0, []byte(nil)
			switch {
			case st.scale == nil:
				kobj, kerr = kube.Scale.Get(ctx, st.shard, &metav1.GetOptions{})
				code, body = request(t, lw.URL, "GET", shards+"/"+st.shard+"/scale", "")
			case st.scale["same"] == true:
				kobj, _, kerr = kube.Scale.Update(ctx, st.shard, sameObject{}, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
				code, body = request(t, lw.URL, "PATCH", shards+"/"+st.shard+"/scale", `{}`)
			default:
				b, _ := json.Marshal(st.scale)
				var s autoscalingv1.Scale
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
				kobj, _, kerr = kube.Scale.Update(ctx, st.shard, rest.DefaultUpdatedObjectInfo(&s), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
				code, body = request(t, lw.URL, "PUT", shards+"/"+st.shard+"/scale", string(b))
			}
			if code != errorCode(kerr, 200) {
				t.Fatalf("code %d, kube %d (%v): %s", code, errorCode(kerr, 200), kerr, body)
			}
			if kerr != nil {
				var st metav1.Status
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatal(err)
				}
				want := apierrors.APIStatus(nil)
				if !errors.As(kerr, &want) {
					t.Fatalf("kube's error is not a Status: %v", kerr)
				}
				if diff := cmp.Diff([]any{want.Status().Reason, want.Status().Message}, []any{st.Reason, st.Message}); diff != "" {
					t.Errorf("error (-kube +listwatch):\n%s", diff)
				}
				return
			}
			kb, err := json.Marshal(kobj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(scaleShape(t, kb), scaleShape(t, body)); diff != "" {
				t.Errorf("Scale (-kube +listwatch):\n%s", diff)
			}
			kcr, err := kube.CustomResource.Get(ctx, st.shard, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, ours := request(t, lw.URL, "GET", shards+"/"+st.shard, "")
			kjson, _ := json.Marshal(kcr)
			if diff := cmp.Diff(countAndGeneration(t, kjson), countAndGeneration(t, ours)); diff != "" {
				t.Errorf("object (-kube +listwatch):\n%s", diff)
			}
		})
	}
}

// errorCode is err's HTTP code, or ok when err is nil.
func errorCode(err error, ok int) int {
	if err == nil {
		return ok
	}
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return http.StatusInternalServerError
}

// scaleShape is a Scale's JSON without what differs between servers.
func scaleShape(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	md := m["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		if md[k] == nil || md[k] == "" {
			t.Errorf("Scale without metadata.%s: %s", k, b)
		}
		delete(md, k)
	}
	return m
}

// countAndGeneration is what a scale update changes in the object.
func countAndGeneration(t *testing.T, b []byte) []any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return []any{field(m, "spec", "count"), field(m, "metadata", "generation"), field(m, "status")}
}

// request makes one JSON request (a merge patch for PATCH) and returns the
// response's code and body.
func request(t *testing.T, server, method, path, body string) (int, []byte) {
	t.Helper()
	contentType := "application/json"
	if method == "PATCH" {
		contentType = "application/merge-patch+json"
	}
	return fetch(t, method, server+path, http.Header{"Content-Type": {contentType}}, []byte(body))
}
