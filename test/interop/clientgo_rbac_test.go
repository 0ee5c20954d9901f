package interop

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClientGoRBAC: client-go, as a user bound by a RoleBinding, reads what
// the binding grants, and sees RBAC's refusals as kube's Forbidden errors
// (apierrors.IsForbidden, kube's text) and a forged token as Unauthorized;
// an administrator (system:masters) writes RBAC objects with the typed
// clients.
func TestClientGoRBAC(t *testing.T) {
	tokens := writeFile(t, t.TempDir(), "tokens.csv", "admin-token,admin,1,system:masters\nalice-token,alice,2\n")
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--token-auth-file", tokens)
	as := func(token string) *kubernetes.Clientset {
		// JSON: client-go asks for protobuf, which the RBAC kinds may lack.
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: token, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	ctx := t.Context()
	admin, alice := as("admin-token"), as("alice-token")
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		ns, name, kind, role string
	}{{"default", "alice-reads", "Role", "cm-reader"}, {"", "alice-binds", "ClusterRole", "binder"}} {
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b.kind, Name: b.role}
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
		var err error
		if b.ns == "" {
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		} else {
			_, err = admin.RbacV1().RoleBindings(b.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name}, RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "binder"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}},
	} {
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if l, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("alice lists configmaps in default: %v %v", l, err)
	}
	w, err := alice.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("alice watches configmaps in default: %v", err)
	}
	if ev := <-w.ResultChan(); ev.Type != "ADDED" || ev.Object.(*corev1.ConfigMap).Name != "c" {
		t.Errorf("alice's watch: %v %v", ev.Type, ev.Object)
	}
	w.Stop()

	_, err = alice.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	if want := `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system"`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("alice lists configmaps in kube-system: %v, want Forbidden %s", err, want)
	}
	_, err = alice.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("alice gets a secret: %v, want Forbidden", err)
	}
	// Creating bindings is granted; binding a role alice does not hold is
	// escalation.
	_, err = alice.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-more"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
	}, metav1.CreateOptions{})
	if want := `rolebindings.rbac.authorization.k8s.io "alice-more" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
		`{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("alice binds secret-reader in default: %v\nwant Forbidden %s", err, want)
	}
	_, err = alice.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bob-reads"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("alice binds a role she holds: %v", err)
	}

	if _, err := as("forged").CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("a forged token: %v, want Unauthorized", err)
	}
}
