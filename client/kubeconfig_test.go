package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// isolateKubeconfig makes the test see no kubeconfig of the machine's user.
func isolateKubeconfig(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	return home
}

const firstKubeconfig = `
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team}
- name: shared
  context: {cluster: dev-cluster, user: dev-user}
clusters:
- name: dev-cluster
  cluster:
    server: https://dev.example:6443
    certificate-authority: certs/ca.pem
    tls-server-name: api.dev
users:
- name: dev-user
  user:
    client-certificate: certs/client.pem
    client-key: certs/client-key.pem
    tokenFile: token
`

const secondKubeconfig = `
current-context: prod
contexts:
- name: shared
  context: {cluster: prod-cluster, user: prod-user, namespace: ignored}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
- name: basic
  context: {cluster: insecure, user: basic-user}
clusters:
- name: prod-cluster
  cluster:
    server: https://prod.example
    certificate-authority-data: ` + "cHJvZCBjYQ==" + `
- name: insecure
  cluster: {server: "http://127.0.0.1:8080", insecure-skip-tls-verify: true}
users:
- name: prod-user
  user:
    token: prod-token
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: basic-user
  user: {username: ann, password: secret}
`

func TestLoadKubeconfigMergesLikeKubectl(t *testing.T) {
	home := isolateKubeconfig(t)
	dir := t.TempDir()
	first := writeFile(t, dir, "a/config", firstKubeconfig)
	second := writeFile(t, dir, "b/config", secondKubeconfig)
	missing := filepath.Join(dir, "missing")
	t.Setenv("KUBECONFIG", strings.Join([]string{missing, first, "", second}, string(os.PathListSeparator)))
	writeFile(t, home, ".kube/config", "current-context: never-read\n")
	adir := filepath.Dir(first)
	dev := Config{
		Host: "https://dev.example:6443", BearerTokenFile: filepath.Join(adir, "token"),
		TLS: TLSConfig{
			CAFile: filepath.Join(adir, "certs/ca.pem"), ServerName: "api.dev",
			CertFile: filepath.Join(adir, "certs/client.pem"), KeyFile: filepath.Join(adir, "certs/client-key.pem"),
		},
	}
	withNamespace := func(c Config, ns string) Config { c.Namespace = ns; return c }

	tests := []struct {
		name string
		opts KubeconfigOptions
		want Config
	}{{
		name: "the first file's current context, relative paths from its directory",
		want: withNamespace(dev, "team"),
	}, {
		name: "a context of the second file, with -data fields",
		opts: KubeconfigOptions{Context: "prod"},
		want: Config{
			Host: "https://prod.example", BearerToken: "prod-token",
			TLS: TLSConfig{CAData: []byte("prod ca"), CertData: []byte("cert"), KeyData: []byte("key")},
		},
	}, {
		name: "the first file wins a context both define",
		opts: KubeconfigOptions{Context: "shared"},
		want: dev,
	}, {
		name: "basic auth, insecure, and --server",
		opts: KubeconfigOptions{Context: "basic", Server: "https://override:1"},
		want: Config{Host: "https://override:1", Username: "ann", Password: "secret", TLS: TLSConfig{Insecure: true}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadKubeconfig(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadKubeconfigErrors(t *testing.T) {
	home := isolateKubeconfig(t)
	dir := t.TempDir()
	exec := writeFile(t, dir, "exec", `
current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {exec: {command: aws}}}]
`)
	tests := []struct {
		name string
		opts KubeconfigOptions
		want string
	}{
		{"an explicit file must exist", KubeconfigOptions{Path: filepath.Join(dir, "nope")}, "no such file"},
		{"an unknown context", KubeconfigOptions{Path: exec, Context: "y"}, `context "y" not found`},
		{"an exec plugin without apiVersion", KubeconfigOptions{Path: exec}, `user "u": exec plugin: invalid apiVersion ""`},
		{"malformed YAML", KubeconfigOptions{Path: writeFile(t, dir, "bad", "clusters: {")}, "kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadKubeconfig(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	t.Run("nothing configured", func(t *testing.T) {
		if _, err := LoadKubeconfig(KubeconfigOptions{}); !errors.Is(err, ErrNoConfig) {
			t.Errorf("err = %v, want ErrNoConfig", err)
		}
		cfg, err := LoadKubeconfig(KubeconfigOptions{Server: "http://127.0.0.1:1"})
		if err != nil || cfg.Host != "http://127.0.0.1:1" {
			t.Errorf("--server alone: %+v, %v", cfg, err)
		}
	})
	t.Run("~/.kube/config without KUBECONFIG", func(t *testing.T) {
		writeFile(t, home, ".kube/config", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: 'https://home'}}]\n")
		cfg, err := LoadKubeconfig(KubeconfigOptions{})
		if err != nil || cfg.Host != "https://home" {
			t.Errorf("got %+v, %v", cfg, err)
		}
	})
}

func TestInClusterConfig(t *testing.T) {
	dir := t.TempDir()
	token := writeFile(t, dir, "token", "sa-token\n")
	writeFile(t, dir, "namespace", "kube-system")
	t.Setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	cfg, err := InClusterConfigFrom(token, filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Host: "https://[fd00::1]:443", BearerTokenFile: token, Namespace: "kube-system", TLS: TLSConfig{CAFile: filepath.Join(dir, "ca.crt")}}
	if diff := cmp.Diff(want, *cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := InClusterConfigFrom(token, ""); err == nil {
		t.Error("outside a cluster: no error")
	}
}

// testCert makes a self-signed certificate for name.
func testCert(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestKubeconfigOverTLS connects with a kubeconfig holding the server's CA
// and a client certificate as -data fields, and a token: the request must
// arrive over HTTP/2 with the certificate, the token and the User-Agent.
func TestKubeconfigOverTLS(t *testing.T) {
	isolateKubeconfig(t)
	type seen struct{ proto, cn, authz, ua string }
	got := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{proto: r.Proto, authz: r.Header.Get("Authorization"), ua: r.Header.Get("User-Agent")}
		if len(r.TLS.PeerCertificates) > 0 {
			s.cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		got <- s
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Thing","metadata":{"name":"x"}}`))
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	certPEM, keyPEM := testCert(t, "alice")
	b64 := base64.StdEncoding.EncodeToString
	path := writeFile(t, t.TempDir(), "config", `
current-context: tls
contexts: [{name: tls, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "`+srv.URL+`", certificate-authority-data: `+b64(caPEM)+`, tls-server-name: example.com}}]
users: [{name: u, user: {token: t0k3n, client-certificate-data: `+b64(certPEM)+`, client-key-data: `+b64(keyPEM)+`}}]
`)
	cfg, err := LoadKubeconfig(KubeconfigOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := NewResource[Unstructured](c, GroupVersionResource{Version: "v1", Resource: "things"}, "").Get(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	want := seen{proto: "HTTP/2.0", cn: "alice", authz: "Bearer t0k3n", ua: "listwatch/" + Version}
	if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

func TestTLSConfigRefusesCAWithInsecure(t *testing.T) {
	cfg := &Config{Host: "https://x", TLS: TLSConfig{Insecure: true, CAData: []byte("pem")}}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Errorf("err = %v", err)
	}
}
