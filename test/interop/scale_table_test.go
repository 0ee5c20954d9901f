package interop

import (
	"encoding/json"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
