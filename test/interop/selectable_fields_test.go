package interop

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// TestSelectableFieldValuesAsKube compares the field set a field selector
// tests on a custom resource with kube's strategy's GetAttrs, for values of
// every JSON shape a selectable field's schema lets through.
func TestSelectableFieldValuesAsKube(t *testing.T) {
	paths := []string{".spec.s", ".spec.n", ".spec.b", ".spec.o.x"}
	def := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
		"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
		"versions":[{"name":"v1","served":true,"storage":true,"selectableFields":[{"jsonPath":".spec.s"},{"jsonPath":".spec.n"},{"jsonPath":".spec.b"},{"jsonPath":".spec.o.x"}],
		"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	defObj, err := api.ParseObject([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	resources, err := crd.Resources(defObj)
	if err != nil {
		t.Fatal(err)
	}
	var selectable []apiextensionsv1.SelectableField
	for _, p := range paths {
		selectable = append(selectable, apiextensionsv1.SelectableField{JSONPath: p})
	}
	params := runtime.NewScheme()
	typer := apiserver.UnstructuredObjectTyper{Delegate: params, UnstructuredTyper: crdserverscheme.NewUnstructuredObjectTyper()}
	strategy := customresource.NewStrategy(typer, true, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, nil, nil, nil, nil, nil, selectable)
	for _, spec := range []string{
		`{"s":"web","n":3,"b":true,"o":{"x":-7}}`,
		`{"s":"","n":0,"b":false,"o":{"x":0}}`,
		`{"s":"é\u2028\"q\" a,b=c","n":-9223372036854775808,"o":{}}`,
		`{"n":9223372036854775808,"b":null,"o":null}`,
		`{"n":1e3,"o":{"x":3.0}}`,
		`{"n":1.5,"o":{"x":-0.25}}`,
		`{"n":123456789012345678901234567890,"o":{"x":1e-7}}`,
		`{}`,
	} {
		t.Run(spec, func(t *testing.T) {
			obj := `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"a","namespace":"ns"},"spec":` + spec + `}`
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(obj)); err != nil {
				t.Fatal(err)
			}
			_, want, err := strategy.GetAttrs(u)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := api.ParseObject([]byte(obj))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string(want), registry.FieldSet(resources[0], ours)); diff != "" {
				t.Errorf("fields (-kube +listwatch):\n%s", diff)
			}
		})
	}
}
