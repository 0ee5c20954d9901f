package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

func TestImpersonation(t *testing.T) {
	sa := &scriptedAuthorizer{script: func(a authz.Attributes) (authz.Decision, string, error) {
		switch {
		case isRequest(a) && a.User.Name == "bob" && a.Resource == "configmaps":
			return authz.NoOpinion, "", nil
		case a.Verb == "impersonate" && (a.Name == "eve" || a.Subresource == "secret" || a.Namespace == "kube-system"):
			return authz.NoOpinion, "", nil
		}
		return authz.Allow, "", nil
	}}
	o, alice := newReviewServer(t, sa, nil)
	aliceUser := &authn.User{Name: "alice", UID: "a-1", Groups: []string{"devs", "system:authenticated"}}
	impersonate := func(resource, ns, name, sub string) authz.Attributes {
		a := authz.Attributes{User: aliceUser, Verb: "impersonate", ResourceRequest: true, Resource: resource, Namespace: ns, Name: name, Subresource: sub}
		if resource == "userextras" || resource == "uids" {
			a.APIGroup = "authentication.k8s.io"
		}
		return a
	}
	const ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	tests := []struct {
		name     string
		header   http.Header
		asked    []authz.Attributes
		userInfo map[string]any // the user the request acted as
		code     int
		message  string
	}{
		{"none", http.Header{}, nil,
			map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"devs", "system:authenticated"}}, 201, ""},
		{"another Impersonate- header", http.Header{"Impersonate-Someone": {"bob"}, "Impersonate-User": {""}}, nil,
			map[string]any{"username": "alice", "uid": "a-1", "groups": []any{"devs", "system:authenticated"}}, 201, ""},
		{"a user", http.Header{"Impersonate-User": {"bob"}},
			[]authz.Attributes{impersonate("users", "", "bob", "")},
			map[string]any{"username": "bob", "groups": []any{"system:authenticated"}}, 201, ""},
		{"everything", http.Header{
			"Impersonate-User": {"bob"}, "Impersonate-Group": {"ops", "qa"}, "Impersonate-Uid": {"b-2"},
			"Impersonate-Extra-Scopes": {"a", "b"}, "Impersonate-Extra-Example.com%2fteam": {"x"},
		},
			[]authz.Attributes{
				impersonate("users", "", "bob", ""), impersonate("groups", "", "ops", ""), impersonate("groups", "", "qa", ""),
				impersonate("userextras", "", "x", "example.com/team"), impersonate("userextras", "", "a", "scopes"), impersonate("userextras", "", "b", "scopes"),
				impersonate("uids", "", "b-2", ""),
			},
			map[string]any{"username": "bob", "uid": "b-2", "groups": []any{"ops", "qa", "system:authenticated"},
				"extra": map[string]any{"scopes": []any{"a", "b"}, "example.com/team": []any{"x"}}}, 201, ""},
		{"a service account", http.Header{"Impersonate-User": {"system:serviceaccount:team:builder"}},
			[]authz.Attributes{impersonate("serviceaccounts", "team", "builder", "")},
			map[string]any{"username": "system:serviceaccount:team:builder", "groups": []any{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}}, 201, ""},
		{"a service account in groups", http.Header{"Impersonate-User": {"system:serviceaccount:team:builder"}, "Impersonate-Group": {"ops"}},
			[]authz.Attributes{impersonate("serviceaccounts", "team", "builder", ""), impersonate("groups", "", "ops", "")},
			map[string]any{"username": "system:serviceaccount:team:builder", "groups": []any{"ops", "system:authenticated"}}, 201, ""},
		{"not a service account name", http.Header{"Impersonate-User": {"system:serviceaccount:Team:builder"}},
			[]authz.Attributes{impersonate("users", "", "system:serviceaccount:Team:builder", "")},
			map[string]any{"username": "system:serviceaccount:Team:builder", "groups": []any{"system:authenticated"}}, 201, ""},
		{"anonymous", http.Header{"Impersonate-User": {"system:anonymous"}},
			[]authz.Attributes{impersonate("users", "", "system:anonymous", "")},
			map[string]any{"username": "system:anonymous", "groups": []any{"system:unauthenticated"}}, 201, ""},
		{"unauthenticated", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:unauthenticated"}},
			[]authz.Attributes{impersonate("users", "", "bob", ""), impersonate("groups", "", "system:unauthenticated", "")},
			map[string]any{"username": "bob", "groups": []any{"system:unauthenticated"}}, 201, ""},
		{"a user not allowed", http.Header{"Impersonate-User": {"eve"}, "Impersonate-Group": {"ops"}},
			[]authz.Attributes{impersonate("users", "", "eve", "")}, nil, 403,
			`users "eve" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{"an extra not allowed", http.Header{"Impersonate-User": {"bob"}, "Impersonate-Extra-Secret": {"s"}},
			[]authz.Attributes{impersonate("users", "", "bob", ""), impersonate("userextras", "", "s", "secret")}, nil, 403,
			`userextras.authentication.k8s.io "s" is forbidden: User "alice" cannot impersonate resource "userextras/secret" in API group "authentication.k8s.io" at the cluster scope`},
		{"a service account not allowed", http.Header{"Impersonate-User": {"system:serviceaccount:kube-system:admin"}},
			[]authz.Attributes{impersonate("serviceaccounts", "kube-system", "admin", "")}, nil, 403,
			`serviceaccounts "admin" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"`},
		{"groups without a user", http.Header{"Impersonate-Group": {"ops"}, "Impersonate-Uid": {"u"}}, nil, nil, 500,
			"Internal error occurred: requested [{Group  ops    } {UID  u  authentication.k8s.io/v1  }] without impersonating a user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.header.Clone()
			h.Set("Authorization", alice.Get("Authorization"))
			h.Set("Content-Type", mediaJSON)
			r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+ssr, h, `{}`)
			if r.code != tt.code || tt.message != "" && r.obj["message"] != tt.message {
				t.Fatalf("%d %q, want %d %q", r.code, r.obj["message"], tt.code, tt.message)
			}
			if diff := cmp.Diff(tt.asked, sa.questions()); diff != "" {
				t.Errorf("asked the authorizer (-want +got)\n%s", diff)
			}
			if tt.userInfo == nil {
				return
			}
			if diff := cmp.Diff(tt.userInfo, r.obj["status"].(map[string]any)["userInfo"]); diff != "" {
				t.Errorf("acted as (-want +got)\n%s", diff)
			}
			if got, want := o.logged(t, ssr)["user"], tt.userInfo["username"]; got != want {
				t.Errorf("access log user %q, want %q", got, want)
			}
		})
	}

	// The request itself is authorized for the user impersonated.
	h := http.Header{"Authorization": alice["Authorization"], "Impersonate-User": {"bob"}}
	const cms = "/api/v1/namespaces/default/configmaps"
	r := exchangeWith(t, o.ts.Client(), "GET", o.ts.URL+cms, h, "")
	if want := `configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"`; r.code != 403 || r.obj["message"] != want {
		t.Errorf("bob listing configmaps: %d %q, want 403 %q", r.code, r.obj["message"], want)
	}
	if code, _, _ := get(t, o.ts.Client(), "GET", o.ts.URL+cms, alice); code != 200 {
		t.Errorf("alice listing configmaps: %d, want 200", code)
	}
}

func TestImpersonationBounded(t *testing.T) {
	allow := &scriptedAuthorizer{script: func(authz.Attributes) (authz.Decision, string, error) { return authz.Allow, "", nil }}
	o, alice := newReviewServer(t, allow, nil)
	for _, n := range []int{maxImpersonations - 1, maxImpersonations} {
		h := alice.Clone()
		h.Set("Impersonate-User", "bob")
		for i := range n {
			h.Add("Impersonate-Group", fmt.Sprint("g", i))
		}
		r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews", h, `{}`)
		want := http.StatusCreated
		if n == maxImpersonations {
			want = http.StatusBadRequest
		}
		if r.code != want {
			t.Errorf("%d groups and a user: %d %v, want %d", n, r.code, r.obj["message"], want)
		}
		if asked := len(allow.questions()); want == http.StatusBadRequest && asked != 0 {
			t.Errorf("%d groups: the authorizer was asked %d times before the refusal", n, asked)
		}
	}
}

// BenchmarkNoImpersonation is what the filter costs a request without
// Impersonate-* headers: a look at kubectl's usual header names.
func BenchmarkNoImpersonation(b *testing.B) {
	h := http.Header{
		"Accept": {"application/json"}, "User-Agent": {"kubectl/v1.34.0"}, "Authorization": {"Bearer x"},
		"Kubectl-Command": {"kubectl get"}, "Kubectl-Session": {"s"}, "Accept-Encoding": {"gzip"}, "Content-Type": {mediaJSON},
	}
	b.ReportAllocs()
	for b.Loop() {
		if hasImpersonation(h) {
			b.Fatal("impersonation found")
		}
	}
}
