package client

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// headerServer answers every request with an object, or 401 when refuse
// says so, and keeps the headers of the last request.
type headerServer struct {
	*httptest.Server
	mu     sync.Mutex
	last   http.Header
	refuse func(http.Header) bool // nil: accept every request
}

func newHeaderServer(t *testing.T, refuse func(http.Header) bool) *headerServer {
	s := &headerServer{refuse: refuse}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.last = r.Header.Clone()
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if s.refuse != nil && s.refuse(r.Header) {
			writeUnauthorized(w)
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Thing","metadata":{"name":"x"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func writeUnauthorized(w http.ResponseWriter) {
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":401,"reason":"Unauthorized"}`))
}

func (s *headerServer) header() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// get sends one GET with c and returns its error.
func get(t *testing.T, c *Client) error {
	t.Helper()
	_, err := NewResource[Unstructured](c, GroupVersionResource{Version: "v1", Resource: "things"}, "").Get(t.Context(), "x")
	return err
}

func mustNew(t *testing.T, cfg *Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestImpersonationHeaders: impersonation from a kubeconfig reaches the
// server as client-go sends it, an extra's key percent-encoded where it is
// not a header name's character.
func TestImpersonationHeaders(t *testing.T) {
	isolateKubeconfig(t)
	srv := newHeaderServer(t, nil)
	path := writeFile(t, t.TempDir(), "config", `
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users:
- name: u
  user:
    token: t0k3n
    as: alice
    as-uid: "1234"
    as-groups: [devs, "system:authenticated"]
    as-user-extra:
      scopes.example.com/a b%: [x, "y z"]
`)
	cfg, err := LoadKubeconfig(KubeconfigOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, mustNew(t, cfg)); err != nil {
		t.Fatal(err)
	}
	h := srv.header()
	got := map[string][]string{}
	for k, v := range h {
		if strings.HasPrefix(k, "Impersonate-") || k == "Authorization" {
			got[k] = v
		}
	}
	want := map[string][]string{
		"Authorization":     {"Bearer t0k3n"},
		"Impersonate-User":  {"alice"},
		"Impersonate-Uid":   {"1234"},
		"Impersonate-Group": {"devs", "system:authenticated"},
		// Go's canonical form of the name lower-cases the escape's F
		// (client-go's too); the server reads it either way.
		"Impersonate-Extra-Scopes.example.com%2fa%20b%25": {"x", "y z"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestImpersonationNeedsAUser(t *testing.T) {
	for name, imp := range map[string]ImpersonationConfig{
		"groups": {Groups: []string{"g"}},
		"uid":    {UID: "1"},
		"extra":  {Extra: map[string][]string{"k": {"v"}}},
	} {
		_, err := New(&Config{Host: "https://x", Impersonate: imp})
		if err == nil || !strings.Contains(err.Error(), "without impersonating a user") {
			t.Errorf("%s without a user: %v", name, err)
		}
	}
}

func TestHeaderKeyEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                "plain",
		"example.com/scopes":   "example.com%2Fscopes",
		"100%":                 "100%25",
		"a:b=c\"d":             "a%3Ab%3Dc%22d",
		"ü":                    "%C3%BC",
		"!#$&'*+-.^_`|~09azAZ": "!#$&'*+-.^_`|~09azAZ",
	} {
		if got := headerKeyEscape(in); got != want {
			t.Errorf("headerKeyEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTokenFileRotates: a token file is read again as soon as it changes,
// whether replaced (as kubelet swaps a projected token) or rewritten, and
// once a period has passed even when it looks the same.
func TestTokenFileRotates(t *testing.T) {
	srv := newHeaderServer(t, nil)
	dir := t.TempDir()
	path := writeFile(t, dir, "token", "one\n")
	c := mustNew(t, &Config{Host: srv.URL, BearerTokenFile: path})
	authz := func() string {
		t.Helper()
		if err := get(t, c); err != nil {
			t.Fatal(err)
		}
		return srv.header().Get("Authorization")
	}
	if got := authz(); got != "Bearer one" {
		t.Fatalf("first token: %q", got)
	}
	// Replaced by a rename: a new file.
	tmp := writeFile(t, dir, "token.new", "two")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got := authz(); got != "Bearer two" {
		t.Errorf("after a swap: %q", got)
	}
	// Rewritten in place.
	writeFile(t, dir, "token", "three")
	if got := authz(); got != "Bearer three" {
		t.Errorf("after a rewrite: %q", got)
	}
}

func TestTokenFileRefreshPeriod(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "token", "one")
	tf, err := newTokenFile(path, "")
	if err != nil {
		t.Fatal(err)
	}
	// Changed behind the client's back: same size, time put back.
	mtime := tf.read.ModTime()
	writeFile(t, dir, "token", "two")
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if got := tf.header(); got != "Bearer one" {
		t.Fatalf("within the period: %q, want the token read", got)
	}
	tf.readAt = time.Now().Add(-tokenFileRefresh)
	if got := tf.header(); got != "Bearer two" {
		t.Errorf("after the period: %q", got)
	}
}

// TestTokenFileUnreadable: an unreadable file after a good read keeps the
// last token; before any, the configured token stands in, or New fails.
func TestTokenFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "token", "one")
	tf, err := newTokenFile(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := tf.header(); got != "Bearer one" {
		t.Errorf("file gone: %q, want the last token", got)
	}
	writeFile(t, dir, "token", "  \n")
	if got := tf.header(); got != "Bearer one" {
		t.Errorf("file empty: %q, want the last token", got)
	}
	writeFile(t, dir, "token", strings.Repeat("x", maxTokenFileSize+1))
	if got := tf.header(); got != "Bearer one" {
		t.Errorf("file too large: %q, want the last token", got)
	}
	writeFile(t, dir, "token", "two")
	if got := tf.header(); got != "Bearer two" {
		t.Errorf("file back: %q", got)
	}

	missing := filepath.Join(dir, "missing")
	if _, err := New(&Config{Host: "https://x", BearerTokenFile: missing}); err == nil || !strings.Contains(err.Error(), `failed to read token file "`+missing+`"`) {
		t.Errorf("no file and no token: %v", err)
	}
	tf, err = newTokenFile(missing, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	if got := tf.header(); got != "Bearer fallback" {
		t.Errorf("no file, a token: %q", got)
	}
}

// plugin is a shell script credential plugin: each run appends a line to
// runs, saves its arguments and KUBERNETES_EXEC_INFO, and prints out.
type plugin struct {
	dir  string
	path string
}

func newPlugin(t *testing.T, body string) *plugin {
	t.Helper()
	dir := t.TempDir()
	p := &plugin{dir: dir, path: filepath.Join(dir, "plugin.sh")}
	script := "#!/bin/sh\necho run >> \"$PLUGIN_DIR/runs\"\necho \"$@\" > \"$PLUGIN_DIR/args\"\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$PLUGIN_DIR/info\"\n" + body
	if err := os.WriteFile(p.path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// printing is a plugin printing the content of its file "out".
func printing(t *testing.T, out string) *plugin {
	p := newPlugin(t, "cat \"$PLUGIN_DIR/out\"\n")
	p.setOutput(t, out)
	return p
}

func (p *plugin) setOutput(t *testing.T, out string) { writeFile(t, p.dir, "out", out) }

func (p *plugin) config(apiVersion string) *ExecConfig {
	return &ExecConfig{
		Command: p.path, APIVersion: apiVersion, InteractiveMode: "Never",
		Env: []ExecEnvVar{{Name: "PLUGIN_DIR", Value: p.dir}},
	}
}

func (p *plugin) runs(t *testing.T) int {
	b, err := os.ReadFile(filepath.Join(p.dir, "runs"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func (p *plugin) file(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(p.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tokenOutput(apiVersion, token string, expiry time.Time) string {
	st := map[string]any{"token": token}
	if !expiry.IsZero() {
		st["expirationTimestamp"] = expiry.UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "ExecCredential", "status": st})
	return string(b)
}

// TestExecPluginFromKubeconfig: a kubeconfig's plugin is run with its
// arguments, environment and, asked for, the cluster's information and
// extension; its token is sent, and kept for the next request.
func TestExecPluginFromKubeconfig(t *testing.T) {
	isolateKubeconfig(t)
	srv := newHeaderServer(t, nil)
	for _, version := range []string{execV1, execV1beta1} {
		t.Run(version, func(t *testing.T) {
			p := printing(t, tokenOutput(version, "from-plugin", time.Time{}))
			mode := "interactiveMode: Never"
			if version == execV1beta1 {
				mode = "" // defaults to IfAvailable; the test's stdin is no terminal
			}
			dir := t.TempDir()
			caPEM, _ := testCert(t, "ca")
			writeFile(t, dir, "ca.pem", string(caPEM))
			path := writeFile(t, dir, "config", `
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters:
- name: c
  cluster:
    server: "`+srv.URL+`"
    tls-server-name: api.example
    certificate-authority: ca.pem
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: listwatch}
users:
- name: u
  user:
    exec:
      command: `+p.path+`
      args: [--cluster, one]
      env: [{name: PLUGIN_DIR, value: "`+p.dir+`"}]
      apiVersion: `+version+`
      provideClusterInfo: true
      `+mode+`
`)
			cfg, err := LoadKubeconfig(KubeconfigOptions{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			c := mustNew(t, cfg)
			for range 2 {
				if err := get(t, c); err != nil {
					t.Fatal(err)
				}
			}
			if got := srv.header().Get("Authorization"); got != "Bearer from-plugin" {
				t.Errorf("Authorization %q", got)
			}
			if n := p.runs(t); n != 1 {
				t.Errorf("the plugin ran %d times for two requests, want once", n)
			}
			if got := p.file(t, "args"); got != "--cluster one\n" {
				t.Errorf("args %q", got)
			}
			var info map[string]any
			if err := json.Unmarshal([]byte(p.file(t, "info")), &info); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"apiVersion": version, "kind": "ExecCredential",
				"spec": map[string]any{"interactive": false, "cluster": map[string]any{
					"server": srv.URL, "tls-server-name": "api.example",
					"certificate-authority-data": base64.StdEncoding.EncodeToString(caPEM),
					"config":                     map[string]any{"audience": "listwatch"},
				}},
			}
			if diff := cmp.Diff(want, info); diff != "" {
				t.Errorf("KUBERNETES_EXEC_INFO (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExecPluginRunsAgain: expired credentials, or credentials the server
// refused with 401, are replaced by the plugin's next answer.
func TestExecPluginRunsAgain(t *testing.T) {
	var mu sync.Mutex
	valid := "first"
	srv := newHeaderServer(t, func(h http.Header) bool {
		mu.Lock()
		defer mu.Unlock()
		return h.Get("Authorization") != "Bearer "+valid
	})
	p := printing(t, tokenOutput(execV1, "first", time.Now().Add(time.Hour)))
	c := mustNew(t, &Config{Host: srv.URL, Exec: p.config(execV1)})
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	// The server stops accepting the token: the request fails, as in
	// client-go, and the plugin runs for the next.
	mu.Lock()
	valid = "second"
	mu.Unlock()
	p.setOutput(t, tokenOutput(execV1, "second", time.Now().Add(-time.Second)))
	if err := get(t, c); !IsUnauthorized(err) {
		t.Fatalf("with a refused token: %v, want 401", err)
	}
	if n := p.runs(t); n != 2 {
		t.Errorf("after a 401 the plugin ran %d times in all, want 2", n)
	}
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	// That answer had expired already: every request runs the plugin.
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	if n := p.runs(t); n != 4 {
		t.Errorf("with expired credentials the plugin ran %d times in all, want 4", n)
	}
}

// TestExecPluginRunsOnceForConcurrentRequests: requests that need
// credentials at once wait for one run of the plugin.
func TestExecPluginRunsOnceForConcurrentRequests(t *testing.T) {
	srv := newHeaderServer(t, nil)
	p := newPlugin(t, "sleep 0.2\necho '"+tokenOutput(execV1, "tok", time.Time{})+"'\n")
	c := mustNew(t, &Config{Host: srv.URL, Exec: p.config(execV1)})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- get(t, c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := p.runs(t); n != 1 {
		t.Errorf("the plugin ran %d times, want once", n)
	}
}

// TestExecPluginErrors: what goes wrong is told in client-go's words, and
// the plugin's output, which may hold a secret, is never quoted.
func TestExecPluginErrors(t *testing.T) {
	cred := func(s string) string { return `{"apiVersion":"` + execV1 + `","kind":"ExecCredential"` + s + `}` }
	tests := []struct {
		name, body, want string
	}{
		{"exit code", "echo secret-token; exit 3\n", "exec: executable PLUGIN failed with exit code 3"},
		{"not JSON", "echo secret-token\n", "decoding stdout: not a JSON ExecCredential"},
		{"another version", "echo '" + tokenOutput(execV1beta1, "secret-token", time.Time{}) + "'\n",
			"exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin returned version client.authentication.k8s.io/v1beta1"},
		{"another kind", `echo '{"apiVersion":"` + execV1 + `","kind":"Secret"}'` + "\n", `decoding stdout: kind "Secret", want ExecCredential`},
		{"no status", "echo '" + cred("") + "'\n", "exec plugin didn't return a status field"},
		{"empty status", "echo '" + cred(`,"status":{}`) + "'\n", "exec plugin didn't return a token or cert/key pair"},
		{"a key alone", "echo '" + cred(`,"status":{"clientKeyData":"k"}`) + "'\n", "exec plugin returned only certificate or key, not both"},
		{"a bad pair", "echo '" + cred(`,"status":{"clientKeyData":"k","clientCertificateData":"c"}`) + "'\n", "failed parsing client key/certificate"},
		{"too much output", "head -c 2000000 /dev/zero\n", "exec: executable PLUGIN wrote more than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, tt.body)
			a, err := newExecAuth(&Config{Host: "http://127.0.0.1:1", Exec: p.config(execV1)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.get(t.Context(), nil)
			want := strings.ReplaceAll(tt.want, "PLUGIN", p.path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want %q", err, want)
			}
			if err != nil && strings.Contains(err.Error(), "secret-token") {
				t.Errorf("the error quotes the plugin's output: %v", err)
			}
		})
	}
}

func TestExecPluginNotFound(t *testing.T) {
	a, err := newExecAuth(&Config{Host: "https://x", Exec: &ExecConfig{
		Command: "listwatch-no-such-plugin", APIVersion: execV1, InteractiveMode: "Never",
		InstallHint: "brew install it\x1b[31m",
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.get(t.Context(), nil)
	want := "exec: executable listwatch-no-such-plugin not found" + installHintHelp + "\n\nbrew install itU+001B[31m"
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// The hint is not repeated in every error.
	if _, err = a.get(t.Context(), nil); err == nil || err.Error() != "exec: executable listwatch-no-such-plugin not found" {
		t.Errorf("second error %q", err)
	}
}

// TestExecPluginTimeout: a plugin that does not finish is killed, and a
// request waiting for it gives up with its own context.
func TestExecPluginTimeout(t *testing.T) {
	p := newPlugin(t, "exec sleep 60\n")
	a, err := newExecAuth(&Config{Host: "https://x", Exec: p.config(execV1)})
	if err != nil {
		t.Fatal(err)
	}
	a.timeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.get(ctx, nil); err != context.Canceled {
		t.Errorf("a canceled request: %v", err)
	}
	want := "exec: executable " + p.path + " did not finish in 100ms"
	if _, err := a.get(t.Context(), nil); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestExecInteractiveMode(t *testing.T) {
	tests := []struct {
		mode              string
		terminal, unavail bool
		want              bool
		err               string
	}{
		{mode: "Never", terminal: true, want: false},
		{mode: "IfAvailable", terminal: true, want: true},
		{mode: "IfAvailable", terminal: false, want: false},
		{mode: "IfAvailable", terminal: true, unavail: true, want: false},
		{mode: "Always", terminal: true, want: true},
		{mode: "Always", terminal: false, err: "standard input is not a terminal"},
		{mode: "Always", terminal: true, unavail: true, err: "standard input is unavailable"},
	}
	for _, tt := range tests {
		a := &execAuth{cfg: ExecConfig{InteractiveMode: tt.mode, StdinUnavailable: tt.unavail}, stdinIsTerminal: func() bool { return tt.terminal }}
		got, err := a.interactive()
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%+v: error %v, want %q", tt, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: %v, %v", tt, got, err)
		}
	}
}

func TestExecConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  ExecConfig
		want string
	}{
		{"no command", ExecConfig{APIVersion: execV1, InteractiveMode: "Never"}, "command must be specified"},
		{"no version", ExecConfig{Command: "x", InteractiveMode: "Never"}, `exec plugin: invalid apiVersion ""`},
		{"v1alpha1", ExecConfig{Command: "x", APIVersion: "client.authentication.k8s.io/v1alpha1", InteractiveMode: "Never"}, "invalid apiVersion"},
		{"v1 without mode", ExecConfig{Command: "x", APIVersion: execV1}, "interactiveMode must be specified"},
		{"a bad mode", ExecConfig{Command: "x", APIVersion: execV1, InteractiveMode: "Sometimes"}, `invalid interactiveMode: "Sometimes"`},
		{"an unnamed variable", ExecConfig{Command: "x", APIVersion: execV1, InteractiveMode: "Never", Env: []ExecEnvVar{{Value: "v"}}}, "env variable name must be specified"},
	}
	for _, tt := range tests {
		_, err := New(&Config{Host: "https://x", Exec: &tt.cfg})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestExecPluginNotRunWithOtherCredentials: a token, a password or a
// client certificate wins over the plugin, as in client-go.
func TestExecPluginNotRunWithOtherCredentials(t *testing.T) {
	srv := newHeaderServer(t, nil)
	p := printing(t, tokenOutput(execV1, "from-plugin", time.Time{}))
	c := mustNew(t, &Config{Host: srv.URL, BearerToken: "static", Exec: p.config(execV1)})
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	if got := srv.header().Get("Authorization"); got != "Bearer static" || p.runs(t) != 0 {
		t.Errorf("Authorization %q, plugin runs %d", got, p.runs(t))
	}
}

func certOutput(t *testing.T, cn string) string {
	certPEM, keyPEM := testCert(t, cn)
	b, err := json.Marshal(map[string]any{"apiVersion": execV1, "kind": "ExecCredential", "status": map[string]any{
		"clientCertificateData": string(certPEM), "clientKeyData": string(keyPEM),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecPluginClientCertificate: the plugin's certificate authenticates
// the TLS connection; when the server refuses it and the plugin gives
// another, the connections made with the old one are closed, so that the
// next request presents the new one.
func TestExecPluginClientCertificate(t *testing.T) {
	var mu sync.Mutex
	valid := "alice"
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := r.TLS.PeerCertificates[0].Subject.CommonName == valid
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			writeUnauthorized(w)
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Thing","metadata":{"name":"x"}}`))
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	p := printing(t, certOutput(t, "alice"))
	c := mustNew(t, &Config{Host: srv.URL, TLS: TLSConfig{CAData: caPEM}, Exec: p.config(execV1)})
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	valid = "bob"
	mu.Unlock()
	p.setOutput(t, certOutput(t, "bob"))
	if err := get(t, c); !IsUnauthorized(err) {
		t.Fatalf("with a refused certificate: %v, want 401", err)
	}
	if err := get(t, c); err != nil {
		t.Errorf("with the plugin's new certificate: %v", err)
	}
	if n := p.runs(t); n != 2 {
		t.Errorf("the plugin ran %d times, want 2", n)
	}
}

// BenchmarkTokenFileHeader is the cost a token file adds to a request
// while it does not change: a stat.
func BenchmarkTokenFileHeader(b *testing.B) {
	path := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(path, []byte("token"), 0o600); err != nil {
		b.Fatal(err)
	}
	tf, err := newTokenFile(path, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if tf.header() != "Bearer token" {
			b.Fatal("wrong token")
		}
	}
}

// TestExecPluginSharedByClients: clients made from the same configuration
// share the plugin's credentials, as client-go's do; another cluster's
// information makes another authenticator.
func TestExecPluginSharedByClients(t *testing.T) {
	srv := newHeaderServer(t, nil)
	p := printing(t, tokenOutput(execV1, "tok", time.Time{}))
	cfg := func() *Config {
		e := p.config(execV1)
		e.ProvideClusterInfo = true
		return &Config{Host: srv.URL, Exec: e}
	}
	for range 3 {
		if err := get(t, mustNew(t, cfg())); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.runs(t); n != 1 {
		t.Errorf("three clients of one configuration ran the plugin %d times, want once", n)
	}
	other := cfg()
	other.TLS.ServerName = "other.example"
	if err := get(t, mustNew(t, other)); err != nil {
		t.Fatal(err)
	}
	if n := p.runs(t); n != 2 {
		t.Errorf("a client of another cluster: %d runs in all, want 2", n)
	}
}
