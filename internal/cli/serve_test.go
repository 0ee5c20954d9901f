package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/storage/memory"
)

func TestCheckExposure(t *testing.T) {
	const refused = "refusing to serve"
	tests := []struct {
		name string
		o    serveOptions
		want string // a part of the error; empty for none
	}{
		{"loopback", serveOptions{listen: "127.0.0.1:8080"}, ""},
		{"localhost", serveOptions{listen: "localhost:8080"}, ""},
		{"IPv6 loopback", serveOptions{listen: "[::1]:8080"}, ""},
		{"every interface: secure mode", serveOptions{listen: ":8080"}, ""},
		{"an address: secure mode", serveOptions{listen: "0.0.0.0:8080"}, ""},
		{"TLS without authentication", serveOptions{listen: "0.0.0.0:8080", tlsCert: "c", tlsKey: "k"}, "add --token-auth-file or --client-ca-file, or leave out the TLS flags"},
		{"TLS without authentication on loopback, secure", serveOptions{listen: "127.0.0.1:8080", tlsCert: "c", tlsKey: "k", secure: true}, refused},
		{"tokens without TLS: secure mode", serveOptions{listen: "0.0.0.0:8080", tokenFile: "t"}, ""},
		{"TLS and tokens", serveOptions{listen: "0.0.0.0:8080", tlsCert: "c", tlsKey: "k", tokenFile: "t"}, ""},
		{"TLS and client certificates", serveOptions{listen: "10.0.0.1:8080", tlsCert: "c", tlsKey: "k", clientCA: "ca"}, ""},
		{"the risk accepted", serveOptions{listen: "0.0.0.0:8080", insecureAnon: true}, ""},
		{"TLS, the risk accepted", serveOptions{listen: "0.0.0.0:8080", tlsCert: "c", tlsKey: "k", insecureAnon: true}, ""},
		{"secure and anonymous", serveOptions{listen: "127.0.0.1:8080", secure: true, insecureAnon: true}, "contradict"},
		{"a certificate without its key", serveOptions{listen: "127.0.0.1:8080", tlsCert: "c"}, "--tls-cert-file and --tls-private-key-file must be given together"},
		{"client certificates without TLS", serveOptions{listen: "127.0.0.1:8080", clientCA: "ca"}, "--client-ca-file needs TLS"},
		{"client certificates without TLS, secure", serveOptions{listen: "127.0.0.1:8080", clientCA: "ca", secure: true}, "--client-ca-file needs TLS"},
		{"a bad address", serveOptions{listen: "8080"}, "--listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.checkExposure()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckTimeouts(t *testing.T) {
	ok := serveOptions{readHeaderTimeout: time.Nanosecond, idleTimeout: time.Nanosecond, requestBodyTimeout: time.Nanosecond, eventTTL: time.Nanosecond, namespaceGrace: time.Nanosecond,
		election: leader.Config{LeaseDuration: time.Nanosecond, RenewDeadline: time.Nanosecond, RetryPeriod: time.Nanosecond}}
	if err := ok.checkTimeouts(); err != nil {
		t.Errorf("1ns timeouts: %v", err)
	}
	for flag, field := range map[string]func(*serveOptions) *time.Duration{
		"--read-header-timeout":             func(o *serveOptions) *time.Duration { return &o.readHeaderTimeout },
		"--idle-timeout":                    func(o *serveOptions) *time.Duration { return &o.idleTimeout },
		"--request-body-timeout":            func(o *serveOptions) *time.Duration { return &o.requestBodyTimeout },
		"--event-ttl":                       func(o *serveOptions) *time.Duration { return &o.eventTTL },
		"--namespace-deletion-grace-period": func(o *serveOptions) *time.Duration { return &o.namespaceGrace },
		"--leader-elect-lease-duration":     func(o *serveOptions) *time.Duration { return &o.election.LeaseDuration },
		"--leader-elect-renew-deadline":     func(o *serveOptions) *time.Duration { return &o.election.RenewDeadline },
		"--leader-elect-retry-period":       func(o *serveOptions) *time.Duration { return &o.election.RetryPeriod },
	} {
		for _, d := range []time.Duration{0, -time.Second} {
			o := ok
			*field(&o) = d
			if err := o.checkTimeouts(); err == nil || err.Error() != flag+" "+d.String()+": must be positive" {
				t.Errorf("%s %v: %v", flag, d, err)
			}
		}
	}
}

// serving captures the "listwatch serving" log line of serve.
type serving struct{ url chan string }

func (s serving) Enabled(context.Context, slog.Level) bool { return true }
func (s serving) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s serving) WithGroup(string) slog.Handler            { return s }

func (s serving) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if r.Message == "listwatch serving" && a.Key == "url" {
			s.url <- a.Value.String()
		}
		return true
	})
	return nil
}

// startServe runs `listwatch serve args...` until the test ends and returns
// the URL it serves.
func startServe(t *testing.T, args ...string) string {
	url, stop := runServe(t, args...)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return url
}

// runServe runs `listwatch serve args...` and returns the URL it serves and
// stop, which cancels its context as SIGTERM does and returns what serve
// returned; the test's end stops it too. It replaces the default logger
// meanwhile.
func runServe(t *testing.T, args ...string) (url string, stop func() error) {
	log := serving{url: make(chan string, 1)}
	prev := slog.Default()
	// slog.SetDefault also points the log package at the new handler, which
	// setting the previous logger back does not undo: stop restores it.
	prevOut, prevFlags := stdlog.Writer(), stdlog.Flags()
	slog.SetDefault(slog.New(log))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	root := newRoot()
	root.SetArgs(append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--unsafe-no-fsync"}, args...))
	go func() { errc <- root.ExecuteContext(ctx) }()
	stop = sync.OnceValue(func() error {
		cancel()
		err := <-errc
		slog.SetDefault(prev)
		stdlog.SetOutput(prevOut)
		stdlog.SetFlags(prevFlags)
		return err
	})
	t.Cleanup(func() { _ = stop() })
	select {
	case url := <-log.url:
		return url, stop
	case err := <-errc:
		errc <- err
		t.Fatalf("serve ended before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return "", nil
}

func TestServeWithTLSAndTokens(t *testing.T) {
	ca := authntest.NewCA(t)
	certFile, keyFile := authntest.WritePEM(t, ca.Server(t))
	dir := t.TempDir()
	tokenFile, caFile := filepath.Join(dir, "tokens.csv"), filepath.Join(dir, "ca.crt")
	authntest.WriteFile(t, tokenFile, "e2e-token,erin,1,admins\n")
	authntest.WriteFile(t, caFile, string(ca.PEM))
	// Authentication alone: every user it accepts may do anything.
	url := startServe(t, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--token-auth-file", tokenFile, "--client-ca-file", caFile, "--authorization-mode", "AlwaysAllow")
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("serving %s, want https on 127.0.0.1", url)
	}
	client := func(certs ...tls.Certificate) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	anonymous, frank := client(), client(ca.Client(t, "frank"))
	const cms = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, method, path, token, body string
		client                          *http.Client
		code                            int
	}{
		{"create with the token", "POST", cms, "e2e-token", `{"metadata":{"name":"secured"}}`, anonymous, http.StatusCreated},
		{"read with the token", "GET", cms + "/secured", "e2e-token", "", anonymous, http.StatusOK},
		{"read with a client certificate", "GET", cms + "/secured", "", "", frank, http.StatusOK},
		{"no credentials", "GET", cms, "", "", anonymous, http.StatusUnauthorized},
		{"a wrong token", "GET", cms, "wrong", "", anonymous, http.StatusUnauthorized},
		{"readiness needs none", "GET", "/readyz", "", "", anonymous, http.StatusOK},
	}
	for _, tt := range tests {
		req, err := http.NewRequestWithContext(t.Context(), tt.method, url+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := tt.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.name, resp.StatusCode, b, tt.code)
		}
	}
}

func TestServeRejectsABadTokenFile(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	authntest.WriteFile(t, tokenFile, "good,alice,1\nbad,bob\n")
	root := newRoot()
	root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--token-auth-file", tokenFile})
	err := root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), tokenFile+": line 2") {
		t.Fatalf("got %v, want an error naming the file and line 2", err)
	}
}

func TestServeRejectsABadTLSSAN(t *testing.T) {
	root := newRoot()
	root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--secure", "--tls-san", "https://api.example"})
	err := root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), `--tls-san: "https://api.example" is neither an IP address nor a DNS name`) {
		t.Fatalf("got %v, want an error naming the flag and the name", err)
	}
}

// TestServeHTTP2MaxStreams: --http2-max-streams-per-connection is what
// an HTTP/2 connection's SETTINGS advertise (h2 enforces it), 0 or unset
// h2's default, kube-apiserver's.
func TestServeHTTP2MaxStreams(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want uint32
	}{
		{nil, h2.DefaultMaxConcurrentStreams},
		{[]string{"--http2-max-streams-per-connection", "0"}, h2.DefaultMaxConcurrentStreams},
		{[]string{"--http2-max-streams-per-connection", "7"}, 7},
	} {
		t.Run(strings.Join(tc.args, "="), func(t *testing.T) {
			url := startServe(t, tc.args...)
			nc, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			fr := http2.NewFramer(nc, nc)
			if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
				t.Fatal(err)
			}
			if err := fr.WriteSettings(); err != nil {
				t.Fatal(err)
			}
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			sf, ok := f.(*http2.SettingsFrame)
			if !ok {
				t.Fatalf("first frame %v, want SETTINGS", f)
			}
			if got, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || got != tc.want {
				t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (sent: %v), want %d", got, ok, tc.want)
			}
		})
	}
}

// TestSecureModeChosen: secure mode makes its own certificates when asked
// (--secure) or when a non-loopback address is served, unless TLS flags
// are given or anonymity accepted; the README's loopback mode is the
// default.
func TestSecureModeChosen(t *testing.T) {
	tests := []struct {
		name string
		o    serveOptions
		want bool
	}{
		{"loopback", serveOptions{listen: "127.0.0.1:8080"}, false},
		{"loopback with tokens", serveOptions{listen: "127.0.0.1:8080", tokenFile: "t"}, false},
		{"loopback, secure", serveOptions{listen: "127.0.0.1:8080", secure: true}, true},
		{"every interface", serveOptions{listen: "0.0.0.0:6443"}, true},
		{"every interface with tokens", serveOptions{listen: ":6443", tokenFile: "t"}, true},
		{"TLS flags", serveOptions{listen: "0.0.0.0:6443", tlsCert: "c", tlsKey: "k", tokenFile: "t"}, false},
		{"TLS flags, secure", serveOptions{listen: "127.0.0.1:6443", secure: true, tlsCert: "c", tlsKey: "k", tokenFile: "t"}, false},
		{"anonymity accepted", serveOptions{listen: "0.0.0.0:6443", insecureAnon: true}, false},
	}
	for _, tt := range tests {
		if got := tt.o.bootstrapped(); got != tt.want {
			t.Errorf("%s: bootstrapped %v, want %v", tt.name, got, tt.want)
		}
	}
}

// adminClient is an HTTP client with the TLS settings of a kubeconfig:
// its CA, and its client certificate unless anonymous.
func adminClient(t *testing.T, kubeconfig string, anonymous bool) (*http.Client, string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cfg.TLS.CAData) {
		t.Fatal("no CA in the kubeconfig")
	}
	tc := &tls.Config{RootCAs: roots}
	if !anonymous {
		cert, err := tls.X509KeyPair(cfg.TLS.CertData, cfg.TLS.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, cfg.Host
}

func status(t *testing.T, hc *http.Client, url string) int {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeSecureMode: `serve --secure` on loopback serves HTTPS with a
// certificate of the CA in the admin kubeconfig, whose client certificate
// authenticates, a request without one is refused, one with a forged
// token too and counted; after a restart (another port) the first
// kubeconfig's CA and certificate still work.
func TestServeSecureMode(t *testing.T) {
	dataDir := t.TempDir()
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	url, stop := runServe(t, "--secure", "--data-dir", dataDir, "--tls-san", "api.example", "--tls-san", "192.0.2.7")
	admin, server := adminClient(t, kubeconfig, false)
	anonymous, _ := adminClient(t, kubeconfig, true)
	if server != url || !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("serving %s, the kubeconfig says %s: want the same https URL on 127.0.0.1", url, server)
	}
	if code := status(t, admin, url+"/api/v1/namespaces"); code != http.StatusOK {
		t.Errorf("the admin lists namespaces: %d, want 200", code)
	}
	serving, err := tls.LoadX509KeyPair(filepath.Join(dataDir, "pki", "serving.crt"), filepath.Join(dataDir, "pki", "serving.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, san := range []string{"api.example", "192.0.2.7"} {
		if err := serving.Leaf.VerifyHostname(san); err != nil {
			t.Errorf("--tls-san %s: %v", san, err)
		}
	}
	// Without credentials, system:anonymous, whom RBAC refuses; with a
	// forged token, 401, counted as an error (kube's labels).
	if code := status(t, anonymous, url+"/api/v1/namespaces"); code != http.StatusForbidden {
		t.Errorf("no client certificate: %d, want 403", code)
	}
	req, err := http.NewRequest(http.MethodGet, url+"/api/v1/namespaces", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer forged")
	if resp, err := anonymous.Do(req); err != nil || resp.Body.Close() != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged token: %v %v, want 401", resp, err)
	}
	series := scrapeSeries(t, admin, url)
	for _, s := range []string{`authentication_attempts{result="success"}`, `authentication_attempts{result="error"}`, `authenticated_user_requests{username="other"}`} {
		if series[s] < 1 {
			t.Errorf("%s is %v, want at least 1", s, series[s])
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	url, _ = runServe(t, "--secure", "--data-dir", dataDir)
	if code := status(t, admin, url+"/api/v1/namespaces"); code != http.StatusOK {
		t.Errorf("after a restart, the first kubeconfig's admin lists namespaces: %d, want 200", code)
	}
}

// TestAuthorizationModes: RBAC by default with authentication, AlwaysAllow
// without (the loopback anonymous mode); anonymous requests with
// authentication unless --anonymous-auth=false or AlwaysAllow alone, as
// kube-apiserver.
func TestAuthorizationModes(t *testing.T) {
	tests := []struct {
		name          string
		modes         []string
		anonymousAuth bool
		authenticated bool
		want          []string
		anonymous     bool
		err           string
	}{
		{"default with authentication", nil, true, true, []string{"RBAC"}, true, ""},
		{"default without", nil, true, false, []string{"AlwaysAllow"}, false, ""},
		{"anonymous off", nil, false, true, []string{"RBAC"}, false, ""},
		{"AlwaysAllow alone", []string{"AlwaysAllow"}, true, true, []string{"AlwaysAllow"}, false, ""},
		{"both", []string{"RBAC", "AlwaysAllow"}, true, true, []string{"RBAC", "AlwaysAllow"}, true, ""},
		{"unknown", []string{"ABAC"}, true, true, nil, false, `unknown mode "ABAC"`},
		{"twice", []string{"RBAC", "RBAC"}, true, true, nil, false, `"RBAC" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := serveOptions{authzModes: tt.modes, anonymousAuth: tt.anonymousAuth}
			a, err := o.authorization(t.Context(), memory.New(), metrics.New(), tt.authenticated)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error containing %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			if !slices.Equal(a.modes, tt.want) || a.anonymous != tt.anonymous || (a.hook != nil) != slices.Contains(tt.want, "RBAC") || a.rules == nil {
				t.Fatalf("modes %v anonymous %v hook %v, want %v %v", a.modes, a.anonymous, a.hook != nil, tt.want, tt.anonymous)
			}
			// Rules as kube's union lists them: AlwaysAllow's every verb
			// on everything; RBAC's none for a user bound to nothing.
			rules, err := a.rules.RulesFor(t.Context(), &authn.User{Name: "alice"}, "default")
			var want []authz.Rule
			if slices.Contains(tt.want, "AlwaysAllow") {
				want, _ = authz.AlwaysAllow{}.RulesFor(t.Context(), nil, "")
			}
			if err != nil || !cmp.Equal(want, rules) {
				t.Errorf("rules: %v (-want +got)\n%s", err, cmp.Diff(want, rules))
			}
		})
	}
}
