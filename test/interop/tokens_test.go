package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/testwait"
)

// TestServiceAccountTokens checks `kubectl create token` against the
// binary, the token used by kubectl and client-go, its revocation, and
// client-go's CreateToken with audiences of its own.
func TestServiceAccountTokens(t *testing.T) {
	// kubectl sends tokens over TLS only.
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens.csv", `admin,admin,1,"system:masters"`+"\n")
	ca := authntest.NewCA(t)
	certFile, keyFile := authntest.WritePEM(t, ca.Server(t))
	caFile := writeFile(t, dir, "ca.crt", string(ca.PEM))
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--token-auth-file", tokens,
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile)
	k := kubectls(t)["current"](t, lw.URL)
	k.env = append(k.env, "KUBECONFIG="+kubeconfigWithCA(t, lw.URL, caFile))
	k.must(t, "--token", "admin", "create", "serviceaccount", "builder")
	contains(t, k.must(t, "--token", "admin", "get", "serviceaccounts"), `NAME +AGE`, `(?m)^builder +\d+s$`, `(?m)^default +\d+s$`)
	token := strings.TrimSpace(k.must(t, "--token", "admin", "create", "token", "builder"))
	// RBAC grants the account what a binding gives it, as any user.
	k.must(t, "--token", "admin", "create", "rolebinding", "builder-view", "--clusterrole", "view", "--serviceaccount", "default:builder")
	contains(t, k.must(t, "--token", token, "get", "configmaps"), "No resources found in default namespace")
	waitLog(t, lw, `user=system:serviceaccount:default:builder`)

	out, err := k.run(t, nil, "--token", "admin", "create", "token", "builder", "--duration", "5m")
	if err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
		t.Errorf("create token --duration 5m: %v\n%s", err, out)
	}

	tlsConfig := rest.TLSClientConfig{CAFile: caFile}
	admin, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: "admin", QPS: -1, TLSClientConfig: tlsConfig})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tt := range []struct {
		audiences []string
		lists     bool
	}{{nil, true}, {[]string{"vault"}, false}} {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "builder", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: tt.audiences, ExpirationSeconds: new(int64(600))},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("CreateToken %v: %v", tt.audiences, err)
		}
		if d := time.Until(tr.Status.ExpirationTimestamp.Time); d < 9*time.Minute || d > 10*time.Minute {
			t.Errorf("a 600 s token expires in %v", d)
		}
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: tr.Status.Token, QPS: -1, TLSClientConfig: tlsConfig})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if tt.lists && err != nil || !tt.lists && !apierrors.IsUnauthorized(err) {
			t.Errorf("list with a token for %v: %v", tt.audiences, err)
		}
	}

	k.must(t, "--token", "admin", "delete", "serviceaccount", "builder")
	out, err = k.run(t, nil, "--token", token, "get", "configmaps")
	if err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("the token of a deleted account: %v\n%s", err, out)
	}
}

// waitLog waits until the server's log has a line matching pattern: the
// access log is written in batches.
func waitLog(t *testing.T, lw *Listwatch, pattern string) {
	t.Helper()
	testwait.UntilNil(t, 10*time.Second, fmt.Sprintf("%q in the log", pattern), func() error {
		if log := lw.logs.String(); !strings.Contains(log, pattern) {
			return errors.New(log)
		}
		return nil
	})
}

// kubeconfigWithCA writes a kubeconfig for server trusting the CA in caFile.
func kubeconfigWithCA(t *testing.T, server, caFile string) string {
	return writeFile(t, t.TempDir(), "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: lw, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: lw, user: {}}]
contexts: [{name: lw, context: {cluster: lw, user: lw, namespace: default}}]
current-context: lw
`, server, caFile))
}
