package rbac

import (
	"context"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authz"
)

// BenchmarkAuthorize decides a request of a user bound through a
// RoleBinding among 1,000 other users' bindings, in a namespace of 100
// bindings: the cost of a decision is its user's bindings, not all.
func BenchmarkAuthorize(b *testing.B) {
	var objects []map[string]any
	objects = append(objects, role("", "edit", grant(s("get", "list", "watch", "create", "update", "patch", "delete"), s(""), s("configmaps", "secrets", "pods"))))
	for i := range 1000 {
		ns := fmt.Sprintf("ns%d", i%10)
		objects = append(objects, bind(ns, fmt.Sprintf("b%d", i), "ClusterRole", "edit", subj("User", fmt.Sprintf("user%d", i)), subj("Group", "team")))
	}
	f := newFixture(b, objects...)
	z := NewAuthorizer(f.view)
	allowed := res(user("user7", "system:authenticated"), "list", "", "configmaps", "ns7", "")
	denied := res(user("user7", "system:authenticated"), "list", "", "configmaps", "ns8", "")
	for _, bc := range []struct {
		name string
		a    authz.Attributes
		want authz.Decision
	}{{"allowed", allowed, authz.Allow}, {"denied", denied, authz.NoOpinion}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := z.Authorize(context.Background(), bc.a); d != bc.want {
					b.Fatalf("decision %v", d)
				}
			}
		})
	}
}
