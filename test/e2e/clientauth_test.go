package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// startTLSServer is startServer over TLS, with a serving certificate of ca.
func startTLSServer(t *testing.T, ca *authntest.CA, args ...string) *server {
	t.Helper()
	certFile, keyFile := authntest.WritePEM(t, ca.Server(t))
	s := &server{addr: freeAddr(t), dataDir: t.TempDir(), caFile: writeFile(t, t.TempDir(), "ca.crt", string(ca.PEM))}
	s.URL = "https://" + s.addr
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	t.Cleanup(tr.CloseIdleConnections)
	s.https = &http.Client{Transport: tr}
	s.start(t, append([]string{"--tls-cert-file", certFile, "--tls-private-key-file", keyFile}, args...)...)
	t.Cleanup(func() { s.stop(t) })
	return s
}

// authServer is a server over TLS that knows the tokens of these tests and
// the client certificates of its CA.
func authServer(t *testing.T) (*server, *authntest.CA, string) {
	t.Helper()
	ca := authntest.NewCA(t)
	tokens := tokenFile(t,
		`plugin-token,plugin-user,1,"system:masters"`,
		`file-one,file-user,2,"system:masters"`,
		`file-two,file-user,2,"system:masters"`,
	)
	caFile := writeFile(t, t.TempDir(), "ca.crt", string(ca.PEM))
	return startTLSServer(t, ca, "--token-auth-file", tokens, "--client-ca-file", caFile), ca, caFile
}

// writeKubeconfig writes a kubeconfig for server, trusting caFile, with
// the given user (a YAML mapping).
func writeKubeconfig(t *testing.T, server, caFile, user string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	authntest.WriteFile(t, path, `apiVersion: v1
kind: Config
current-context: e2e
contexts: [{name: e2e, context: {cluster: e2e, user: e2e}}]
clusters: [{name: e2e, cluster: {server: "`+server+`", certificate-authority: "`+caFile+`"}}]
users:
- name: e2e
  user: `+user+"\n")
	return path
}

// writePlugin writes a credential plugin printing an ExecCredential whose
// status is status (JSON).
func writePlugin(t *testing.T, status string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin.sh")
	script := "#!/bin/sh\ncat <<'EOF'\n" + `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":` + status + "}\nEOF\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// execUser is a kubeconfig user of the plugin at path.
func execUser(path string) string {
	return `{exec: {command: "` + path + `", apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}}`
}

// cli runs the listwatch CLI with a kubeconfig and returns its output and
// error.
func cli(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = cliEnv(t)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubeconfigClient is the library's access to ConfigMaps in default, as
// the kubeconfig at path says.
func kubeconfigClient(t *testing.T, path string) *client.Resource[*configMap] {
	t.Helper()
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return client.NewResource[*configMap](c, configMaps, "default")
}

// TestExecPluginEndToEnd: a kubeconfig's credential plugin, giving a token
// or a client certificate, authenticates the CLI and the library to the
// server over TLS; a plugin whose token the server does not know fails
// with 401.
func TestExecPluginEndToEnd(t *testing.T) {
	s, ca, caFile := authServer(t)
	tokenPlugin := writeKubeconfig(t, s.URL, caFile, execUser(writePlugin(t, `{"token":"plugin-token"}`)))
	if out, err := cli(t, tokenPlugin, "apply", "-f", writeManifest(t, "from-plugin")); err != nil {
		t.Fatalf("apply with a plugin's token: %v\n%s", err, out)
	}
	if out, err := cli(t, tokenPlugin, "get", "configmaps"); err != nil || !strings.Contains(out, "from-plugin") {
		t.Errorf("get with a plugin's token: %v\n%s", err, out)
	}

	cert := ca.Client(t, "cert-user", "system:masters")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	_, keyPath := authntest.WritePEM(t, cert)
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	status, err := json.Marshal(map[string]string{"clientCertificateData": string(certPEM), "clientKeyData": string(keyPEM)})
	if err != nil {
		t.Fatal(err)
	}
	certPlugin := writeKubeconfig(t, s.URL, caFile, execUser(writePlugin(t, string(status))))
	if _, err := kubeconfigClient(t, certPlugin).Get(t.Context(), "from-plugin"); err != nil {
		t.Errorf("get with a plugin's certificate: %v", err)
	}

	unknown := writeKubeconfig(t, s.URL, caFile, execUser(writePlugin(t, `{"token":"unknown"}`)))
	if out, err := cli(t, unknown, "get", "configmaps"); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("get with an unknown token: %v\n%s", err, out)
	}

	s.stop(t)
	logs := s.logs.String()
	for _, user := range []string{"user=plugin-user", "user=cert-user"} {
		if !strings.Contains(logs, user) {
			t.Errorf("no request logged with %s:\n%s", user, logs)
		}
	}
}

// writeManifest writes a ConfigMap manifest.
func writeManifest(t *testing.T, name string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), name+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: default}\n")
}

// TestTokenFileRotatesEndToEnd: a client whose kubeconfig names a token
// file follows it as it is rewritten, with no restart: the next request
// carries the new token.
func TestTokenFileRotatesEndToEnd(t *testing.T) {
	s, _, caFile := authServer(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	authntest.WriteFile(t, tokenFile, "file-one\n")
	kubeconfig := writeKubeconfig(t, s.URL, caFile, `{tokenFile: "`+tokenFile+`"}`)
	if out, err := cli(t, kubeconfig, "get", "configmaps"); err != nil {
		t.Fatalf("the CLI with a token file: %v\n%s", err, out)
	}
	cms := kubeconfigClient(t, kubeconfig)
	list := func() error {
		_, _, _, err := cms.List(t.Context(), client.ListOptions{})
		return err
	}
	if err := list(); err != nil {
		t.Fatal(err)
	}
	authntest.WriteFile(t, tokenFile, "revoked\n")
	if err := list(); !client.IsUnauthorized(err) {
		t.Fatalf("after the file was rewritten with an unknown token: %v, want 401", err)
	}
	authntest.WriteFile(t, tokenFile, "file-two\n")
	if err := list(); err != nil {
		t.Errorf("after the file was rewritten with a known token: %v", err)
	}
}

// TestImpersonationEndToEnd: the CLI sends a kubeconfig's impersonation,
// through a proxy that records it, to the server.
func TestImpersonationEndToEnd(t *testing.T) {
	s, ca, _ := authServer(t)
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for k, v := range r.Header {
			if strings.HasPrefix(k, "Impersonate-") {
				seen[k] = v
			}
		}
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	proxyCA := filepath.Join(t.TempDir(), "proxy-ca.crt")
	authntest.WriteFile(t, proxyCA, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})))
	kubeconfig := writeKubeconfig(t, proxy.URL, proxyCA,
		`{token: plugin-token, as: alice, as-uid: "42", as-groups: ["system:masters", devs], as-user-extra: {"example.com/team": [blue]}}`)
	for _, tc := range []struct {
		flags []string
		want  map[string][]string
	}{
		{nil, map[string][]string{
			"Impersonate-User":                     {"alice"},
			"Impersonate-Uid":                      {"42"},
			"Impersonate-Group":                    {"system:masters", "devs"},
			"Impersonate-Extra-Example.com%2fteam": {"blue"},
		}},
		// The flags replace what they name, as kubectl's.
		{[]string{"--as", "bob", "--as-group", "system:masters", "--as-group", "ops"}, map[string][]string{
			"Impersonate-User":                     {"bob"},
			"Impersonate-Uid":                      {"42"},
			"Impersonate-Group":                    {"system:masters", "ops"},
			"Impersonate-Extra-Example.com%2fteam": {"blue"},
		}},
	} {
		mu.Lock()
		clear(seen)
		mu.Unlock()
		if out, err := cli(t, kubeconfig, append([]string{"get", "configmaps"}, tc.flags...)...); err != nil {
			t.Fatalf("get %v: %v\n%s", tc.flags, err, out)
		}
		mu.Lock()
		if diff := cmp.Diff(tc.want, seen); diff != "" {
			t.Errorf("get %v: headers (-want +got):\n%s", tc.flags, diff)
		}
		mu.Unlock()
	}
}
