package policies

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// TestMutate covers what the server and end-to-end tests do not: a failed
// JSON patch test, an apply configuration setting an atomic list or
// misnaming its types, variables read by a mutation, the patch types
// outside mutations, and a policy that does not change the object.
func TestMutate(t *testing.T) {
	const rules = `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]}`
	mutation := func(patchType, expr string) string {
		field := map[string]string{"ApplyConfiguration": "applyConfiguration", "JSONPatch": "jsonPatch"}[patchType]
		return `"mutations":[{"patchType":"` + patchType + `","` + field + `":{"expression":` + quote(expr) + `}}]`
	}
	for _, tc := range []struct {
		name, spec string
		want       string // the custom object's spec after, as JSON
		err        string // else a substring of the error
		configErr  string // else a substring of the policy's configuration error
		changed    bool
	}{
		{name: "test fails", spec: mutation("JSONPatch", `[JSONPatch{op: "test", path: "/spec/k", value: "other"}, JSONPatch{op: "replace", path: "/spec/k", value: "new"}]`),
			want: `{"k":"v","list":["a"]}`},
		{name: "test holds", spec: mutation("JSONPatch", `[JSONPatch{op: "test", path: "/spec/k", value: "v"}, JSONPatch{op: "replace", path: "/spec/k", value: "new"}]`),
			want: `{"k":"new","list":["a"]}`, changed: true},
		{name: "atomic list", spec: mutation("ApplyConfiguration", `Object{spec: Object.spec{list: ["b"]}}`),
			err: "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.list"},
		{name: "type names", spec: mutation("ApplyConfiguration", `Object{spec: Object.status{k: "x"}}`),
			err: `type mismatch: unexpected type name "Object.status", expected "Object.spec", which matches field name path from root Object type`},
		{name: "variables", spec: `"variables":[{"name":"v","expression":"object.spec.k + '2'"}],` + mutation("ApplyConfiguration", `Object{spec: {"k": variables.v}}`),
			want: `{"k":"v2","list":["a"]}`, changed: true},
		{name: "no patch types in variables", spec: `"variables":[{"name":"v","expression":"Object{}"}],` + mutation("ApplyConfiguration", `Object{}`),
			configErr: "undeclared reference to 'Object'"},
		{name: "unchanged", spec: mutation("ApplyConfiguration", `Object{spec: {"k": "v"}}`), want: `{"k":"v","list":["a"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compile(parse(t, `{"metadata":{"name":"p"},"spec":{"failurePolicy":"Fail","reinvocationPolicy":"Never",`+rules+`,`+tc.spec+`}}`))
			if tc.configErr != "" {
				if p.configErr == nil || !strings.Contains(p.configErr.Error(), tc.configErr) {
					t.Fatalf("configuration error %v, want one with %q", p.configErr, tc.configErr)
				}
				return
			}
			if p.configErr != nil {
				t.Fatal(p.configErr)
			}
			p.Bindings = []*Binding{ReadBinding(parse(t, `{"metadata":{"name":"b"},"spec":{"policyName":"p"}}`))}
			a := &webhook.Attributes{Operation: webhook.Create, Namespace: "default", Name: "c",
				Kind:     webhook.GVK{Group: "example.com", Version: "v1", Kind: "Widget"},
				Resource: webhook.GVR{Group: "example.com", Version: "v1", Resource: "widgets"},
				Object:   parse(t, `{"metadata":{"name":"c"},"spec":{"k":"v","list":["a"]}}`)}
			changed, err := NewMutator(source{[]*Policy{p}}, nil).Mutate(context.Background(), a, &webhook.Reinvocation{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(parse(t, `{"spec":`+tc.want+`}`)["spec"], api.Object(a.Object)["spec"]); d != "" || changed != tc.changed {
				t.Errorf("spec (-want +got):\n%s\nchanged %t, want %t", d, changed, tc.changed)
			}
		})
	}
}
