package interop

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/policy"
)

// reconcileDryRun runs kube's own reconciliation of a default object
// against the server through client-go, without writing, and returns its
// result: the operation kube would do and the object it would store.
func reconcileDryRun(t *testing.T, cs kubernetes.Interface, obj api.Object) (reconciliation.ReconcileOperation, any) {
	t.Helper()
	b, err := api.MarshalObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(v any) {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	rbac := cs.RbacV1()
	var role reconciliation.RuleOwner
	var roleClient reconciliation.RuleOwnerModifier
	var binding reconciliation.RoleBinding
	var bindingClient reconciliation.RoleBindingModifier
	switch obj.Kind() {
	case "ClusterRole":
		var r rbacv1.ClusterRole
		decode(&r)
		role, roleClient = reconciliation.ClusterRoleRuleOwner{ClusterRole: &r}, reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}
	case "Role":
		var r rbacv1.Role
		decode(&r)
		role, roleClient = reconciliation.RoleRuleOwner{Role: &r}, reconciliation.RoleModifier{Client: rbac, NamespaceClient: cs.CoreV1().Namespaces()}
	case "ClusterRoleBinding":
		var r rbacv1.ClusterRoleBinding
		decode(&r)
		binding, bindingClient = reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &r}, reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}
	case "RoleBinding":
		var r rbacv1.RoleBinding
		decode(&r)
		binding, bindingClient = reconciliation.RoleBindingAdapter{RoleBinding: &r}, reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: cs.CoreV1().Namespaces()}
	}
	if role != nil {
		res, err := (&reconciliation.ReconcileRoleOptions{Role: role, Client: roleClient}).Run()
		if err != nil {
			t.Fatalf("%s %s: %v", obj.Kind(), obj.Name(), err)
		}
		return res.Operation, res.Role.GetObject()
	}
	res, err := (&reconciliation.ReconcileRoleBindingOptions{RoleBinding: binding, Client: bindingClient}).Run()
	if err != nil {
		t.Fatalf("%s %s: %v", obj.Kind(), obj.Name(), err)
	}
	return res.Operation, res.RoleBinding.GetObject()
}

// jsonConfig is client-go's configuration for url, in JSON.
func jsonConfig(url string) *rest.Config {
	return &rest.Config{Host: url, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
}

// TestDefaultPolicyAsKube checks the binary's default RBAC policy with
// kube's own reconciliation code (k8s.io/component-helpers): on a fresh
// data directory kube finds nothing to add to any default object; after a
// user removed rules and subjects, the binary's restart stores what kube
// would have stored.
func TestDefaultPolicyAsKube(t *testing.T) {
	bin := listwatchBin(t)
	data := t.TempDir()
	lw := StartListwatch(t, bin, "--data-dir", data, "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(jsonConfig(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range policy.Defaults() {
		if op, _ := reconcileDryRun(t, cs, obj); op != reconciliation.ReconcileNone {
			t.Errorf("kube would %s %s %s", op, obj.Kind(), obj.Name())
		}
	}

	ctx := context.Background()
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:aggregate-to-edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append([]rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get"}}}, role.Rules[2:]...)
	role.Labels["team"] = "a"
	delete(role.Annotations, rbacv1.AutoUpdateAnnotationKey)
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding, err := cs.RbacV1().RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	binding.Subjects = []rbacv1.Subject{{Kind: "User", Name: "alice"}}
	if _, err := cs.RbacV1().RoleBindings("kube-system").Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wants := map[string]any{}
	for _, obj := range policy.Defaults() {
		if op, want := reconcileDryRun(t, cs, obj); op != reconciliation.ReconcileNone {
			wants[obj.Kind()+"/"+obj.Name()] = want
		}
	}
	if len(wants) != 2 {
		t.Fatalf("kube would change %d objects, want 2: %v", len(wants), wants)
	}

	if err := lw.Stop(); err != nil {
		t.Fatal(err)
	}
	lw = StartListwatch(t, bin, "--data-dir", data, "--unsafe-no-fsync")
	if cs, err = kubernetes.NewForConfig(jsonConfig(lw.URL)); err != nil {
		t.Fatal(err)
	}
	gotRole, err := cs.RbacV1().ClusterRoles().Get(ctx, "system:aggregate-to-edit", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := wants["ClusterRole/system:aggregate-to-edit"].(*rbacv1.ClusterRole)
	if !equality.Semantic.DeepEqual(want.Rules, gotRole.Rules) || !equality.Semantic.DeepEqual(want.Labels, gotRole.Labels) || !equality.Semantic.DeepEqual(want.Annotations, gotRole.Annotations) {
		t.Errorf("reconciled role (-kube +listwatch):\n%s", cmp.Diff(want, gotRole))
	}
	gotBinding, err := cs.RbacV1().RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wantBinding := wants["RoleBinding/system::leader-locking-kube-scheduler"].(*rbacv1.RoleBinding); !equality.Semantic.DeepEqual(wantBinding.Subjects, gotBinding.Subjects) {
		t.Errorf("reconciled binding subjects (-kube +listwatch):\n%s", cmp.Diff(wantBinding.Subjects, gotBinding.Subjects))
	}
}

// TestKubectlAggregatedRoles: kubectl shows view, edit and admin with their
// aggregated rules, and a ClusterRole a user labels aggregate-to-view
// reaches all three (admin last, through edit).
//
// kubectl's watch of one named object prints what it GETs, then watches
// from resourceVersion 0 and skips that watch's first event (the current
// state): a change landing between the two is never printed, against kube
// as against us. A watch of a list (a field selector) resumes from the
// list's revision instead. A proxy holds kubectl's watch until admin has
// the rule, the order in which the named watch lost it.
func TestKubectlAggregatedRoles(t *testing.T) {
	bin := listwatchBin(t)
	lw := StartListwatch(t, bin, "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	target, err := url.Parse(lw.URL)
	if err != nil {
		t.Fatal(err)
	}
	watching, release := make(chan struct{}, 1), make(chan struct{})
	proxy := httputil.NewSingleHostReverseProxy(target)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			select {
			case watching <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	k := kubectls(t)["current"](t, gate.URL)
	get := func(name string) rbacv1.ClusterRole {
		t.Helper()
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(k.must(t, "get", "clusterroles", name, "-o", "yaml")), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	view, part := get("view"), get("system:aggregate-to-view")
	if view.Labels["rbac.authorization.k8s.io/aggregate-to-edit"] != "true" || view.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" ||
		view.AggregationRule == nil || len(view.Rules) == 0 || !equality.Semantic.DeepEqual(view.Rules, part.Rules) {
		t.Fatalf("view: %+v\nwant the rules of system:aggregate-to-view: %+v", view, part.Rules)
	}
	contains(t, k.must(t, "get", "clusterroles"), `(?m)^cluster-admin\s`, `(?m)^system:controller:namespace-controller\s`)

	k.must(t, "create", "-f", writeFile(t, t.TempDir(), "role.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: crd-reader}
rules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [get, list]}]
`))
	hasRule := func(r *rbacv1.ClusterRole) bool {
		return slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Resources, "customresourcedefinitions") })
	}
	watch := k.start(t, "get", "clusterroles", "--field-selector", "metadata.name=admin", "--watch", "-o", "jsonpath={.rules[*].resources}{\"\\n\"}")
	select {
	case <-watching: // kubectl has printed admin as it was
	case <-time.After(kubectlTimeout):
		t.Fatal("kubectl never watched")
	}
	cs, err := kubernetes.NewForConfig(jsonConfig(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), kubectlTimeout)
	defer cancel()
	w, err := cs.RbacV1().ClusterRoles().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	k.must(t, "label", "clusterrole", "crd-reader", "rbac.authorization.k8s.io/aggregate-to-view=true")
	gained := false
	for ev := range w.ResultChan() {
		if r, ok := ev.Object.(*rbacv1.ClusterRole); ok && hasRule(r) {
			gained = true
			break
		}
	}
	if !gained {
		t.Fatal("admin never gained the rule of crd-reader")
	}
	close(release)
	watch.expect(t, `"customresourcedefinitions"`)
	for _, name := range []string{"view", "edit", "admin"} {
		if r := get(name); !hasRule(&r) {
			t.Errorf("%s lacks the rule of crd-reader: %v", name, r.Rules)
		}
	}
}

// TestDefaultPolicyTwoServersEtcd starts two binaries on one etcd prefix at
// once: both start, and kube's reconciliation finds the policy complete.
func TestDefaultPolicyTwoServersEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	// One data directory: both start at once and must agree on the
	// service account signing key generated into it.
	args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--etcd-prefix", "/policy-test", "--data-dir", t.TempDir()}
	servers := make([]*Listwatch, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = startListwatch(bin, args) })
	}
	wg.Wait()
	for _, lw := range servers {
		if lw != nil {
			t.Cleanup(func() {
				if err := lw.Stop(); err != nil {
					t.Errorf("stopping listwatch: %v", err)
				}
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, lw := range servers {
		cs, err := kubernetes.NewForConfig(jsonConfig(lw.URL))
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range policy.Defaults() {
			if op, _ := reconcileDryRun(t, cs, obj); op != reconciliation.ReconcileNone {
				t.Errorf("kube would %s %s %s", op, obj.Kind(), obj.Name())
			}
		}
	}
}
