package audit_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

var (
	alice     = &authn.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}
	kubeProxy = &authn.User{Name: "system:kube-proxy", Groups: []string{"system:authenticated"}}
	anonymous = &authn.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
)

func res(u *authn.User, verb, group, ns, resource, sub, name string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1", Namespace: ns, Resource: resource, Subresource: sub, Name: name}
}

func path(u *authn.User, verb, p string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, Path: p}
}

// TestKubeExamplePolicy evaluates the example policy of kube's auditing
// documentation, recorded in testdata, as its comments say it behaves.
func TestKubeExamplePolicy(t *testing.T) {
	p, warning, err := audit.LoadPolicy("testdata/kube-example-policy.yaml")
	if err != nil || warning != "" {
		t.Fatalf("LoadPolicy: %v %q", err, warning)
	}
	rr := []audit.Stage{audit.StageRequestReceived}
	tests := []struct {
		name  string
		a     authz.Attributes
		level audit.Level
	}{
		{"pod changes", res(alice, "create", "", "default", "pods", "", ""), audit.LevelRequestResponse},
		{"pods/log", res(alice, "get", "", "default", "pods", "log", "p"), audit.LevelMetadata},
		{"pods/status", res(alice, "update", "", "default", "pods", "status", "p"), audit.LevelMetadata},
		{"another pod subresource falls to the core group", res(alice, "create", "", "default", "pods", "exec", "p"), audit.LevelRequest},
		{"the leader configmap", res(alice, "update", "", "kube-system", "configmaps", "", "controller-leader"), audit.LevelNone},
		{"another configmap in kube-system", res(alice, "update", "", "kube-system", "configmaps", "", "other"), audit.LevelRequest},
		{"a configmap elsewhere", res(alice, "update", "", "default", "configmaps", "", "other"), audit.LevelMetadata},
		{"secrets", res(alice, "get", "", "default", "secrets", "", "s"), audit.LevelMetadata},
		{"kube-proxy watching services", res(kubeProxy, "watch", "", "", "services", "", ""), audit.LevelNone},
		{"kube-proxy listing services", res(kubeProxy, "list", "", "", "services", "", ""), audit.LevelRequest},
		{"alice watching services", res(alice, "watch", "", "", "services", "", ""), audit.LevelRequest},
		{"a user without groups watching services", res(&authn.User{Name: "system:kube-proxy"}, "watch", "", "", "services", "", ""), audit.LevelNone},
		{"discovery, authenticated", path(alice, "get", "/apis/apps/v1"), audit.LevelNone},
		{"version, authenticated", path(alice, "get", "/version"), audit.LevelNone},
		{"discovery, anonymous", path(anonymous, "get", "/api"), audit.LevelMetadata},
		{"healthz", path(alice, "get", "/healthz"), audit.LevelMetadata},
		{"another group", res(alice, "list", "apps", "default", "deployments", "", ""), audit.LevelMetadata},
		{"no user", res(nil, "watch", "", "", "services", "", ""), audit.LevelRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Evaluate(tt.a)
			want := audit.RequestConfig{Level: tt.level, OmitStages: rr}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

const wildcards = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitManagedFields: true
rules:
- level: RequestResponse
  omitManagedFields: false
  resources:
  - group: "*"
    resources: ["*/scale"]
- level: Request
  omitStages: [ResponseStarted]
  resources:
  - group: apps
    resources: ["deployments/*"]
- level: Metadata
  resources:
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["a", "b"]
  namespaces: [""]
- level: Metadata
  verbs: [get]
  nonResourceURLs: ["/metrics", "/debug/*"]
- level: None
`

func TestPolicyWildcards(t *testing.T) {
	p, _, err := audit.ParsePolicy([]byte(wildcards))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		a    authz.Attributes
		want audit.RequestConfig
	}{
		{"*/scale in any group", res(alice, "update", "apps", "ns", "deployments", "scale", "d"), audit.RequestConfig{Level: audit.LevelRequestResponse}},
		{"*/scale of the core group", res(alice, "get", "", "ns", "replicationcontrollers", "scale", "d"), audit.RequestConfig{Level: audit.LevelRequestResponse}},
		{"deployments/* is the resource too", res(alice, "get", "apps", "ns", "deployments", "", "d"), audit.RequestConfig{Level: audit.LevelRequest, OmitStages: []audit.Stage{audit.StageResponseStarted}, OmitManagedFields: true}},
		{"deployments/* of another group", res(alice, "get", "extensions", "ns", "deployments", "", "d"), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
		{"a named configmap, cluster-wide", res(alice, "get", "", "", "configmaps", "", "a"), audit.RequestConfig{Level: audit.LevelMetadata, OmitManagedFields: true}},
		{"a named configmap in a namespace", res(alice, "get", "", "ns", "configmaps", "", "a"), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
		{"another configmap", res(alice, "get", "", "", "configmaps", "", "c"), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
		{"a path", path(alice, "get", "/metrics"), audit.RequestConfig{Level: audit.LevelMetadata, OmitManagedFields: true}},
		{"a path under a prefix", path(alice, "get", "/debug/pprof/heap"), audit.RequestConfig{Level: audit.LevelMetadata, OmitManagedFields: true}},
		{"the prefix without its slash", path(alice, "get", "/debug"), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
		{"another verb on a path", path(alice, "post", "/metrics"), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
		{"a path rule is not a resource rule", res(alice, "get", "", "", "metrics", "", ""), audit.RequestConfig{Level: audit.LevelNone, OmitManagedFields: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, p.Evaluate(tt.a), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestPolicyInvalid(t *testing.T) {
	const head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n"
	tests := []struct{ name, policy, want string }{
		{"no apiVersion", "kind: Policy\nrules: [{level: None}]", `want apiVersion audit.k8s.io/v1 and kind Policy, got "" and "Policy"`},
		{"an older version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]", `got "audit.k8s.io/v1beta1"`},
		{"no rules", head, "loaded illegal policy with 0 rules"},
		{"not YAML", head + "rules: [", "failed decoding"},
		{"no level", head + "rules: [{verbs: [get]}]", "rules[0].level: Required value"},
		{"unknown level", head + "rules: [{level: Everything}]", `rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"`},
		{"unknown stage", head + "omitStages: [Done]\nrules: [{level: None}]", `omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic`},
		{"unknown rule stage", head + "rules: [{level: None, omitStages: [RequestReceived, Later]}]", `rules[0].omitStages[1]: Invalid value: "Later"`},
		{"relative URL", head + "rules: [{level: None, nonResourceURLs: [metrics]}]", `rules[0].nonResourceURLs[0]: Invalid value: "metrics": non-resource URL rules must begin with a '/' character`},
		{"inner wildcard", head + "rules: [{level: None, nonResourceURLs: ['/a*/b']}]", "non-resource URL wildcards '*' must be the final character of the rule"},
		{"resources and URLs", head + "rules: [{level: None, namespaces: [a], nonResourceURLs: [/a]}]", `rules[0].nonResourceURLs: Invalid value: []string{"/a"}: rules cannot apply to both regular resources and non-resource URLs`},
		{"a versioned group", head + "rules: [{level: None, resources: [{group: apps/v1}]}]", `rules[0].resources.group: Invalid value: "apps/v1": a lowercase RFC 1123 subdomain`},
		{"names without resources", head + "rules: [{level: None, resources: [{resourceNames: [x]}]}]", `rules[0].resources.resourceNames: Invalid value: []string{"x"}: using resourceNames requires at least one resource`},
		{"two errors", head + "rules: [{}, {level: Nope}]", "[rules[0].level: Required value, rules[1].level: Unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := audit.ParsePolicy([]byte(tt.policy))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestPolicyUnknownFieldWarns(t *testing.T) {
	p, warning, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata, verb: [get]}]"))
	if err != nil || !strings.Contains(warning, `unknown field "verb"`) {
		t.Fatalf("got %v, warning %q; want a warning naming the field", err, warning)
	}
	if got := p.Evaluate(path(alice, "post", "/x")).Level; got != audit.LevelMetadata {
		t.Errorf("the rule without its unknown field: got level %s, want Metadata", got)
	}
}
