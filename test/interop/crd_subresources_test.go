package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// subresourceDefinitions are definitions whose scale subresource and
// selectableFields are valid or not in every way kube checks.
func subresourceDefinitions(t *testing.T) map[string]string {
	schema := `"schema":{"openAPIV3Schema":{"type":"object","properties":{
		"metadata":{"type":"object","properties":{"name":{"type":"string"}}},
		"spec":{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string","format":"date-time"},"b":{"type":"boolean"},
			"e":{"type":"string","enum":["a","b"]},"f":{"type":"number"},"list":{"type":"array","items":{"type":"string"}},
			"m":{"type":"object","additionalProperties":{"type":"string"}},"o":{"type":"object","properties":{"x":{"type":"integer"}}}}},
		"status":{"type":"object","properties":{"n":{"type":"integer"},"sel":{"type":"string"}}}}}}`
	def := func(version string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
			"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
			"versions":[{"name":"v1","served":true,"storage":true,` + schema + `,` + version + `}]}}`
	}
	// two versions, v1 stored, each with its own parts
	def2 := func(v1, v2 string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
			"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
			"versions":[{"name":"v1","served":true,"storage":true,` + v1 + `},{"name":"v2","served":true,"storage":false,` + v2 + `}]}}`
	}
	otherSchema := strings.Replace(schema, `"b":{"type":"boolean"}`, `"b":{"type":"string"}`, 1)
	defs := map[string]string{
		"versions: own scale": def2(schema+`,"subresources":{"scale":{"specReplicasPath":".spec.n","statusReplicasPath":".status.n"}}`,
			schema+`,"subresources":{"scale":{"specReplicasPath":".status.n","statusReplicasPath":".status.n"}}`),
		"versions: same scale": def2(schema+`,"subresources":{"scale":{"specReplicasPath":"n","statusReplicasPath":".status.n"}}`,
			schema+`,"subresources":{"scale":{"specReplicasPath":"n","statusReplicasPath":".status.n"}}`),
		"versions: own fields, same schema": def2(schema+`,"selectableFields":[{"jsonPath":".spec.n"}]`, schema+`,"selectableFields":[{"jsonPath":".spec.b"}]`),
		"versions: own fields and schema":   def2(schema+`,"selectableFields":[{"jsonPath":".spec.b"}]`, otherSchema+`,"selectableFields":[{"jsonPath":".spec.b"},{"jsonPath":".spec.f"}]`),
		"versions: same fields, own schema": def2(schema+`,"selectableFields":[{"jsonPath":".spec.b"}]`, otherSchema+`,"selectableFields":[{"jsonPath":".spec.b"}]`),
		"versions: same fields and schema":  def2(schema+`,"selectableFields":[{"jsonPath":".spec.f"}]`, schema+`,"selectableFields":[{"jsonPath":".spec.f"}]`),
		"valid scale":                       def(`"subresources":{"status":{},"scale":{"specReplicasPath":".spec.n","statusReplicasPath":".status.n","labelSelectorPath":".status.sel"}}`),
		"scale without status":              def(`"subresources":{"scale":{"specReplicasPath":".spec.anything","statusReplicasPath":".status.anything"}}`),
		"scale paths":                       def(`"subresources":{"scale":{"specReplicasPath":"spec.n","statusReplicasPath":".spec.n","labelSelectorPath":".metadata.x"}}`),
		"scale paths under":                 def(`"subresources":{"scale":{"specReplicasPath":".status.n","statusReplicasPath":"status.n","labelSelectorPath":"x"}}`),
		"scale roots":                       def(`"subresources":{"scale":{"specReplicasPath":".spec","statusReplicasPath":".","labelSelectorPath":""}}`),
		"scale paths missing":               def(`"subresources":{"scale":{}}`),
		"valid selectable fields": def(`"selectableFields":[{"jsonPath":".spec.n"},{"jsonPath":".spec.s"},{"jsonPath":".spec.b"},{"jsonPath":".spec.e"},
			{"jsonPath":".spec.o.x"},{"jsonPath":".spec.m.key"}]`),
		"selectable fields": def(`"selectableFields":[{"jsonPath":".spec.n"},{"jsonPath":".spec.n"},{"jsonPath":".spec"},{"jsonPath":".spec.list"},
			{"jsonPath":".spec.nope"},{"jsonPath":"spec.s"},{"jsonPath":".spec.list[0]"},{"jsonPath":".metadata.name"},{"jsonPath":""},
			{"jsonPath":".spec."},{"jsonPath":".spec.f"},{"jsonPath":".spec.m"},{"jsonPath":".spec..n"},{"jsonPath":".spec['n']"},
			{"jsonPath":".spec.o.x.y"},{"jsonPath":"."},{"jsonPath":".status.n"}]`),
		"too many selectable fields": def(`"selectableFields":[{"jsonPath":".spec.n"},{"jsonPath":".spec.s"},{"jsonPath":".spec.m.a"},{"jsonPath":".spec.m.b"},
			{"jsonPath":".spec.m.c"},{"jsonPath":".spec.m.d"},{"jsonPath":".spec.m.e"},{"jsonPath":".spec.m.f"},{"jsonPath":".spec.m.g"},{"jsonPath":".spec.m.g"}]`),
	}
	for _, f := range []string{"monitoring.coreos.com_prometheuses.yaml", "cert-manager.io_certificates.yaml"} {
		y, err := os.ReadFile("testdata/crds/" + f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		defs[f] = string(j)
	}
	return defs
}

// TestSubresourceDefinitionsAsKube checks the server's verdict on the
// scale subresource and selectableFields of definitions against kube's
// ValidateCustomResourceDefinition: the same causes, paths and messages.
func TestSubresourceDefinitionsAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t))
	scheme := runtime.NewScheme()
	install.Install(scheme)
	decoder := serializer.NewCodecFactory(scheme).UniversalDecoder(apiextensions.SchemeGroupVersion)
	ours := func(f string) bool {
		return strings.Contains(f, ".subresources.scale") || strings.Contains(f, ".selectableFields")
	}
	for name, def := range subresourceDefinitions(t) {
		t.Run(name, func(t *testing.T) {
			obj, _, err := decoder.Decode([]byte(def), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), obj.(*apiextensions.CustomResourceDefinition)) {
				if ours(e.Field) {
					want = append(want, e.Field+": "+e.ErrorBody())
				}
			}
			got := postDefinition(t, lw.URL, def, ours)
			slices.Sort(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("causes (-kube +listwatch):\n%s", diff)
			}
		})
	}
}

// postDefinition creates def, then deletes it, and returns the causes of
// its refusal whose field keep selects.
func postDefinition(t *testing.T, server, def string, keep func(string) bool) []string {
	t.Helper()
	const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	resp, err := http.Post(server+path, "application/json", bytes.NewReader([]byte(def)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Metadata struct{ Name string }
		Details  struct {
			Causes []struct{ Field, Message string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusCreated {
		req, _ := http.NewRequest(http.MethodDelete, server+path+"/"+st.Metadata.Name, nil)
		del, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		del.Body.Close()
		return nil
	}
	var out []string
	for _, c := range st.Details.Causes {
		if keep(c.Field) {
			out = append(out, c.Field+": "+c.Message)
		}
	}
	if out == nil {
		t.Fatalf("refused with %d for other reasons: %+v", resp.StatusCode, st.Details.Causes)
	}
	return out
}
