package interop

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeScaleColumns are the columns kube's CRD handler gives the table
// convertor of a scale subresource (getScaleColumnsForVersion in
// k8s.io/apiextensions-apiserver/pkg/apiserver/helpers.go, unexported):
// Desired and Available, read from the Scale, then Age.
var kubeScaleColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Desired", Type: "integer", Description: "Number of desired replicas", JSONPath: ".spec.replicas"},
	{Name: "Available", Type: "integer", Description: "Number of actual replicas", JSONPath: ".status.replicas"},
	{Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"},
}

// TestScaleTableAsKube reads a custom resource's Scale as a Table, as
// `kubectl get --subresource=scale` does: the Table must be kube's scale
// table convertor's of the same Scale, and kubectl must print what
// kubectl's printer prints of kube's Table.
func TestScaleTableAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	send(t, "POST", lw.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", shardDefinition, http.StatusCreated)
	shards := lw.URL + "/apis/example.com/v1/namespaces/default/shards"
	waitServed(t, shards)
	send(t, "POST", shards, "application/json", `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"s1"},"spec":{"count":3}}`, http.StatusCreated)
	send(t, "PATCH", shards+"/s1/status", "application/merge-patch+json", `{"status":{"count":2,"selector":"app=s"}}`, http.StatusOK)

	conv, err := tableconvertor.New(kubeScaleColumns)
	if err != nil {
		t.Fatal(err)
	}
	scale := getJSON(t, shards+"/s1/scale", "application/json")
	before := kubeListTable(t, conv, scale)
	got := getJSON(t, shards+"/s1/scale?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io")
	after := kubeListTable(t, conv, scale)
	// Ages are computed when the Table is made: kube's on either side.
	var ours metav1.Table
	if err := json.Unmarshal(got, &ours); err != nil {
		t.Fatal(err)
	}
	if g := mustJSON(t, ours); g != mustJSON(t, before) && g != mustJSON(t, after) {
		t.Errorf("Table\nours %s\nkube %s", g, mustJSON(t, after))
	}

	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), lw.URL, true)
	before = kubeListTable(t, conv, scale)
	out := k.must(t, "get", "shards", "s1", "--subresource=scale")
	if want := printTable(t, kubeListTable(t, conv, scale), false); out != printTable(t, before, false) && out != want {
		t.Errorf("kubectl get --subresource=scale:\n%s\nkube's printer:\n%s", out, want)
	}
}

// TestScaleOpenAPIAsKube reads the OpenAPI v3 document of a definition with
// the status and scale subresources and compares its paths (collection,
// object, status, scale) with kube's CRD OpenAPI builder's: each
// operation's id, description, action, kind, request media types and
// response schema, and the Scale's schemas.
func TestScaleOpenAPIAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	send(t, "POST", lw.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", shardDefinition, http.StatusCreated)
	waitServed(t, lw.URL+"/apis/example.com/v1/namespaces/default/shards")
	var ours map[string]any
	if err := json.Unmarshal(getJSON(t, lw.URL+"/openapi/v3/apis/example.com/v1", "application/json"), &ours); err != nil {
		t.Fatal(err)
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(shardDefinition), &def); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&def)
	spec, err := builder.BuildOpenAPIV3(&def, "v1", builder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kube map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, spec)), &kube); err != nil {
		t.Fatal(err)
	}
	pick := func(doc map[string]any, path string) map[string]any {
		item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
		out := map[string]any{}
		for _, method := range []string{"get", "post", "put", "patch"} {
			op, _ := item[method].(map[string]any)
			if op == nil {
				continue
			}
			body, _ := op["requestBody"].(map[string]any)
			content, _ := body["content"].(map[string]any)
			var types []string
			for ct := range content {
				types = append(types, ct)
			}
			slices.Sort(types)
			ok, _ := op["responses"].(map[string]any)["200"].(map[string]any)
			out[method] = []any{op["operationId"], op["description"], op["x-kubernetes-action"], op["x-kubernetes-group-version-kind"],
				types, ok["content"].(map[string]any)["application/json"]}
		}
		return out
	}
	paths := []string{"/apis/example.com/v1/shards", "/apis/example.com/v1/namespaces/{namespace}/shards",
		"/apis/example.com/v1/namespaces/{namespace}/shards/{name}", "/apis/example.com/v1/namespaces/{namespace}/shards/{name}/status",
		"/apis/example.com/v1/namespaces/{namespace}/shards/{name}/scale"}
	for _, path := range paths {
		if diff := cmp.Diff(pick(kube, path), pick(ours, path)); diff != "" {
			t.Errorf("%s (-kube +ours):\n%s", path, diff)
		}
	}
	schemas := func(doc map[string]any) map[string]any {
		all, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
		out := map[string]any{}
		for _, name := range []string{"io.k8s.api.autoscaling.v1.Scale", "io.k8s.api.autoscaling.v1.ScaleSpec", "io.k8s.api.autoscaling.v1.ScaleStatus"} {
			out[name] = all[name]
		}
		return out
	}
	if diff := cmp.Diff(schemas(kube), schemas(ours)); diff != "" {
		t.Errorf("Scale schemas (-kube +ours):\n%s", diff)
	}

	// The v2 document: the same paths, bodies and answers in v2's form.
	var ours2, kube2 map[string]any
	if err := json.Unmarshal(getJSON(t, lw.URL+"/openapi/v2", "application/json"), &ours2); err != nil {
		t.Fatal(err)
	}
	swagger, err := builder.BuildOpenAPIV2(&def, "v1", builder.Options{V2: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustJSON(t, swagger)), &kube2); err != nil {
		t.Fatal(err)
	}
	pick2 := func(doc map[string]any, path string) map[string]any {
		item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
		out := map[string]any{}
		for _, method := range []string{"get", "post", "put", "patch"} {
			if op, _ := item[method].(map[string]any); op != nil {
				ok, _ := op["responses"].(map[string]any)["200"].(map[string]any)
				out[method] = []any{op["operationId"], op["description"], op["consumes"], ok["schema"]}
			}
		}
		return out
	}
	for _, path := range paths {
		if diff := cmp.Diff(pick2(kube2, path), pick2(ours2, path)); diff != "" {
			t.Errorf("v2 %s (-kube +ours):\n%s", path, diff)
		}
	}
	for _, name := range []string{"io.k8s.api.autoscaling.v1.Scale", "io.k8s.api.autoscaling.v1.ScaleSpec", "io.k8s.api.autoscaling.v1.ScaleStatus"} {
		if diff := cmp.Diff(kube2["definitions"].(map[string]any)[name], ours2["definitions"].(map[string]any)[name]); diff != "" {
			t.Errorf("v2 %s (-kube +ours):\n%s", name, diff)
		}
	}
}
