package interop

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestKubectlAuth drives kubectl auth can-i, can-i --list and whoami, and
// --as/--as-group, against the binary in its loopback mode, where everyone
// may do everything: it proves the wire (discovery, the reviews in
// protobuf, impersonation headers), denials are proven in internal/server.
func TestKubectlAuth(t *testing.T) { eachKubectl(t, kubectlAuth) }

func kubectlAuth(t *testing.T, k kubectl) {
	for _, args := range [][]string{
		{"auth", "can-i", "list", "configmaps"},
		{"auth", "can-i", "delete", "secrets", "-n", "kube-system"},
		{"auth", "can-i", "create", "roles.rbac.authorization.k8s.io"},
		{"auth", "can-i", "get", "/metrics"},
		{"auth", "can-i", "list", "configmaps", "--as", "bob", "--as-group", "ops"},
	} {
		if out := k.must(t, args...); strings.TrimSpace(out) != "yes" {
			t.Errorf("kubectl %s: %q, want yes", strings.Join(args, " "), out)
		}
	}
	// kubectl prints each rule as resources, non-resource URLs, resource
	// names and verbs.
	list := k.must(t, "auth", "can-i", "--list")
	contains(t, list, `Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs`, `\*\.\*\s+\[\]\s+\[\]\s+\[\*\]`, `\s+\[\*\]\s+\[\]\s+\[\*\]`)
	// A review created from a file, as any object: kubectl finds it in
	// discovery and validates it against the OpenAPI schema.
	ssar := writeFile(t, t.TempDir(), "ssar.yaml", `apiVersion: authorization.k8s.io/v1
kind: SelfSubjectAccessReview
spec:
  resourceAttributes: {verb: get, resource: secrets, namespace: default}
`)
	if out := k.must(t, "create", "-f", ssar, "-o", "jsonpath={.status.allowed}"); out != "true" {
		t.Errorf("kubectl create -f ssar.yaml: %q, want true", out)
	}
	// An impersonated user's request is served as any other.
	k.must(t, "create", "configmap", "as-bob", "--as", "bob", "--from-literal", "k=v")
	contains(t, k.must(t, "get", "configmap", "as-bob", "--as", "bob", "-o", "name"), `configmap/as-bob`)
	if !k.current {
		return // auth whoami came in kubectl 1.26
	}
	if diff := cmp.Diff(authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}, whoami(t, k)); diff != "" {
		t.Errorf("whoami (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(authenticationv1.UserInfo{Username: "bob", Groups: []string{"ops", "qa", "system:authenticated"}}, whoami(t, k, "--as", "bob", "--as-group", "ops", "--as-group", "qa")); diff != "" {
		t.Errorf("whoami --as bob (-want +got)\n%s", diff)
	}
	sa := authenticationv1.UserInfo{Username: "system:serviceaccount:default:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}}
	if diff := cmp.Diff(sa, whoami(t, k, "--as", "system:serviceaccount:default:builder")); diff != "" {
		t.Errorf("whoami as a service account (-want +got)\n%s", diff)
	}
	contains(t, k.must(t, "auth", "whoami"), `ATTRIBUTE\s+VALUE`, `Username\s+system:anonymous`, `Groups\s+\[system:unauthenticated\]`)
}

// TestClientGoAccessReviews uses client-go's typed clients, which send the
// reviews in protobuf, and rest.Config.Impersonate against the binary.
func TestClientGoAccessReviews(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	attrs := &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "configmaps"}
	ssar, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
	if err != nil || !ssar.Status.Allowed || ssar.Spec.ResourceAttributes.Resource != "configmaps" {
		t.Errorf("SelfSubjectAccessReview: %v %+v", err, ssar)
	}
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", Extra: map[string]authorizationv1.ExtraValue{"scopes": {"a"}},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed || sar.Spec.Extra["scopes"][0] != "a" {
		t.Errorf("SubjectAccessReview: %v %+v", err, sar)
	}
	lsar, err := cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"ops"}, ResourceAttributes: attrs}}, metav1.CreateOptions{})
	if err != nil || !lsar.Status.Allowed || lsar.Namespace != "default" {
		t.Errorf("LocalSubjectAccessReview: %v %+v", err, lsar)
	}
	_, err = cs.AuthorizationV1().LocalSubjectAccessReviews("kube-system").Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"ops"}, ResourceAttributes: attrs}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resourceAttributes.namespace: Invalid value: \"default\": must match metadata.namespace") {
		t.Errorf("LocalSubjectAccessReview of another namespace: %v, want kube's 422", err)
	}
	ssrr, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	wantRules := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}
	if err != nil || !cmp.Equal(wantRules, ssrr.Status) {
		t.Errorf("SelfSubjectRulesReview: %v (-want +got)\n%s", err, cmp.Diff(wantRules, ssrr.Status))
	}

	as, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1, Impersonate: rest.ImpersonationConfig{
		UserName: "bob", UID: "b-2", Groups: []string{"ops"}, Extra: map[string][]string{"example.com/team": {"x", "y"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ssr, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	want := authenticationv1.UserInfo{Username: "bob", UID: "b-2", Groups: []string{"ops", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"example.com/team": {"x", "y"}}}
	if err != nil || !cmp.Equal(want, ssr.Status.UserInfo) || ssr.CreationTimestamp.IsZero() {
		t.Errorf("SelfSubjectReview as bob: %v %v (-want +got)\n%s", err, ssr.CreationTimestamp, cmp.Diff(want, ssr.Status.UserInfo))
	}
}

// TestClientGoTokenReview asks the binary, serving a token file, whether
// tokens are valid, as a delegating proxy (kube-rbac-proxy) does, with
// kube's system:auth-delegator bound to it.
func TestClientGoTokenReview(t *testing.T) {
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", "alice-token,alice,a-1,\"devs,ops\"\nadmin-token,admin,1,system:masters\n")
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", dir, "--unsafe-no-fsync", "--token-auth-file", tokens)
	admin, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: "admin-token", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-delegates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: "alice-token", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	review := func(token string) authenticationv1.TokenReviewStatus {
		t.Helper()
		tr, err := cs.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		return tr.Status
	}
	// As kube's, with the group the server's authenticator adds, and the
	// API's audiences, which a token file's tokens are taken for.
	want := authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"devs", "ops", "system:authenticated"}},
		Audiences: []string{"https://kubernetes.default.svc.cluster.local"}}
	if diff := cmp.Diff(want, review("alice-token")); diff != "" {
		t.Errorf("a known token (-want +got)\n%s", diff)
	}
	if got := review("forged"); got.Authenticated || got.Error == "" {
		t.Errorf("a forged token: %+v, want not authenticated, with an error", got)
	}
}
