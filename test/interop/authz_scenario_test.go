package interop

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The identities of the scenario.
const (
	builderSA = "system:serviceaccount:team-a:builder"
	// secretValue is a Secret's data that the audit log must never hold.
	secretValue = "sup3r-s3cret-pa55word"
)

// TestAuthorizationScenario is the authorization story as a user lives
// it, from the binary in secure mode with the audit log on: the admin
// kubeconfig is cluster-admin; a ServiceAccount's token may do nothing
// until a RoleBinding of kube's aggregated `edit` grants it a namespace;
// it cannot grant what it lacks; impersonation, access and token reviews,
// anonymous requests and watches are decided by RBAC with kube's answers;
// and the audit log records it all without a token or a Secret's data.
// Each step runs with the current kubectl, and with Debian's 1.20 where
// the command exists.
func TestAuthorizationScenario(t *testing.T) {
	bin := listwatchBin(t)
	data, dir := t.TempDir(), t.TempDir()
	policy := writeFile(t, dir, "audit-policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n")
	auditLog := filepath.Join(dir, "audit.log")
	lw := StartListwatch(t, bin, "--secure", "--data-dir", data, "--unsafe-no-fsync",
		"--audit-policy-file", policy, "--audit-log-path", auditLog)
	ks := scenarioKubectls(t, lw.URL)
	admin := ks[0].with(lw.Kubeconfig)
	each := func(kubeconfig string, f func(k kubectl)) {
		for _, k := range ks {
			f(k.with(kubeconfig))
		}
	}

	// 1. The admin kubeconfig: system:masters, cluster-admin by kube's
	// default ClusterRoleBinding.
	if got := whoami(t, admin); got.Username != "system:admin" || !slices.Contains(got.Groups, "system:masters") {
		t.Errorf("admin's whoami: %+v, want system:admin in system:masters", got)
	}
	each(lw.Kubeconfig, func(k kubectl) { canI(t, k, "yes", "*", "*") })
	contains(t, admin.must(t, "get", "clusterrolebinding", "cluster-admin", "-o", "wide"), `cluster-admin\s+ClusterRole/cluster-admin\s+\S+\s+\s*system:masters`)

	// 2. A ServiceAccount's token, with nothing bound to it, then edit.
	admin.must(t, "create", "namespace", "team-a")
	admin.must(t, "create", "namespace", "team-b")
	admin.must(t, "-n", "team-a", "create", "serviceaccount", "builder")
	admin.must(t, "-n", "team-a", "create", "secret", "generic", "db", "--from-literal=password="+secretValue)
	admin.must(t, "-n", "team-a", "get", "secret", "db", "-o", "yaml")
	token := strings.TrimSpace(admin.must(t, "-n", "team-a", "create", "token", "builder"))
	builder := tokenKubeconfig(t, lw.Kubeconfig, token)
	const forbiddenList = `Error from server \(Forbidden\): configmaps is forbidden: User "system:serviceaccount:team-a:builder" cannot list resource "configmaps" in API group "" in the namespace "team-a"`
	each(builder, func(k kubectl) {
		canI(t, k, "no", "list", "configmaps", "-n", "team-a")
		out, err := k.run(t, nil, "-n", "team-a", "get", "configmaps")
		if err == nil {
			t.Errorf("builder lists configmaps before any binding:\n%s", out)
		}
		contains(t, out, forbiddenList)
	})
	contains(t, admin.must(t, "-n", "team-a", "create", "rolebinding", "builder-edit", "--clusterrole", "edit", "--serviceaccount", "team-a:builder"),
		`rolebinding.rbac.authorization.k8s.io/builder-edit created`)
	each(builder, func(k kubectl) {
		canI(t, k, "yes", "list", "configmaps", "-n", "team-a")
		canI(t, k, "no", "list", "secrets", "-n", "team-b")
		// The namespace's one ConfigMap is its CA's, as in kube.
		contains(t, k.must(t, "-n", "team-a", "get", "configmaps"), `(?m)^kube-root-ca\.crt\s+1\s`)
		// edit's rules, aggregated from kube's system:aggregate-to-edit
		// and view, and the discovery rules every user has.
		contains(t, k.must(t, "auth", "can-i", "--list", "-n", "team-a"),
			`(?m)^configmaps\s+\[\]\s+\[\]\s+\[create delete deletecollection patch update get list watch\]`,
			`(?m)^deployments\.apps\s+\[\]\s+\[\]\s+\[create delete deletecollection patch update get list watch\]`,
			`(?m)^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]`,
			`(?m)^\s+\[/apis\]\s+\[\]\s+\[get\]`)
	})
	// whoami by system:basic-user; the issuer's discovery by
	// system:service-account-issuer-discovery.
	if got := whoami(t, ks[0].with(builder)); got.Username != builderSA || !slices.Contains(got.Groups, "system:serviceaccounts:team-a") {
		t.Errorf("builder's whoami: %+v", got)
	}
	var oidc struct {
		Issuer  string
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal([]byte(ks[0].with(builder).must(t, "get", "--raw", "/.well-known/openid-configuration")), &oidc); err != nil || oidc.Issuer == "" || oidc.JWKSURI == "" {
		t.Errorf("builder reads the OIDC configuration: %+v %v", oidc, err)
	}
	// kube's edit may not write RBAC objects at all (only admin may): a
	// binding is refused by the authorizer, before any escalation check.
	out, err := ks[0].with(builder).run(t, nil, "-n", "team-a", "create", "rolebinding", "mine", "--clusterrole", "view", "--serviceaccount", "team-a:default")
	if err == nil {
		t.Errorf("edit created a rolebinding:\n%s", out)
	}
	contains(t, out, `rolebindings.rbac.authorization.k8s.io is forbidden: User "system:serviceaccount:team-a:builder" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "team-a"`)
	// With admin in team-a, it binds what it holds, not cluster-admin.
	admin.must(t, "-n", "team-a", "create", "rolebinding", "builder-admin", "--clusterrole", "admin", "--serviceaccount", "team-a:builder")
	contains(t, ks[0].with(builder).must(t, "-n", "team-a", "create", "rolebinding", "default-edit", "--clusterrole", "edit", "--serviceaccount", "team-a:default"),
		`rolebinding.rbac.authorization.k8s.io/default-edit created`)
	out, err = ks[0].with(builder).run(t, nil, "-n", "team-a", "create", "rolebinding", "escalate", "--clusterrole", "cluster-admin", "--serviceaccount", "team-a:builder")
	if err == nil {
		t.Errorf("builder bound cluster-admin to itself:\n%s", out)
	}
	contains(t, out, `rolebindings.rbac.authorization.k8s.io "escalate" is forbidden: user "system:serviceaccount:team-a:builder" \(groups=\["system:serviceaccounts" "system:serviceaccounts:team-a" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}\n\{NonResourceURLs:\["\*"\], Verbs:\["\*"\]\}`)
	admin.must(t, "-n", "team-a", "delete", "rolebinding", "builder-admin")

	// 3. Impersonation: the admin as the account sees its answers; the
	// account may impersonate only whom a rule names.
	asBuilder := []string{"--as", builderSA}
	each(lw.Kubeconfig, func(k kubectl) {
		canI(t, k, "yes", append([]string{"list", "configmaps", "-n", "team-a"}, asBuilder...)...)
		canI(t, k, "no", append([]string{"list", "secrets", "-n", "team-b"}, asBuilder...)...)
		contains(t, k.must(t, append([]string{"-n", "team-a", "get", "configmaps"}, asBuilder...)...), `(?m)^kube-root-ca\.crt\s+1\s`)
	})
	if got := whoami(t, admin, asBuilder...); got.Username != builderSA {
		t.Errorf("admin --as builder is %+v", got)
	}
	impersonate := func(k kubectl, user string) (string, error) {
		return k.run(t, nil, "-n", "team-a", "get", "configmaps", "--as", user)
	}
	each(builder, func(k kubectl) {
		out, err := impersonate(k, "admin")
		if err == nil {
			t.Errorf("builder impersonated admin:\n%s", out)
		}
		contains(t, out, `Error from server \(Forbidden\): users "admin" is forbidden: User "system:serviceaccount:team-a:builder" cannot impersonate resource "users" in API group "" at the cluster scope`)
	})
	admin.must(t, "create", "clusterrole", "impersonate-alice", "--verb", "impersonate", "--resource", "users", "--resource-name", "alice")
	admin.must(t, "create", "clusterrolebinding", "builder-impersonates-alice", "--clusterrole", "impersonate-alice", "--serviceaccount", "team-a:builder")
	if got := whoami(t, ks[0].with(builder), "--as", "alice"); got.Username != "alice" || !slices.Equal(got.Groups, []string{"system:authenticated"}) {
		t.Errorf("builder --as alice is %+v", got)
	}
	each(builder, func(k kubectl) {
		// alice may impersonate-in but holds nothing herself.
		out, _ := impersonate(k, "alice")
		contains(t, out, `User "alice" cannot list resource "configmaps" in API group "" in the namespace "team-a"`)
		out, _ = impersonate(k, "bob")
		contains(t, out, `users "bob" is forbidden: User "system:serviceaccount:team-a:builder" cannot impersonate resource "users"`)
	})

	// 4. Reviews through client-go: a SubjectAccessReview by the admin for
	// others; a TokenReview needs system:auth-delegator.
	adminCS, builderCS := clientset(t, lw.Kubeconfig), clientset(t, builder)
	ctx := t.Context()
	for _, tt := range []struct {
		spec authorizationv1.SubjectAccessReviewSpec
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{authorizationv1.SubjectAccessReviewSpec{User: "alice"}, authorizationv1.SubjectAccessReviewStatus{}},
		{authorizationv1.SubjectAccessReviewSpec{User: builderSA, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: `RBAC: allowed by RoleBinding "builder-edit/team-a" of ClusterRole "edit" to ServiceAccount "builder/team-a"`}},
	} {
		tt.spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "list", Resource: "configmaps"}
		sar, err := adminCS.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: tt.spec}, metav1.CreateOptions{})
		if err != nil || sar.Status != tt.want {
			t.Errorf("SubjectAccessReview for %s: %v %+v, want %+v", tt.spec.User, err, sar.Status, tt.want)
		}
	}
	tokenReview := func() (*authenticationv1.TokenReview, error) {
		return builderCS.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	}
	if _, err := tokenReview(); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(),
		`tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:team-a:builder" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`) {
		t.Errorf("TokenReview without system:auth-delegator: %v, want kube's 403", err)
	}
	admin.must(t, "create", "clusterrolebinding", "builder-delegates", "--clusterrole", "system:auth-delegator", "--serviceaccount", "team-a:builder")
	if tr, err := tokenReview(); err != nil || !tr.Status.Authenticated || tr.Status.User.Username != builderSA {
		t.Errorf("TokenReview with system:auth-delegator: %v %+v", err, tr)
	}

	// 5. No credentials: public information and health, nothing else.
	anonymous := anonymousClient(t, lw.Kubeconfig)
	for _, tt := range []struct {
		path    string
		code    int
		message string
	}{
		{"/version", 200, ""},
		{"/healthz", 200, ""},
		{"/readyz", 200, ""},
		{"/api/v1/namespaces", 403, `namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope`},
		// kube binds system:discovery to system:authenticated only (1.14).
		{"/apis", 403, `forbidden: User "system:anonymous" cannot get path "/apis"`},
		{"/.well-known/openid-configuration", 403, `forbidden: User "system:anonymous" cannot get path "/.well-known/openid-configuration"`},
	} {
		code, status := anonymousGet(t, anonymous, lw.URL+tt.path)
		if code != tt.code || tt.message != "" && (status.Message != tt.message || status.Reason != metav1.StatusReasonForbidden) {
			t.Errorf("anonymous GET %s: %d %+v, want %d %q", tt.path, code, status, tt.code, tt.message)
		}
	}

	// 6. A watch is authorized when it starts (of one name: the
	// namespace's CA is there already).
	w, err := builderCS.CoreV1().ConfigMaps("team-a").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=watched"})
	if err != nil {
		t.Fatalf("builder watches configmaps in team-a: %v", err)
	}
	defer w.Stop()
	if _, err := adminCS.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || !ok || cm.Name != "watched" {
			t.Errorf("builder's watch: %s %v", ev.Type, ev.Object)
		}
	case <-time.After(kubectlTimeout):
		t.Error("builder's watch had no event")
	}
	_, err = builderCS.CoreV1().ConfigMaps("team-b").Watch(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:team-a:builder" cannot watch resource "configmaps" in API group "" in the namespace "team-b"`) {
		t.Errorf("builder watches configmaps in team-b: %v, want kube's 403", err)
	}
	w.Stop()

	// 7. The audit log, complete once the server has stopped.
	if err := lw.Stop(); err != nil {
		t.Fatal(err)
	}
	checkAuditLog(t, auditLog, token)

	// Without anonymous authentication, no credentials is 401, and the
	// admin kubeconfig still works. Health checks stay open (kube answers
	// them 401 too unless its authentication configuration opens them).
	lw = StartListwatch(t, bin, "--secure", "--data-dir", data, "--unsafe-no-fsync", "--anonymous-auth=false")
	for _, path := range []string{"/version", "/api/v1/namespaces", "/apis"} {
		if code, status := anonymousGet(t, anonymous, lw.URL+path); code != http.StatusUnauthorized || status.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("anonymous GET %s with --anonymous-auth=false: %d %+v, want 401", path, code, status)
		}
	}
	if code, _ := anonymousGet(t, anonymous, lw.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("anonymous GET /readyz with --anonymous-auth=false: %d, want 200", code)
	}
	contains(t, admin.must(t, "--server", lw.URL, "get", "namespaces"), `team-a`)
}

// TestReadmeAnonymousLoopback: the README's commands, unchanged: on
// loopback with no flags, anyone may do anything.
func TestReadmeAnonymousLoopback(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	resp, err := http.Post(lw.URL+"/api/v1/namespaces/default/configmaps", "application/json",
		strings.NewReader(`{"metadata":{"name":"hello"},"data":{"greeting":"hi"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST a configmap: %s", resp.Status)
	}
	if code, obj := getObject(t, lw.URL, "/api/v1/namespaces/default/configmaps/hello"); code != http.StatusOK || field(obj, "data", "greeting") != "hi" {
		t.Errorf("GET the configmap: %d %v", code, obj)
	}
	for _, k := range scenarioKubectls(t, lw.URL) {
		name := "world-" + map[bool]string{true: "current", false: "debian"}[k.current]
		contains(t, k.must(t, "--server", lw.URL, "create", "configmap", name, "--from-literal=k=v"), `configmap/`+name+` created`)
		contains(t, k.must(t, "--server", lw.URL, "get", "configmaps"), `(?m)^hello\s+1\s`, `(?m)^`+name+`\s+1\s`)
	}
}

// scenarioKubectls are the current kubectl and, when installed, Debian's.
func scenarioKubectls(t *testing.T, server string) []kubectl {
	ks := []kubectl{newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), server, true)}
	if bin, err := exec.LookPath("kubectl"); err == nil {
		ks = append(ks, newKubectl(t, bin, server, false))
	} else {
		t.Log("Debian's kubectl is not installed: the current kubectl only")
	}
	return ks
}

// with is k using kubeconfig (exec uses the last of repeated variables).
func (k kubectl) with(kubeconfig string) kubectl {
	k.env = append(slices.Clip(k.env), "KUBECONFIG="+kubeconfig)
	return k
}

// canI runs kubectl auth can-i args and checks its answer and exit code
// (1 for no).
func canI(t *testing.T, k kubectl, want string, args ...string) {
	t.Helper()
	out, err := k.run(t, nil, append([]string{"auth", "can-i"}, args...)...)
	var exit *exec.ExitError
	if got := strings.TrimSpace(out); got != want || (want == "yes") != (err == nil) || err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Errorf("kubectl %s auth can-i %s: %q (%v), want %s", filepath.Base(k.bin), strings.Join(args, " "), out, err, want)
	}
}

// whoami is kubectl auth whoami's answer.
func whoami(t *testing.T, k kubectl, args ...string) authenticationv1.UserInfo {
	t.Helper()
	out := k.must(t, append([]string{"auth", "whoami", "-o", "json"}, args...)...)
	var ssr authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(out), &ssr); err != nil {
		t.Fatalf("kubectl auth whoami: %v: %s", err, out)
	}
	return ssr.Status.UserInfo
}

// tokenKubeconfig writes a kubeconfig with admin's cluster (server and CA)
// and token as its only credential.
func tokenKubeconfig(t *testing.T, admin, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.ClientCertificateData, auth.ClientKeyData, auth.Token = nil, nil, token
	}
	path := filepath.Join(t.TempDir(), "token.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientset is client-go as kubeconfig says.
func clientset(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// anonymousClient is an HTTP client that trusts kubeconfig's CA and sends
// no credentials.
func anonymousClient(t *testing.T, kubeconfig string) *http.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// anonymousGet GETs url with hc and returns the code and, for an error,
// its Status.
func anonymousGet(t *testing.T, hc *http.Client, url string) (int, metav1.Status) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var status metav1.Status
	if b, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	} else if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &status); err != nil {
			t.Errorf("GET %s: %d, not a Status: %s", url, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, status
}

// auditEvent is what checkAuditLog reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage            string
	RequestURI       string
	Verb             string
	User             authenticationv1.UserInfo
	ImpersonatedUser *authenticationv1.UserInfo
	ObjectRef        *struct{ Resource, Subresource string }
	ResponseStatus   *metav1.Status
	ResponseObject   json.RawMessage
	Annotations      map[string]string
}

// checkAuditLog checks the scenario's audit log: the admin's requests as
// the account name both, a denial is recorded as one, an allowed request
// names the binding that allowed it, and neither the token the
// TokenRequest returned nor the Secret's data is anywhere.
func checkAuditLog(t *testing.T, path, token string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for what, secret := range map[string]string{
		"the token": token, "the Secret's data": secretValue,
		"the Secret's data in base64": base64.StdEncoding.EncodeToString([]byte(secretValue)),
	} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the audit log holds %s", what)
		}
	}
	var impersonated, denied, allowed, tokenRequest bool
	for line := range bytes.Lines(b) {
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("audit event: %v: %s", err, line)
		}
		if ev.Stage != "ResponseComplete" {
			continue
		}
		if ev.User.Username == "system:admin" && ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == builderSA &&
			strings.HasPrefix(ev.RequestURI, "/api/v1/namespaces/team-a/configmaps") {
			impersonated = true
		}
		if ev.User.Username == builderSA && ev.Annotations["authorization.k8s.io/decision"] == "forbid" &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code == http.StatusForbidden && ev.ResponseStatus.Reason == metav1.StatusReasonForbidden {
			denied = true
		}
		if ev.User.Username == builderSA && ev.Annotations["authorization.k8s.io/decision"] == "allow" &&
			ev.Annotations["authorization.k8s.io/reason"] == `RBAC: allowed by RoleBinding "builder-edit/team-a" of ClusterRole "edit" to ServiceAccount "builder/team-a"` {
			allowed = true
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Subresource == "token" && ev.Verb == "create" && ev.ResponseStatus != nil && ev.ResponseStatus.Code == http.StatusCreated {
			tokenRequest = true
		}
	}
	if !impersonated || !denied || !allowed || !tokenRequest {
		t.Errorf("audit log: admin as builder %v, a denial %v, an allow by edit %v, the TokenRequest %v; want all:\n%s", impersonated, denied, allowed, tokenRequest, b)
	}
}
