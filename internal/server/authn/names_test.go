package authn_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// TestServiceAccountNames: a service account's user name and groups are
// kube's, and a user name splits back into the namespace and name it was
// made of; other shapes are not service accounts.
func TestServiceAccountNames(t *testing.T) {
	if got := authn.ServiceAccountUser("team", "builder"); got != "system:serviceaccount:team:builder" {
		t.Errorf("user name %q", got)
	}
	if diff := cmp.Diff([]string{"system:serviceaccounts", "system:serviceaccounts:team"}, authn.ServiceAccountGroups("team")); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		user, ns, name string
		ok             bool
	}{
		{user: "system:serviceaccount:team:builder", ns: "team", name: "builder", ok: true},
		{user: "system:serviceaccount:team:a.b", ns: "team", name: "a.b", ok: true},
		{user: "system:serviceaccount:team"},
		{user: "system:serviceaccount::builder"},
		{user: "system:serviceaccount:team:"},
		{user: "system:serviceaccount:team:a:b"},
		{user: "system:serviceaccounts:team"},
		{user: "alice"},
	} {
		ns, name, ok := authn.SplitServiceAccountUser(tc.user)
		if ns != tc.ns || name != tc.name || ok != tc.ok {
			t.Errorf("%q: %q %q %v, want %q %q %v", tc.user, ns, name, ok, tc.ns, tc.name, tc.ok)
		}
	}
}
