package webhookclient

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// TestKubeconfigFor finds a host's user as kube's
// defaultAuthenticationInfoResolver: by host:port, by "*." suffix with the
// port, then, for port 443, both without it.
func TestKubeconfigFor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	authntest.WriteFile(t, path, `apiVersion: v1
kind: Config
users:
- {name: "a.example.com:8443", user: {token: exact}}
- {name: "*.example.com:8443", user: {token: wildcard-port}}
- {name: "b.ns.svc", user: {token: no-port}}
- {name: "*.svc", user: {token: svc}}
- {name: "*.ns.svc:9443", user: {token: ns-9443}}
`)
	kc, err := LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for hostPort, want := range map[string]string{
		"a.example.com:8443": "exact",
		"c.example.com:8443": "wildcard-port",
		"c.example.com:443":  "",
		"b.ns.svc:443":       "no-port",
		"b.ns.svc:8443":      "",
		"c.ns.svc:443":       "svc",
		"c.ns.svc:9443":      "ns-9443",
		"example.com:8443":   "",
	} {
		if got := kc.For(hostPort).Token; got != want {
			t.Errorf("%s: token %q, want %q", hostPort, got, want)
		}
	}
}

// TestKubeconfigDefaultUser: a host no user is named for gets kube's
// defaults, the user "*", else the current context's user; a host named
// keeps its own.
func TestKubeconfigDefaultUser(t *testing.T) {
	const users = `apiVersion: v1
kind: Config
contexts:
- {name: ctx, context: {user: current, cluster: c}}
current-context: ctx
users:
- {name: "a.example.com:8443", user: {token: exact}}
- {name: current, user: {token: current}}
`
	for _, tc := range []struct {
		name, config string
		want         map[string]string
	}{
		{"star", users + `- {name: "*", user: {token: star}}` + "\n",
			map[string]string{"a.example.com:8443": "exact", "b.example.com:443": "star", "10.0.0.1:9443": "star"}},
		{"current context", users,
			map[string]string{"a.example.com:8443": "exact", "b.example.com:443": "current"}},
		{"none", strings.Replace(users, "current-context: ctx", "", 1),
			map[string]string{"a.example.com:8443": "exact", "b.example.com:443": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubeconfig")
			authntest.WriteFile(t, path, tc.config)
			kc, err := LoadKubeconfig(path)
			if err != nil {
				t.Fatal(err)
			}
			for hostPort, want := range tc.want {
				if got := kc.For(hostPort).Token; got != want {
					t.Errorf("%s: token %q, want %q", hostPort, got, want)
				}
			}
		})
	}
}

// TestCredentials: a webhook host that requires a client certificate gets
// the one the kubeconfig names for it (files relative to the kubeconfig's
// directory), and its bearer token.
func TestCredentials(t *testing.T) {
	ca := authntest.NewCA(t)
	var gotUser, gotAuth string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUser, gotAuth = r.TLS.PeerCertificates[0].Subject.CommonName, r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	certFile, _ := authntest.WritePEM(t, ca.Client(t, "apiserver"))
	dir := filepath.Dir(certFile)
	authntest.WriteFile(t, filepath.Join(dir, "token"), "secret\n")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	authntest.WriteFile(t, kubeconfig, `users:
- name: "`+srv.Listener.Addr().String()+`"
  user: {client-certificate: tls.crt, client-key: tls.key, tokenFile: token}
`)
	kc, err := LoadKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/hook"
	cc := ClientConfig{URL: &url, CABundle: base64.StdEncoding.EncodeToString(ca.PEM)}
	for _, tt := range []struct {
		name  string
		creds *Kubeconfig
		ok    bool
	}{{"with", kc, true}, {"without", nil, false}} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(cc, Options{Credentials: tt.creds})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var out json.RawMessage
			_, err = e.Post(context.Background(), []byte(`{}`), &out)
			if tt.ok && (err != nil || gotUser != "apiserver" || gotAuth != "Bearer secret") {
				t.Fatalf("err %v, user %q, authorization %q", err, gotUser, gotAuth)
			}
			if !tt.ok && err == nil {
				t.Fatal("a host requiring a client certificate answered a call without one")
			}
		})
	}
}
