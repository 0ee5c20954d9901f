package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// source serves fixed policies; namespaces have no labels; the only
// equivalent resource of apps/v1 deployments is extensions/v1beta1's.
type source struct{ policies []*Policy }

func (s source) Policies(_ context.Context, mutating bool) ([]*Policy, error) {
	var out []*Policy
	for _, p := range s.policies {
		if len(p.mutations) > 0 == mutating {
			out = append(out, p)
		}
	}
	return out, nil
}
func (source) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	return map[string]string{"kubernetes.io/metadata.name": name}, nil
}
func (source) Namespace(_ context.Context, name string) (api.Object, error) {
	return api.Object{"metadata": map[string]any{"name": name}}, nil
}
func (source) Equivalents(r webhook.GVR, _ string) []webhook.Equivalent {
	if r != (webhook.GVR{Group: "apps", Version: "v1", Resource: "deployments"}) {
		return nil
	}
	same := func(_ context.Context, o api.Object) (api.Object, error) { return o.DeepCopy(), nil }
	return []webhook.Equivalent{{Resource: webhook.GVR{Group: "extensions", Version: "v1beta1", Resource: "deployments"},
		Kind: webhook.GVK{Group: "extensions", Version: "v1beta1", Kind: "Deployment"}, Convert: same, Back: same}}
}
func (source) ParamScope(string, string) (bool, bool) { return true, true }
func (source) Params(context.Context, string, string, string, string, selector.Labels) ([]api.Object, error) {
	return nil, nil
}

func parse(t *testing.T, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// costly is an expression of cost 226,653: 11 of them are within the
// 2.5M budget of match conditions, 12 overrun it, and 45 the 10M runtime
// budget.
const costly = "[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, a*b*c*d)))).size()"

// TestValidate covers what the end-to-end and differential tests do not:
// matchPolicy Equivalent and Exact, excluded rules, errors of variables
// surfacing only where read, audit annotations of the wrong type, the
// runtime cost budget, the budget the match conditions share, and
// variables evaluated only when read.
func TestValidate(t *testing.T) {
	repeat := func(format string, n int) string {
		var items []string
		for i := range n {
			items = append(items, fmt.Sprintf(format, i))
		}
		return strings.Join(items, ",")
	}
	const rules = `"matchConstraints":{"matchPolicy":%q,"resourceRules":[{"apiGroups":["extensions"],"apiVersions":["v1beta1"],"operations":["CREATE"],"resources":["deployments"]}]}`
	deployment := func() *webhook.Attributes {
		return &webhook.Attributes{Operation: webhook.Create, Namespace: "default", Name: "d",
			Kind:     webhook.GVK{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource: webhook.GVR{Group: "apps", Version: "v1", Resource: "deployments"},
			Object:   parse(t, `{"metadata":{"name":"d"},"spec":{"replicas":3}}`)}
	}
	for _, tc := range []struct {
		name, spec string
		want       string // "" allowed, else a substring of the error
		annotation string // an audit annotation key that must be set
		labels     string // the deployment's, as JSON
	}{
		{name: "equivalent", spec: strings.Replace(rules, "%q", `"Equivalent"`, 1) + `,"validations":[{"expression":"request.kind.group == 'extensions' && request.requestKind.group == 'apps' && object.spec.replicas < 3"}]`,
			want: "failed expression: request.kind.group == 'extensions'"},
		{name: "object selector, no old object", spec: `"matchConstraints":{"objectSelector":{"matchExpressions":[{"key":"skip","operator":"NotIn","values":["yes"]}]},
			"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},"validations":[{"expression":"false"}]`, labels: `{"skip":"yes"}`},
		{name: "exact", spec: strings.Replace(rules, "%q", `"Exact"`, 1) + `,"validations":[{"expression":"false"}]`},
		{name: "excluded", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}],
			"excludeResourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["*"],"resources":["deployments"],"resourceNames":["d"]}]},"validations":[{"expression":"false"}]`},
		{name: "unread variable error", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"variables":[{"name":"bad","expression":"object.nope"},{"name":"good","expression":"object.spec.replicas"}],"validations":[{"expression":"variables.good == 3"}]`},
		{name: "read variable error", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"variables":[{"name":"bad","expression":"object.nope"}],"validations":[{"expression":"variables.bad == 3"}]`,
			want: `expression 'variables.bad == 3' resulted in error: composited variable "bad" fails to evaluate: no such key: nope`},
		{name: "annotation not a string", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"auditAnnotations":[{"key":"n","valueExpression":"object.spec.replicas"}]`,
			want: "valueExpression 'object.spec.replicas' resulted in unsupported return type: int. Return type must be either string or null."},
		{name: "annotation", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"auditAnnotations":[{"key":"n","valueExpression":"string(object.spec.replicas)"}]`, annotation: "p/n"},
		{name: "out of budget", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"validations":[` + strings.Repeat(`{"expression":"[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, a*b*c*d)))).size() > 0"},`, 99) +
			`{"expression":"true"}]`,
			want: "validation failed due to running out of cost budget, no further validation rules will be run"},
		{name: "annotations out of budget", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"auditAnnotations":[` + strings.Repeat(`{"key":"k","valueExpression":"string([1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, a*b*c*d)))).size())"},`, 99) +
			`{"key":"k","valueExpression":"'v'"}]`,
			want: "validation failed due to running out of cost budget, no further validation rules will be run"},
		// 12 costly conditions overrun the budget the conditions of a policy
		// share, though each is within its own.
		{name: "match conditions share a budget", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"matchConditions":[` + repeat(`{"name":"c%d","expression":"`+costly+` > 0"}`, 12) + `],"validations":[{"expression":"true"}]`,
			want: "validation failed due to running out of cost budget, no further validation rules will be run"},
		{name: "match conditions within their budget", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"matchConditions":[` + repeat(`{"name":"c%d","expression":"`+costly+` > 0"}`, 11) + `],"validations":[{"expression":"false"}]`,
			want: "failed expression: false"},
		// Evaluated eagerly, 99 variables would overrun the budget.
		{name: "unread variables cost nothing", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"variables":[` + repeat(`{"name":"v%d","expression":"`+costly+`"}`, 99) + `],"validations":[{"expression":"variables.v7 > 0"}]`},
		{name: "read variables are charged", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"variables":[` + repeat(`{"name":"v%d","expression":"`+costly+`"}`, 99) + `],"validations":[` + repeat(`{"expression":"variables.v%d > 0"}`, 99) + `]`,
			want: "validation failed due to running out of cost budget, no further validation rules will be run"},
		{name: "a variable is evaluated once per phase", spec: `"matchConstraints":{"resourceRules":[{"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
			"variables":[{"name":"v","expression":"` + costly + `"}],"validations":[` + repeat(`{"expression":"variables.v > 0 || %d > 0"}`, 99) + `]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compile(parse(t, `{"metadata":{"name":"p","generation":1},"spec":{"failurePolicy":"Fail",`+tc.spec+`}}`))
			if p.configErr != nil {
				t.Fatal(p.configErr)
			}
			p.Bindings = []*Binding{ReadBinding(parse(t, `{"metadata":{"name":"b"},"spec":{"policyName":"p","validationActions":["Deny"]}}`))}
			a := deployment()
			if tc.labels != "" {
				a.Object = parse(t, `{"metadata":{"name":"d","labels":`+tc.labels+`},"spec":{"replicas":3}}`)
			}
			err := New(source{[]*Policy{p}}, nil).Validate(context.Background(), a)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("denied: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
			if tc.annotation != "" {
				if _, ok := a.AuditAnnotations()[tc.annotation]; !ok {
					b, _ := json.Marshal(a.AuditAnnotations())
					t.Errorf("no audit annotation %s in %s", tc.annotation, b)
				}
			}
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
