package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// recordingAuthorizer allows what allow says and records what it was asked.
type recordingAuthorizer struct {
	allow func(authz.Attributes) bool
	mu    sync.Mutex
	asked []authz.Attributes
}

func (ra *recordingAuthorizer) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	ra.mu.Lock()
	ra.asked = append(ra.asked, a)
	ra.mu.Unlock()
	if ra.allow(a) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

func (ra *recordingAuthorizer) last() authz.Attributes {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.asked[len(ra.asked)-1]
}

func TestAuthorization(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("alice-token,alice,1,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	ra := &recordingAuthorizer{allow: func(a authz.Attributes) bool { return a.Verb == "list" }}
	o := newObservedServer(t, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: ra}, (*Server).Handler)
	alice := http.Header{"Authorization": {"Bearer alice-token"}}
	tests := []struct {
		method, path string
		code         int
		want         authz.Attributes
		message      string
	}{
		{"GET", "/api/v1/namespaces/default/configmaps", 200,
			authz.Attributes{Verb: "list", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "configmaps"}, ""},
		{"GET", "/api/v1/namespaces/default/secrets/s", 403,
			authz.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "secrets", Name: "s"},
			`secrets "s" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "default"`},
		{"DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", 403,
			authz.Attributes{Verb: "delete", ResourceRequest: true, APIGroup: "apiextensions.k8s.io", APIVersion: "v1", Resource: "customresourcedefinitions", Name: "x"},
			`customresourcedefinitions.apiextensions.k8s.io "x" is forbidden: User "alice" cannot delete resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`},
		{"GET", "/api/v1/namespaces/kube-system", 403,
			authz.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Namespace: "kube-system", Resource: "namespaces", Name: "kube-system"},
			`namespaces "kube-system" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "kube-system"`},
		{"PUT", "/api/v1/namespaces/default/status", 403,
			authz.Attributes{Verb: "update", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "namespaces", Subresource: "status", Name: "default"},
			`namespaces "default" is forbidden: User "alice" cannot update resource "namespaces/status" in API group "" in the namespace "default"`},
		{"PUT", "/api/v1/namespaces/default/finalize", 403,
			authz.Attributes{Verb: "update", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "namespaces", Subresource: "finalize", Name: "default"},
			`namespaces "default" is forbidden: User "alice" cannot update resource "namespaces/finalize" in API group "" in the namespace "default"`},
		{"GET", "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dcm1", 403,
			authz.Attributes{Verb: "watch", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "configmaps", Name: "cm1"},
			`configmaps "cm1" is forbidden: User "alice" cannot watch resource "configmaps" in API group "" in the namespace "default"`},
		{"GET", "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3D..", 200,
			authz.Attributes{Verb: "list", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "configmaps"}, ""},
		{"POST", "/api/v1/namespaces/default/pods/p/eviction", 403,
			authz.Attributes{Verb: "create", ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "pods", Subresource: "eviction", Name: "p"},
			`pods "p" is forbidden: User "alice" cannot create resource "pods/eviction" in API group "" in the namespace "default"`},
		{"GET", "/metrics", 403, authz.Attributes{Verb: "get", Path: "/metrics"},
			`forbidden: User "alice" cannot get path "/metrics"`},
	}
	for _, tt := range tests {
		code, _, body := get(t, o.ts.Client(), tt.method, o.ts.URL+tt.path, alice)
		if code != tt.code {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, code, body, tt.code)
		}
		got := ra.last()
		if got.User == nil || got.User.Name != "alice" {
			t.Errorf("%s %s: authorized user %+v, want alice", tt.method, tt.path, got.User)
		}
		got.User = nil
		if !tt.want.ResourceRequest {
			tt.want.Path = tt.path
		} else {
			got.Path = ""
		}
		if got != tt.want {
			t.Errorf("%s %s: attributes %+v, want %+v", tt.method, tt.path, got, tt.want)
		}
		if tt.message != "" && (!strings.Contains(body, `"message":"`+strings.ReplaceAll(tt.message, `"`, `\"`)+`"`) || !strings.Contains(body, `"reason":"Forbidden"`)) {
			t.Errorf("%s %s: body %s, want message %s", tt.method, tt.path, body, tt.message)
		}
	}
}

// TestAnonymousAuth: with Config.AnonymousAuth a request without
// credentials is system:anonymous for the authorizer to decide, one with
// a bad token is still 401, as kube's --anonymous-auth; health checks are
// served whatever the authorizer says.
func TestAnonymousAuth(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("alice-token,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	ra := &recordingAuthorizer{allow: func(a authz.Attributes) bool { return a.User.Name == "alice" }}
	o := newObservedServer(t, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: ra, AnonymousAuth: true}, (*Server).Handler)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+cms, nil)
	if want := `configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\"`; code != 403 || !strings.Contains(body, want) {
		t.Errorf("no credentials: %d %s, want 403 %s", code, body, want)
	}
	if u := ra.last().User; u.Name != "system:anonymous" || len(u.Groups) != 1 || u.Groups[0] != "system:unauthenticated" {
		t.Errorf("no credentials: authorized as %+v", u)
	}
	asked := len(ra.asked)
	if code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+cms, http.Header{"Authorization": {"Bearer forged"}}); code != 401 {
		t.Errorf("a bad token: %d %s, want 401", code, body)
	}
	if code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+"/readyz", nil); code != 200 {
		t.Errorf("/readyz: %d %s, want 200", code, body)
	}
	if len(ra.asked) != asked {
		t.Errorf("the authorizer was asked about a bad token or a health check: %+v", ra.asked[asked:])
	}
}

// refusingHook refuses writes of ConfigMaps named "refused" and records
// what it was told.
type refusingHook struct {
	mu      sync.Mutex
	checked []string // "verb name old?"
	written []string
}

func (h *refusingHook) CheckWrite(_ context.Context, a authz.Attributes, obj, old api.Object) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checked = append(h.checked, a.Verb+" "+obj.Name()+" "+strconv.FormatBool(old != nil))
	if obj.Name() == "refused" || obj.Labels()["refuse"] == "yes" {
		return apierror.Forbidden("refused by the hook")
	}
	return nil
}

func (h *refusingHook) Written(_ *resource.Resource, namespace, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.written = append(h.written, namespace+"/"+name)
}

// TestWriteHook: every way of writing (create, update, patch, apply)
// passes the object through CheckWrite, old included on update, and a
// refusal writes nothing; every write and deletion is told to Written.
func TestWriteHook(t *testing.T) {
	h := &refusingHook{}
	o := newObservedServer(t, Config{WriteHook: h}, (*Server).Handler)
	const cms = "/api/v1/namespaces/default/configmaps"
	steps := []struct {
		method, path, contentType, body string
		code                            int
	}{
		{"POST", cms, "application/json", `{"metadata":{"name":"refused"}}`, 403},
		{"POST", cms, "application/json", `{"metadata":{"name":"a"}}`, 201},
		{"PUT", cms + "/a", "application/json", `{"metadata":{"name":"a","labels":{"refuse":"yes"}}}`, 403},
		{"PATCH", cms + "/a", "application/merge-patch+json", `{"metadata":{"labels":{"refuse":"yes"}}}`, 403},
		{"PATCH", cms + "/a", "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`, 200},
		{"PATCH", cms + "/refused?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`, 403},
		{"DELETE", cms + "/a", "", "", 200},
	}
	for _, s := range steps {
		resp, body := roundTrip(t, o.ts.Client(), s.method, o.ts.URL+s.path, http.Header{"Content-Type": {s.contentType}}, s.body)
		if resp.StatusCode != s.code {
			t.Errorf("%s %s: %d %s, want %d", s.method, s.path, resp.StatusCode, body, s.code)
		}
	}
	if code, _, _ := get(t, o.ts.Client(), "GET", o.ts.URL+cms+"/refused", nil); code != 404 {
		t.Errorf("a refused create was stored: GET %d", code)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	wantChecked := []string{"create refused false", "create a false", "update a true", "patch a true", "patch a true", "patch refused false"}
	if strings.Join(h.checked, ",") != strings.Join(wantChecked, ",") {
		t.Errorf("checked %q, want %q", h.checked, wantChecked)
	}
	if want := []string{"default/a", "default/a", "default/a"}; strings.Join(h.written, ",") != strings.Join(want, ",") {
		t.Errorf("written %q, want %q", h.written, want)
	}
}

// TestCreateNeedsCreate: an apply or a PUT that would create an object is
// authorized as a create too, as kube's handlers do: patch or update
// alone does not let a user create.
func TestCreateNeedsCreate(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("bob-token,bob,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	var mayCreate atomic.Bool
	ra := &recordingAuthorizer{allow: func(a authz.Attributes) bool { return a.Verb != "create" || mayCreate.Load() }}
	o := newObservedServer(t, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: ra}, (*Server).Handler)
	bob := http.Header{"Authorization": {"Bearer bob-token"}}
	apply := http.Header{"Authorization": {"Bearer bob-token"}, "Content-Type": {"application/apply-patch+yaml"}}
	put := http.Header{"Authorization": {"Bearer bob-token"}, "Content-Type": {"application/json"}}
	writes := []struct {
		method, path, body string
		header             http.Header
	}{
		{"PATCH", "/api/v1/namespaces/default/configmaps/new?fieldManager=bob", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n", apply},
		{"PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/new", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"new"}}`, put},
	}
	for _, w := range writes {
		resp, b := roundTrip(t, o.ts.Client(), w.method, o.ts.URL+w.path, w.header, w.body)
		code, body := resp.StatusCode, string(b)
		want := `is forbidden: User \"bob\" cannot create resource`
		if code != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s %s without create: %d %s, want 403 %s", w.method, w.path, code, body, want)
		}
	}
	mayCreate.Store(true)
	for _, w := range writes {
		if resp, b := roundTrip(t, o.ts.Client(), w.method, o.ts.URL+w.path, w.header, w.body); resp.StatusCode != http.StatusCreated {
			t.Errorf("%s %s with create: %d %s, want 201", w.method, w.path, resp.StatusCode, b)
		}
	}
	if code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+"/api/v1/namespaces/default/configmaps/new", bob); code != http.StatusOK {
		t.Errorf("the applied configmap: %d %s", code, body)
	}
}
