package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/term"
)

// ExecConfig is a credential plugin (kubeconfig users[].user.exec, as
// client-go's plugin/pkg/client/auth/exec runs it): a command that prints
// an ExecCredential of client.authentication.k8s.io/v1 or v1beta1 with a
// token, a client certificate, or both, and when they expire. The client
// runs it before its first request, keeps its answer until the expiry, and
// runs it again after the server answers 401 to it.
type ExecConfig struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Env is added to the client's environment.
	Env []ExecEnvVar `json:"env"`
	// APIVersion is the ExecCredential version the plugin reads and writes.
	APIVersion string `json:"apiVersion"`
	// InstallHint is told the user when the command is not found.
	InstallHint string `json:"installHint"`
	// ProvideClusterInfo passes the server's URL, TLS settings and
	// ClusterConfig to the plugin in KUBERNETES_EXEC_INFO.
	ProvideClusterInfo bool `json:"provideClusterInfo"`
	// InteractiveMode is Never, IfAvailable or Always: whether the plugin
	// gets the client's standard input, which it does when that is a
	// terminal. Required for v1; v1beta1 defaults to IfAvailable.
	InteractiveMode string `json:"interactiveMode"`
	// ClusterConfig is the cluster's "client.authentication.k8s.io/exec"
	// extension, given to the plugin as spec.cluster.config.
	ClusterConfig json.RawMessage `json:"-"`
	// StdinUnavailable says the program reads its standard input itself
	// (kubectl apply -f -): the plugin never gets it.
	StdinUnavailable bool `json:"-"`
}

// ExecEnvVar is an environment variable of a credential plugin.
type ExecEnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// The ExecCredential versions a plugin may speak.
const (
	execV1      = "client.authentication.k8s.io/v1"
	execV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// Bounds of a plugin run: client-go sets none, so a hung plugin hangs
// every request. A plugin that logs the user in through a browser waits
// for them (kubelogin gives up after 3 minutes).
const (
	execTimeout = 5 * time.Minute
	// execMaxOutput bounds what is read of the plugin's standard output:
	// a token and a certificate chain take a few KiB.
	execMaxOutput = 1 << 20
	// execWaitDelay is how long the client waits for the plugin's output
	// to close once the plugin has exited or been killed (a child of its
	// own may hold it open).
	execWaitDelay = time.Second
	// execHintEvery spaces out the install hint, long and the same each
	// time, in the errors of a plugin that is not installed.
	execHintEvery = time.Hour
)

// execInfoEnv is the variable the plugin reads its ExecCredential from.
const execInfoEnv = "KUBERNETES_EXEC_INFO"

const installHintHelp = `

It looks like you are trying to use a client-go credential plugin that is not installed.

To learn more about this feature, consult the documentation available at:
      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins`

// validate checks e as clientcmd does, and defaults v1beta1's
// interactiveMode.
func (e *ExecConfig) validate() error {
	if e.Command == "" {
		return errors.New("command must be specified to use exec authentication plugin")
	}
	if e.APIVersion != execV1 && e.APIVersion != execV1beta1 {
		return fmt.Errorf("exec plugin: invalid apiVersion %q", e.APIVersion)
	}
	for _, v := range e.Env {
		if v.Name == "" {
			return errors.New("env variable name must be specified to use exec authentication plugin")
		}
	}
	if e.InteractiveMode == "" && e.APIVersion == execV1beta1 {
		e.InteractiveMode = "IfAvailable"
	}
	switch e.InteractiveMode {
	case "Never", "IfAvailable", "Always":
		return nil
	case "":
		return errors.New("interactiveMode must be specified to use exec authentication plugin")
	}
	return fmt.Errorf("invalid interactiveMode: %q", e.InteractiveMode)
}

// execCredential is the plugin's input and output.
type execCredential struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Spec       execSpec    `json:"spec"`
	Status     *execStatus `json:"status,omitempty"`
}

type execSpec struct {
	Cluster     *execCluster `json:"cluster,omitempty"`
	Interactive bool         `json:"interactive"`
}

type execCluster struct {
	Server                   string          `json:"server"`
	TLSServerName            string          `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool            `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte          `json:"certificate-authority-data,omitempty"`
	Config                   json.RawMessage `json:"config,omitempty"`
}

type execStatus struct {
	ExpirationTimestamp   *time.Time `json:"expirationTimestamp"`
	Token                 string     `json:"token"`
	ClientCertificateData string     `json:"clientCertificateData"`
	ClientKeyData         string     `json:"clientKeyData"`
}

// execCreds is what one run of the plugin gave.
type execCreds struct {
	token  string
	cert   *tls.Certificate // nil when the plugin gave none
	expiry time.Time        // zero: until the server refuses them
}

// execRun is a run of the plugin under way, which every request needing
// credentials meanwhile waits for.
type execRun struct {
	done  chan struct{} // closed when creds and err are set
	creds *execCreds
	err   error
}

// execAuth runs a plugin and keeps its credentials.
type execAuth struct {
	cfg     ExecConfig
	cluster *execCluster // nil unless ProvideClusterInfo
	timeout time.Duration
	// stdinIsTerminal is term.IsTerminal on standard input (tests replace it).
	stdinIsTerminal func() bool
	// conns are the client's connections, closed when the certificate
	// changes, so that none goes on with the one the server refused.
	conns connTracker
	// rotations counts the certificate changes that closed conns.
	rotations atomic.Uint64

	mu       sync.Mutex
	creds    *execCreds // guarded by mu: the last run's, nil before
	run      *execRun   // guarded by mu: the run under way, nil when none
	hintedAt time.Time  // guarded by mu: when the install hint was last told
}

// execAuths are the plugins' authenticators by what they run and are told,
// shared by every client made from the same configuration, as client-go
// shares them: a program that makes its clients again and again runs its
// plugin once, not once per client.
var execAuths = struct {
	mu sync.Mutex
	m  map[string]*execAuth // guarded by mu
}{m: make(map[string]*execAuth)}

// sharedExecAuth returns the authenticator of cfg's plugin.
func sharedExecAuth(cfg *Config) (*execAuth, error) {
	a, err := newExecAuth(cfg)
	if err != nil {
		return nil, err
	}
	key, err := json.Marshal(struct {
		Exec             ExecConfig
		ClusterConfig    json.RawMessage
		StdinUnavailable bool
		Cluster          *execCluster
	}{a.cfg, a.cfg.ClusterConfig, a.cfg.StdinUnavailable, a.cluster})
	if err != nil {
		return nil, fmt.Errorf("exec plugin: %w", err)
	}
	execAuths.mu.Lock()
	defer execAuths.mu.Unlock()
	if shared, ok := execAuths.m[string(key)]; ok {
		return shared, nil
	}
	execAuths.m[string(key)] = a
	return a, nil
}

func newExecAuth(cfg *Config) (*execAuth, error) {
	e := *cfg.Exec
	e.InstallHint = escapeControls(e.InstallHint)
	if err := e.validate(); err != nil {
		return nil, err
	}
	a := &execAuth{cfg: e, timeout: execTimeout, stdinIsTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) }}
	if e.ProvideClusterInfo {
		ca, err := readData(cfg.TLS.CAData, cfg.TLS.CAFile, "certificate authority")
		if err != nil {
			return nil, fmt.Errorf("failed to load CA bundle for execProvider: %w", err)
		}
		a.cluster = &execCluster{
			Server: cfg.Host, TLSServerName: cfg.TLS.ServerName, InsecureSkipTLSVerify: cfg.TLS.Insecure,
			CertificateAuthorityData: ca, Config: e.ClusterConfig,
		}
	}
	return a, nil
}

// printable are the characters of an install hint written as they are.
var printable = []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z}

// escapeControls writes the control and format characters of s but white
// space as U+XXXX, as clientcmd does to the install hint, so that a
// kubeconfig cannot send escape sequences to the user's terminal.
func escapeControls(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsOneOf(printable, r) || '\t' <= r && r <= '\r' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "%U", r)
		}
	}
	return b.String()
}

// get returns the credentials, running the plugin when there are none, they
// have expired, or they are stale (refused by the server) and still current.
func (a *execAuth) get(ctx context.Context, stale *execCreds) (*execCreds, error) {
	a.mu.Lock()
	if c := a.creds; c != nil && c != stale && (c.expiry.IsZero() || time.Now().Before(c.expiry)) {
		a.mu.Unlock()
		return c, nil
	}
	r := a.run
	if r == nil {
		// The run is not the caller's: a request that gives up must not
		// end it for the others waiting. It ends within a.timeout.
		r = &execRun{done: make(chan struct{})}
		a.run = r
		go a.execute(r)
	}
	a.mu.Unlock()
	select {
	case <-r.done:
		return r.creds, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// execute runs the plugin for r and keeps what it gives.
func (a *execAuth) execute(r *execRun) {
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	creds, err := a.runPlugin(ctx)
	a.mu.Lock()
	a.run = nil
	r.creds, r.err = creds, err
	rotated := false
	if err == nil {
		old := a.creds
		a.creds = creds
		rotated = old != nil && !sameCert(old.cert, creds.cert)
	}
	a.mu.Unlock()
	if rotated {
		a.rotations.Add(1)
		a.conns.closeAll()
	}
	close(r.done)
}

func sameCert(a, b *tls.Certificate) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Certificate[0], b.Certificate[0])
}

// runPlugin runs the command and reads its ExecCredential.
func (a *execAuth) runPlugin(ctx context.Context) (*execCreds, error) {
	interactive, err := a.interactive()
	if err != nil {
		return nil, fmt.Errorf("exec plugin cannot support interactive mode: %w", err)
	}
	info, err := json.Marshal(execCredential{
		APIVersion: a.cfg.APIVersion, Kind: "ExecCredential",
		Spec: execSpec{Cluster: a.cluster, Interactive: interactive},
	})
	if err != nil {
		return nil, fmt.Errorf("encode ExecCredentials: %w", err)
	}
	cmd := exec.CommandContext(ctx, a.cfg.Command, a.cfg.Args...)
	cmd.Env = os.Environ()
	for _, v := range a.cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Env = append(cmd.Env, execInfoEnv+"="+string(info))
	out := &boundedBuffer{max: execMaxOutput}
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = out, os.Stderr, execWaitDelay
	if interactive {
		cmd.Stdin = os.Stdin
	}
	if err := cmd.Run(); err != nil { // a write past the bound fails Run too
		return nil, a.runError(ctx, err, out)
	}
	return a.parse(out.buf.Bytes())
}

// interactive says whether the plugin gets standard input, as client-go
// decides it.
func (a *execAuth) interactive() (bool, error) {
	switch a.cfg.InteractiveMode {
	case "IfAvailable":
		return !a.cfg.StdinUnavailable && a.stdinIsTerminal(), nil
	case "Always":
		if !a.stdinIsTerminal() {
			return false, errors.New("standard input is not a terminal")
		}
		if a.cfg.StdinUnavailable {
			return false, errors.New("standard input is unavailable")
		}
		return true, nil
	}
	return false, nil
}

// runError explains why the plugin did not give credentials, in
// client-go's words where it has them.
func (a *execAuth) runError(ctx context.Context, err error, out *boundedBuffer) error {
	var notFound *exec.Error
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("exec: executable %s did not finish in %v", a.cfg.Command, a.timeout)
	case out.over:
		return fmt.Errorf("exec: executable %s wrote more than %d bytes", a.cfg.Command, execMaxOutput)
	case errors.As(err, &notFound):
		msg := fmt.Sprintf("exec: executable %s not found", a.cfg.Command)
		a.mu.Lock()
		if time.Since(a.hintedAt) >= execHintEvery {
			a.hintedAt = time.Now()
			msg += installHintHelp
			if a.cfg.InstallHint != "" {
				msg += "\n\n" + a.cfg.InstallHint
			}
		}
		a.mu.Unlock()
		return errors.New(msg)
	case errors.As(err, &exit):
		return fmt.Errorf("exec: executable %s failed with exit code %d", a.cfg.Command, exit.ExitCode())
	}
	return fmt.Errorf("exec: %w", err)
}

// parse reads the plugin's ExecCredential. Its text is never quoted in an
// error: it holds the secret.
func (a *execAuth) parse(out []byte) (*execCreds, error) {
	var cred execCredential
	if err := json.Unmarshal(out, &cred); err != nil {
		return nil, errors.New("decoding stdout: not a JSON ExecCredential")
	}
	if cred.Kind != "ExecCredential" {
		return nil, fmt.Errorf("decoding stdout: kind %q, want ExecCredential", cred.Kind)
	}
	if cred.APIVersion != a.cfg.APIVersion {
		return nil, fmt.Errorf("exec plugin is configured to use API version %s, plugin returned version %s", a.cfg.APIVersion, cred.APIVersion)
	}
	st := cred.Status
	switch {
	case st == nil:
		return nil, errors.New("exec plugin didn't return a status field")
	case st.Token == "" && st.ClientCertificateData == "" && st.ClientKeyData == "":
		return nil, errors.New("exec plugin didn't return a token or cert/key pair")
	case (st.ClientCertificateData == "") != (st.ClientKeyData == ""):
		return nil, errors.New("exec plugin returned only certificate or key, not both")
	}
	creds := &execCreds{token: st.Token}
	if st.ExpirationTimestamp != nil {
		creds.expiry = *st.ExpirationTimestamp
	}
	if st.ClientCertificateData != "" {
		cert, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("failed parsing client key/certificate: %w", err)
		}
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("failed parsing client leaf certificate: %w", err)
		}
		creds.cert = &cert
	}
	return creds, nil
}

// clientCertificate is the TLS handshake's: the plugin's certificate, or
// none.
func (a *execAuth) clientCertificate(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
	creds, err := a.get(cri.Context(), nil)
	if err != nil {
		return nil, err
	}
	if creds.cert == nil {
		return &tls.Certificate{}, nil
	}
	return creds.cert, nil
}

// execRoundTripper sends the plugin's token, and has the plugin run again
// when the server refuses it.
type execRoundTripper struct {
	auth *execAuth
	next http.RoundTripper
	// closeIdle drops next's pooled connections, and rotations is the
	// plugin's certificate rotation they were last dropped at: a
	// connection the rotation closed may still sit in the pool, and a
	// request sent on it would fail.
	closeIdle func()
	rotations atomic.Uint64
}

func (rt *execRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return rt.next.RoundTrip(req)
	}
	creds, err := rt.auth.get(req.Context(), nil)
	if err != nil {
		return nil, fmt.Errorf("getting credentials: %w", err)
	}
	if creds.token != "" {
		req.Header.Set("Authorization", "Bearer "+creds.token) // req is headerRoundTripper's copy
	}
	if n := rt.auth.rotations.Load(); rt.rotations.Swap(n) != n {
		rt.closeIdle()
	}
	resp, err := rt.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// The next request has the new credentials; this one's answer
		// stands, as in client-go.
		if _, err := rt.auth.get(req.Context(), creds); err != nil {
			slog.Error("refreshing credentials", "error", err)
		}
	}
	return resp, err
}

// boundedBuffer keeps the first max bytes written to it, and notes that
// more came; the plugin's further writes fail. (It has no ReadFrom, which
// io.Copy would call instead of Write.)
type boundedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		return 0, errors.New("output too large")
	}
	return b.buf.Write(p)
}

// connTracker keeps the client's open connections, to close them all.
type connTracker struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{} // guarded by mu
}

// dial wraps d so that its connections are tracked.
func (t *connTracker) dial(d func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, t: t}
		t.mu.Lock()
		if t.conns == nil {
			t.conns = make(map[*trackedConn]struct{})
		}
		t.conns[tc] = struct{}{}
		t.mu.Unlock()
		return tc, nil
	}
}

// closeAll closes every tracked connection.
func (t *connTracker) closeAll() {
	t.mu.Lock()
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	t *connTracker
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}
