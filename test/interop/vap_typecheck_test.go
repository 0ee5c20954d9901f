package interop

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/admission/policies"
)

// widgetSchema is a custom resource's openAPIV3Schema.
const widgetSchema = `{"type":"object","properties":{"spec":{"type":"object","properties":{
	"replicas":{"type":"integer"},"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},
	"limits":{"type":"object","additionalProperties":{"type":"integer"}},
	"free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
	"port":{"x-kubernetes-int-or-string":true}}}}}`

type widgetResolver struct{ schema *spec.Schema }

func (r widgetResolver) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk.Group == "example.com" && gvk.Kind == "Widget" {
		return r.schema, nil
	}
	return nil, fmt.Errorf("%v: %w", gvk, resolver.ErrSchemaNotFound)
}

// TestVAPTypeCheckingAsKube: policies over a custom resource get the
// status.typeChecking warnings of kube's own TypeChecker.
func TestVAPTypeCheckingAsKube(t *testing.T) {
	var s spec.Schema
	if err := json.Unmarshal([]byte(widgetSchema), &s); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(widgetSchema), &raw); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, v := range []string{"v1", "v2"} {
		mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"}, meta.RESTScopeNamespace)
	}
	kube := &validating.TypeChecker{SchemaResolver: widgetResolver{&s}, RestMapper: mapper}
	ours := func(group, version, plural string) (string, map[string]any, bool) {
		if group == "example.com" && (version == "v1" || version == "v2") && plural == "widgets" {
			return "Widget", raw, true
		}
		return "", nil, false
	}
	for _, c := range []struct {
		name, rules string
		validations []admissionregistrationv1.Validation
	}{
		{"fields", `[{"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}]`, []admissionregistrationv1.Validation{
			{Expression: "object.spec.replicas > 1"},
			{Expression: "object.spec.nope == 1"},
			{Expression: "object.spec.replicas == 'a'", MessageExpression: "object.spec.name + 1"},
			{Expression: "object.spec.tags.all(t, t.size() < 10) && object.spec.limits.all(k, object.spec.limits[k] > 0)"},
			{Expression: "object.spec.tags[0] + 1 == 2"},
			{Expression: "has(object.spec.free.anything) && object.spec.port == 80", MessageExpression: "object.spec.name"},
			{Expression: "oldObject == null || oldObject.spec.nope", MessageExpression: "'replicas: ' + string(object.spec.replicas)"},
			{Expression: "object.kind == 'Widget' && object.apiVersion.startsWith('example.com/')"},
			{Expression: "request.operation == 'CREATE' && params == null"},
			{Expression: "authorizer.group('').resource('pods').check('get').allowed()"},
		}},
		{"two versions", `[{"apiGroups":["example.com"],"apiVersions":["v2","v1"],"resources":["widgets","widgets/status","nothings"]}]`, []admissionregistrationv1.Validation{
			{Expression: "object.spec.nope == 1"},
		}},
		{"wildcard", `[{"apiGroups":["*"],"apiVersions":["v1"],"resources":["widgets"]}]`, []admissionregistrationv1.Validation{
			{Expression: "object.spec.nope == 1"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := json.Marshal(c.validations)
			body := `{"metadata":{"name":"p"},"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},
				"matchConstraints":{"resourceRules":` + c.rules + `},"validations":` + string(vs) + `}}`
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatal(err)
			}
			obj, err := api.ParseObject([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			var want []policies.ExpressionWarning
			for _, w := range kube.Check(&p) {
				want = append(want, policies.ExpressionWarning{FieldRef: w.FieldRef, Warning: w.Warning})
			}
			if d := cmp.Diff(want, policies.TypeCheck(obj, ours)); d != "" {
				t.Errorf("warnings (-kube +ours):\n%s", d)
			}
		})
	}
}
