package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

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
