package interop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/policies"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/resource"
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
	ourSchema, err := crd.TypeSchema(&resource.Resource{Schema: raw})
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, v := range []string{"v1", "v2"} {
		mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"}, meta.RESTScopeNamespace)
	}
	kube := &validating.TypeChecker{SchemaResolver: widgetResolver{&s}, RestMapper: mapper}
	ours := func(group, version, plural string) (string, *crd.Schema, bool) {
		if group == "example.com" && (version == "v1" || version == "v2") && plural == "widgets" {
			return "Widget", ourSchema, true
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
			p, obj := decodePolicy(t, body)
			var want []policies.ExpressionWarning
			for _, w := range kube.Check(p) {
				want = append(want, policies.ExpressionWarning{FieldRef: w.FieldRef, Warning: w.Warning})
			}
			if d := cmp.Diff(want, policies.TypeCheck(obj, ours)); d != "" {
				t.Errorf("warnings (-kube +ours):\n%s", d)
			}
		})
	}
}

// TestVAPTypeCheckingBuiltinsAsKube: policies over built-in kinds, checked
// by kube's TypeChecker with the schemas its discovery resolver reads from
// the server's /openapi/v3 (kube's published ones; the controller manager
// prefers its generated definitions, which this module does not link):
// every issue we report kube reports, the expressions that misuse typed
// fields get a warning from both, and kube warns of no other field.
func TestVAPTypeCheckingBuiltinsAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: lw.URL})
	if err != nil {
		t.Fatal(err)
	}
	kube := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc}, RestMapper: builtinMapper()}
	builtins := resource.Builtins()
	ours := func(group, version, plural string) (string, *crd.Schema, bool) {
		for _, r := range builtins {
			if r.Group == group && r.Version == version && r.Plural == plural {
				s, err := crd.TypeSchema(r)
				if err != nil {
					t.Fatal(err)
				}
				return r.Kind, s, true
			}
		}
		return "", nil, false
	}
	rules := `[{"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments","statefulsets"]},{"apiGroups":[""],"apiVersions":["v1"],"resources":["pods","configmaps"]}]`
	validations := []admissionregistrationv1.Validation{
		{Expression: "object.spec.nope == 1"},
		{Expression: "object.spec.replicas == 'a'"},
		{Expression: "object.spec.template.spec.containers.all(c, c.image != 1)"},
		{Expression: "object.data.x + 1 == 2"},
		{Expression: "object.spec.strategy.rollingUpdate.maxSurge == 1 && object.spec.containers[0].resources.limits['cpu'] == '1'"},
		{Expression: "object.status.startTime < now", MessageExpression: "object.metadata.name + object.kind"},
		{Expression: "object.spec.template.metadata.labels.x == 'y' && object.spec.selector.matchLabels.size() > 0"},
		{Expression: "object.metadata.labels.x == 'y' && object.apiVersion == 'v1' && object.metadata.creationTimestamp < now"},
		{Expression: "object.metadata.nope == 1 || object.metadata.ownerReferences.exists(r, r.controller == 'yes')"},
	}
	vs, _ := json.Marshal(validations)
	body := `{"metadata":{"name":"p"},"spec":{"matchConstraints":{"resourceRules":` + rules + `},"validations":` + string(vs) + `}}`
	p, obj := decodePolicy(t, body)
	kubeWarnings := map[string]string{}
	for _, w := range kube.Check(p) {
		kubeWarnings[w.FieldRef] = w.Warning
	}
	got := map[string]string{}
	for _, w := range policies.TypeCheck(obj, ours) {
		got[w.FieldRef] = w.Warning
		// Each issue of ours is kube's.
		for line := range strings.Lines(w.Warning) {
			if strings.HasPrefix(line, " |") || strings.TrimSpace(line) == "" {
				continue
			}
			if !strings.Contains(kubeWarnings[w.FieldRef], line) {
				t.Errorf("%s: ours has %q; kube's\n%s", w.FieldRef, line, kubeWarnings[w.FieldRef])
			}
		}
	}
	for _, field := range []string{"spec.validations[0].expression", "spec.validations[1].expression", "spec.validations[2].expression",
		"spec.validations[3].expression", "spec.validations[8].expression"} {
		if got[field] == "" {
			t.Errorf("%s: no warning; kube's:\n%s", field, kubeWarnings[field])
		}
	}
	// And each field kube warns of is ours: over the fields its published
	// schemas leave untyped (quantities, int-or-string: validations[4])
	// neither warns.
	for field, w := range kubeWarnings {
		if got[field] == "" {
			t.Errorf("%s: kube alone warns:\n%s", field, w)
		}
	}
}

// builtinMapper maps the kinds TestVAPTypeCheckingBuiltinsAsKube names.
func builtinMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "ConfigMap"}} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

// decodePolicy is a policy as kube's TypeChecker and ours read it.
func decodePolicy(t *testing.T, body string) (*admissionregistrationv1.ValidatingAdmissionPolicy, api.Object) {
	t.Helper()
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	obj, err := api.ParseObject([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &p, obj
}
