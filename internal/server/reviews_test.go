package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/storage/memory"
)

// scriptedAuthorizer decides by its script and records what it was asked
// beyond the requests themselves (the reviews' and impersonation's
// questions, which carry no Path).
type scriptedAuthorizer struct {
	script func(authz.Attributes) (authz.Decision, string, error)
	mu     sync.Mutex
	asked  []authz.Attributes
}

func (sa *scriptedAuthorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if !isRequest(a) {
		sa.mu.Lock()
		sa.asked = append(sa.asked, a)
		sa.mu.Unlock()
	}
	return sa.script(a)
}

// questions returns what was asked beyond the requests, and forgets it.
func (sa *scriptedAuthorizer) questions() []authz.Attributes {
	sa.mu.Lock()
	defer sa.mu.Unlock()
	q := sa.asked
	sa.asked = nil
	return q
}

// isRequest says whether a are the attributes of a request to the API
// (which the scripts allow), not of a question a review asks.
func isRequest(a authz.Attributes) bool {
	return strings.HasPrefix(a.Path, "/api")
}

// scriptedResolver answers RulesFor with its rules and error.
type scriptedResolver struct {
	rules []authz.Rule
	err   error
	asked []string // user:namespace
}

func (sr *scriptedResolver) RulesFor(_ context.Context, u *authn.User, ns string) ([]authz.Rule, error) {
	sr.asked = append(sr.asked, u.Name+":"+ns)
	return sr.rules, sr.err
}

const reviewTokens = "alice-token,alice,a-1,\"devs,system:authenticated\"\n"

// newReviewServer serves alice (header alice) with sa and rr.
func newReviewServer(t *testing.T, sa authz.Authorizer, rr authz.RuleResolver) (*observedServer, http.Header) {
	t.Helper()
	tokens, err := authn.ParseTokens(strings.NewReader(reviewTokens))
	if err != nil {
		t.Fatal(err)
	}
	o := newObservedServer(t, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: sa, RuleResolver: rr}, (*Server).Handler)
	return o, http.Header{"Authorization": {"Bearer alice-token"}, "Content-Type": {mediaJSON}}
}

func TestAccessReviews(t *testing.T) {
	sa := &scriptedAuthorizer{script: func(a authz.Attributes) (authz.Decision, string, error) {
		switch {
		case isRequest(a) || a.Resource == "configmaps":
			return authz.Allow, "", nil
		case a.Resource == "secrets":
			return authz.Deny, "secrets are private", nil
		case a.Path == "/broken":
			return authz.NoOpinion, "", errors.New("rules unreadable")
		}
		return authz.NoOpinion, "", nil
	}}
	o, alice := newReviewServer(t, sa, nil)
	aliceUser := &authn.User{Name: "alice", UID: "a-1", Groups: []string{"devs", "system:authenticated"}}
	const authzV1 = "/apis/authorization.k8s.io/v1"
	tests := []struct {
		name, path, body string
		asked            authz.Attributes
		status           map[string]any
	}{
		{"self, allowed", authzV1 + "/selfsubjectaccessreviews",
			`{"spec":{"resourceAttributes":{"namespace":"ns","verb":"list","resource":"configmaps","labelSelector":{"rawSelector":"app=web"}}}}`,
			authz.Attributes{User: aliceUser, Verb: "list", ResourceRequest: true, Namespace: "ns", APIVersion: "*", Resource: "configmaps"},
			map[string]any{"allowed": true}},
		{"self, denied", authzV1 + "/selfsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","group":"","version":"v1","resource":"secrets","subresource":"x","name":"s"}}}`,
			authz.Attributes{User: aliceUser, Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "secrets", Subresource: "x", Name: "s"},
			map[string]any{"allowed": false, "denied": true, "reason": "secrets are private"}},
		{"self, no opinion on a path", authzV1 + "/selfsubjectaccessreviews",
			`{"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}}`,
			authz.Attributes{User: aliceUser, Verb: "get", Path: "/metrics"},
			map[string]any{"allowed": false}},
		{"self, evaluation error", authzV1 + "/selfsubjectaccessreviews",
			`{"spec":{"nonResourceAttributes":{"path":"/broken","verb":"get"}}}`,
			authz.Attributes{User: aliceUser, Verb: "get", Path: "/broken"},
			map[string]any{"allowed": false, "evaluationError": "rules unreadable"}},
		{"another subject", authzV1 + "/subjectaccessreviews",
			`{"spec":{"user":"bob","uid":"b-2","groups":["ops"],"extra":{"scopes":["a","b"]},"resourceAttributes":{"verb":"watch","group":"apps","resource":"configmaps"}}}`,
			authz.Attributes{User: &authn.User{Name: "bob", UID: "b-2", Groups: []string{"ops"}, Extra: map[string][]string{"scopes": {"a", "b"}}},
				Verb: "watch", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "configmaps"},
			map[string]any{"allowed": true}},
		{"a group in a namespace", authzV1 + "/namespaces/team/localsubjectaccessreviews",
			`{"spec":{"groups":["ops"],"resourceAttributes":{"namespace":"team","verb":"delete","resource":"secrets"}}}`,
			authz.Attributes{User: &authn.User{Groups: []string{"ops"}}, Verb: "delete", ResourceRequest: true, Namespace: "team", APIVersion: "*", Resource: "secrets"},
			map[string]any{"allowed": false, "denied": true, "reason": "secrets are private"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+tt.path, alice, tt.body)
			if r.code != http.StatusCreated {
				t.Fatalf("POST %s: %d %v", tt.path, r.code, r.obj)
			}
			if diff := cmp.Diff(tt.status, r.obj["status"]); diff != "" {
				t.Errorf("status (-want +got)\n%s", diff)
			}
			if r.obj["spec"] == nil || r.obj["kind"] == "" || r.obj["apiVersion"] != "authorization.k8s.io/v1" {
				t.Errorf("the answer is not the review posted: %v", r.obj)
			}
			if diff := cmp.Diff([]authz.Attributes{tt.asked}, sa.questions()); diff != "" {
				t.Errorf("asked the authorizer (-want +got)\n%s", diff)
			}
		})
	}
}

func TestAccessReviewValidation(t *testing.T) {
	allow := &scriptedAuthorizer{script: func(authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil }}
	o, alice := newReviewServer(t, allow, nil)
	const authzV1 = "/apis/authorization.k8s.io/v1"
	tests := []struct {
		name, path, body string
		code             int
		message          string
	}{
		{"neither attributes", authzV1 + "/selfsubjectaccessreviews", `{"spec":{}}`, 422,
			`SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
		{"both attributes", authzV1 + "/selfsubjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`, 422,
			`SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"path":"/x","verb":"get"}: cannot be specified in combination with resourceAttributes`},
		{"selectors of both forms and of none", authzV1 + "/selfsubjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"list","fieldSelector":{"rawSelector":"a=b","requirements":[{"key":"a","operator":"In","values":["b"]}]},"labelSelector":{}}}}`, 422,
			`SelfSubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "a=b": may not specified at the same time as requirements, spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required]`},
		{"metadata set", authzV1 + "/selfsubjectaccessreviews", `{"metadata":{"name":"q"},"spec":{"resourceAttributes":{"verb":"get"}}}`, 422,
			`SelfSubjectAccessReview.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"q"}: must be empty`},
		{"no subject", authzV1 + "/subjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"get"}}}`, 422,
			`SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified`},
		{"namespace of the attributes", authzV1 + "/namespaces/team/localsubjectaccessreviews", `{"spec":{"user":"bob","resourceAttributes":{"namespace":"other","verb":"get"}}}`, 422,
			`LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace`},
		{"local non-resource", authzV1 + "/namespaces/team/localsubjectaccessreviews", `{"spec":{"user":"bob","nonResourceAttributes":{"path":"/x"}}}`, 422,
			`LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"path":"/x"}: disallowed on this kind of request`},
		{"namespace of the body", authzV1 + "/namespaces/team/localsubjectaccessreviews", `{"metadata":{"namespace":"other"},"spec":{"user":"bob","resourceAttributes":{"namespace":"team"}}}`, 400,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"wrong kind", authzV1 + "/selfsubjectaccessreviews", `{"kind":"SubjectAccessReview","spec":{}}`, 400,
			"SubjectAccessReview is not the kind expected for selfsubjectaccessreviews.authorization.k8s.io: expected SelfSubjectAccessReview"},
		{"wrong type", authzV1 + "/subjectaccessreviews", `{"spec":{"user":5}}`, 400,
			`SubjectAccessReview in version "v1" cannot be handled as a SubjectAccessReview: json: cannot unmarshal number into Go struct field accessSpec.user of type string`},
		{"rules of no namespace", authzV1 + "/selfsubjectrulesreviews", `{"spec":{}}`, 400, "no namespace on request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+tt.path, alice, tt.body)
			if r.code != tt.code || r.obj["message"] != tt.message {
				t.Errorf("POST %s: %d %q, want %d %q", tt.path, r.code, r.obj["message"], tt.code, tt.message)
			}
		})
	}
}

// TestReviewVerbs checks that the reviews serve create only, and the
// collection only, as kube routes them.
func TestReviewVerbs(t *testing.T) {
	ts := newTestServer(t)
	const ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	for _, tt := range []struct {
		method, path string
		code         int
	}{
		{"GET", ssar, 405},
		{"GET", ssar + "?watch=1", 405},
		{"DELETE", ssar, 405},
		{"PUT", ssar, 405},
		{"GET", ssar + "/x", 404},
		{"POST", ssar + "/x", 404},
		{"DELETE", ssar + "/x", 404},
		{"POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", 404},
		{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/selfsubjectaccessreviews", 404},
	} {
		code, st := call(t, ts, tt.method, tt.path, mediaJSON, `{}`)
		if code != tt.code {
			t.Errorf("%s %s: %d %v, want %d", tt.method, tt.path, code, st, tt.code)
		}
		if code == 405 && (st["message"] != "the server does not allow this method on the requested resource" || st["reason"] != "MethodNotAllowed") {
			t.Errorf("%s %s: %v, want kube's 405", tt.method, tt.path, st)
		}
	}
	if code, st := call(t, ts, "POST", ssar, mediaJSON, `{"spec":{"resourceAttributes":{"verb":"get"}}}`); code != 201 || st["status"].(map[string]any)["allowed"] != true {
		t.Errorf("with no authorizer: %d %v, want allowed", code, st)
	}
}

func TestRulesReview(t *testing.T) {
	allow := &scriptedAuthorizer{script: func(authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil }}
	const ssrr = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	body := `{"spec":{"namespace":"team"}}`
	rr := &scriptedResolver{
		rules: []authz.Rule{
			{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/version"}},
		},
		err: errors.New("a binding's role is missing"),
	}
	o, alice := newReviewServer(t, allow, rr)
	r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+ssrr, alice, body)
	want := map[string]any{
		"resourceRules":    []any{map[string]any{"verbs": []any{"get", "list"}, "apiGroups": []any{""}, "resources": []any{"configmaps"}, "resourceNames": []any{"a"}}},
		"nonResourceRules": []any{map[string]any{"verbs": []any{"get"}, "nonResourceURLs": []any{"/healthz", "/version"}}},
		"incomplete":       false,
		"evaluationError":  "a binding's role is missing",
	}
	if diff := cmp.Diff(want, r.obj["status"]); r.code != 201 || diff != "" {
		t.Errorf("rules: %d (-want +got)\n%s", r.code, diff)
	}
	if diff := cmp.Diff([]string{"alice:team"}, rr.asked); diff != "" {
		t.Errorf("resolver asked (-want +got)\n%s", diff)
	}

	o, alice = newReviewServer(t, allow, nil)
	r = exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+ssrr, alice, body)
	want = map[string]any{"resourceRules": []any{}, "nonResourceRules": []any{}, "incomplete": true}
	if diff := cmp.Diff(want, r.obj["status"]); r.code != 201 || diff != "" {
		t.Errorf("an authorizer that lists no rules: %d (-want +got)\n%s", r.code, diff)
	}

	ts := newTestServer(t)
	code, obj := call(t, ts, "POST", ssrr, mediaJSON, body)
	all := []any{"*"}
	want = map[string]any{
		"resourceRules":    []any{map[string]any{"verbs": all, "apiGroups": all, "resources": all}},
		"nonResourceRules": []any{map[string]any{"verbs": all, "nonResourceURLs": all}},
		"incomplete":       false,
	}
	if diff := cmp.Diff(want, obj["status"]); code != 201 || diff != "" {
		t.Errorf("no authorizer (always allow): %d (-want +got)\n%s", code, diff)
	}
}

func TestSelfSubjectReview(t *testing.T) {
	allow := &scriptedAuthorizer{script: func(authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil }}
	o, alice := newReviewServer(t, allow, nil)
	r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews", alice,
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	want := map[string]any{"userInfo": map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"devs", "system:authenticated"}}}
	if diff := cmp.Diff(want, r.obj["status"]); r.code != 201 || diff != "" {
		t.Errorf("SelfSubjectReview: %d (-want +got)\n%s", r.code, diff)
	}
	if r.obj.MetaString("creationTimestamp") == "" || r.obj["kind"] != "SelfSubjectReview" {
		t.Errorf("SelfSubjectReview: %v, want its kind and creation time", r.obj)
	}
	b, _ := json.Marshal(r.obj)
	if strings.Contains(string(b), "extra") {
		t.Errorf("a user without extra has extra: %s", b)
	}
}

// TestReviewProtobuf checks a review as client-go's typed clients send it:
// a protobuf body, protobuf preferred in the answer.
func TestReviewProtobuf(t *testing.T) {
	ts := newTestServer(t)
	body, err := protobuf.Encode(map[string]any{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": map[string]any{},
		"spec": map[string]any{"resourceAttributes": map[string]any{"verb": "get", "resource": "pods"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {mediaProtobuf}, "Accept": {mediaProtobuf + ",application/json"}}
	resp, b := roundTrip(t, ts.Client(), "POST", ts.URL+"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", h, string(body))
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Content-Type") != mediaProtobuf {
		t.Fatalf("%d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	got, err := protobuf.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"allowed": true}, got["status"]); diff != "" {
		t.Errorf("status (-want +got)\n%s", diff)
	}
}

func TestTokenReview(t *testing.T) {
	allow := &scriptedAuthorizer{script: func(authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil }}
	o, alice := newReviewServer(t, allow, nil)
	const tr = "/apis/authentication.k8s.io/v1/tokenreviews"
	tests := []struct {
		name, body string
		status     map[string]any
	}{
		{"a known token", `{"spec":{"token":"alice-token"}}`, map[string]any{"authenticated": true,
			"user": map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"devs", "system:authenticated"}}}},
		{"an unknown token", `{"spec":{"token":"forged"}}`, map[string]any{"user": map[string]any{}, "error": "invalid bearer token"}},
		{"audiences", `{"spec":{"token":"alice-token","audiences":["vault"]}}`, map[string]any{"user": map[string]any{}}},
	}
	for _, tt := range tests {
		r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+tr, alice, tt.body)
		if diff := cmp.Diff(tt.status, r.obj["status"]); r.code != 201 || diff != "" {
			t.Errorf("%s: %d (-want +got)\n%s", tt.name, r.code, diff)
		}
	}
	r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+tr, alice, `{"spec":{}}`)
	if want := "token is required for TokenReview in authentication"; r.code != 400 || r.obj["message"] != want {
		t.Errorf("no token: %d %v, want 400 %q", r.code, r.obj["message"], want)
	}
	code, obj := call(t, newTestServer(t), "POST", tr, mediaJSON, `{"spec":{"token":"alice-token"}}`)
	if diff := cmp.Diff(map[string]any{"user": map[string]any{}}, obj["status"]); code != 201 || diff != "" {
		t.Errorf("no authenticator: %d (-want +got)\n%s", code, diff)
	}
}

// BenchmarkSelfSubjectAccessReview is one kubectl auth can-i's request
// through the whole handler, filters included, with AlwaysAllow.
func BenchmarkSelfSubjectAccessReview(b *testing.B) {
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	s, err := New(b.Context(), Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	h := s.Handler()
	const body = `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"default","verb":"list","resource":"configmaps"}}}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", strings.NewReader(body))
		req.Header.Set("Content-Type", mediaJSON)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
