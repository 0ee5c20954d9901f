package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// Transport tunables, as client-go's (apimachinery util/net SetTransportDefaults
// and its HTTP/2 health check).
const (
	dialTimeout         = 30 * time.Second
	dialKeepAlive       = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	maxIdleConnsPerHost = 25
	// An HTTP/2 connection idle this long is pinged, and closed when the
	// ping is not answered in h2PingTimeout: a watch on a dead connection
	// then ends instead of hanging.
	h2ReadIdleTimeout = 30 * time.Second
	h2PingTimeout     = 15 * time.Second
	// tokenFileRefresh is how often a BearerTokenFile is read even when it
	// looks unchanged: client-go's period, a minute less its 10 s leeway.
	tokenFileRefresh = 50 * time.Second
)

// newHTTPClient builds the HTTP client of cfg: HTTP/2 over TLS by ALPN, and
// HTTP/1.1, with the configured TLS and authentication. It has no overall
// timeout, because watches are long; requests carry their own deadlines.
func newHTTPClient(cfg *Config) (*http.Client, error) {
	if err := cfg.Impersonate.check(); err != nil {
		return nil, err
	}
	tlsConf, err := cfg.TLS.build()
	if err != nil {
		return nil, err
	}
	auth, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	dial := (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}).DialContext
	// A plugin is run only when nothing else authenticates, as in client-go.
	var plugin *execAuth
	if cfg.Exec != nil && auth == nil && len(tlsConf.Certificates) == 0 {
		if plugin, err = sharedExecAuth(cfg); err != nil {
			return nil, err
		}
		dial = plugin.conns.dial(dial)
		tlsConf.GetClientCertificate = plugin.clientCertificate
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		IdleConnTimeout:     idleConnTimeout,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		Protocols:           &protocols,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: h2ReadIdleTimeout, PingTimeout: h2PingTimeout},
	}
	var rt http.RoundTripper = tr
	if plugin != nil {
		rt = &execRoundTripper{auth: plugin, next: tr, closeIdle: tr.CloseIdleConnections}
	}
	rt = &headerRoundTripper{next: rt, userAgent: cfg.userAgent(), auth: auth, impersonate: cfg.Impersonate}
	return &http.Client{Transport: rt, CheckRedirect: readsOnly}, nil
}

// readsOnly lets the client follow a redirect of a GET or HEAD only: a
// write or a delete that a server (or a proxy) redirects elsewhere must not
// happen there. Go, and client-go which leaves Go's policy, would resend a
// DELETE to the URL of a 307; the 3xx is returned as the answer instead.
func readsOnly(req *http.Request, via []*http.Request) error {
	if m := via[0].Method; m != http.MethodGet && m != http.MethodHead {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// maxRedirects is Go's default limit.
const maxRedirects = 10

// build makes the tls.Config, reading the CA and client certificate.
func (t *TLSConfig) build() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.Insecure}
	ca, err := readData(t.CAData, t.CAFile, "certificate authority")
	if err != nil {
		return nil, err
	}
	if len(ca) > 0 {
		if t.Insecure {
			return nil, errors.New("specifying a root certificates file with the insecure flag is not allowed")
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(ca) {
			return nil, errors.New("certificate authority: no PEM certificate found")
		}
	}
	cert, err := t.clientCertificate()
	if err != nil {
		return nil, err
	}
	if cert != nil {
		conf.Certificates = []tls.Certificate{*cert}
	}
	return conf, nil
}

// clientCertificate loads the client certificate and key, if configured.
func (t *TLSConfig) clientCertificate() (*tls.Certificate, error) {
	certPEM, err := readData(t.CertData, t.CertFile, "client certificate")
	if err != nil {
		return nil, err
	}
	keyPEM, err := readData(t.KeyData, t.KeyFile, "client key")
	if err != nil {
		return nil, err
	}
	if len(certPEM) == 0 && len(keyPEM) == 0 {
		return nil, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	return &cert, nil
}

// readData returns data, or the file's content when data is empty.
func readData(data []byte, file, what string) ([]byte, error) {
	if len(data) > 0 || file == "" {
		return data, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return b, nil
}

// headerRoundTripper sets the User-Agent, the Authorization header and the
// impersonation headers.
type headerRoundTripper struct {
	next        http.RoundTripper
	userAgent   string
	auth        func() string // the Authorization header; nil for none
	impersonate ImpersonationConfig
}

func (h *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", h.userAgent)
	if h.auth != nil && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", h.auth())
	}
	// A request that names its own user keeps its headers, as in client-go.
	if h.impersonate.UserName != "" && req.Header.Get("Impersonate-User") == "" {
		h.impersonate.addHeaders(req.Header)
	}
	return h.next.RoundTrip(req)
}

// check refuses what the server could not read: groups, a UID or extra
// without the user they belong to (clientcmd's message).
func (i *ImpersonationConfig) check() error {
	if i.UserName == "" && i.set() {
		return errors.New("requesting uid, groups or user-extra without impersonating a user")
	}
	return nil
}

func (i *ImpersonationConfig) addHeaders(h http.Header) {
	h.Set("Impersonate-User", i.UserName)
	if i.UID != "" {
		h.Set("Impersonate-Uid", i.UID)
	}
	for _, g := range i.Groups {
		h.Add("Impersonate-Group", g)
	}
	for k, vs := range i.Extra {
		for _, v := range vs {
			h.Add("Impersonate-Extra-"+headerKeyEscape(k), v)
		}
	}
}

// headerKeyEscape percent-encodes the bytes of an extra's key that cannot
// be in a header name, and '%' itself, as client-go does and the server
// undoes with url.PathUnescape.
func headerKeyEscape(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '%' || !isTokenChar(c) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isTokenChar reports whether c may be in a header name (RFC 9110 tchar).
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// newAuth returns the function that makes each request's Authorization,
// or nil when cfg has no token and no password.
func newAuth(cfg *Config) (func() string, error) {
	switch {
	case cfg.BearerTokenFile != "":
		tf, err := newTokenFile(cfg.BearerTokenFile, cfg.BearerToken)
		if err != nil {
			return nil, err
		}
		return tf.header, nil
	case cfg.BearerToken != "":
		return func() string { return "Bearer " + cfg.BearerToken }, nil
	case cfg.Username != "" || cfg.Password != "":
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(cfg.Username, cfg.Password)
		basic := r.Header.Get("Authorization")
		return func() string { return basic }, nil
	}
	return nil, nil
}

// maxTokenFileSize bounds what is read of a token file: a token is a few
// KiB at most, and a header of a MiB is Go's and kube-apiserver's limit.
const maxTokenFileSize = 1 << 20

// tokenFile is a bearer token read from a file, read again when the file
// changes (kubelet rotates a projected token by swapping the file) and at
// least every tokenFileRefresh (a change that left size and time alone).
type tokenFile struct {
	path string

	mu      sync.Mutex
	authz   string      // guarded by mu: "Bearer " and the last token read
	read    os.FileInfo // guarded by mu: the file that token was read from
	readAt  time.Time   // guarded by mu
	failing bool        // guarded by mu: the last read failed, and was logged
}

// newTokenFile reads the file; token is used instead only if it cannot be
// read, as client-go does.
func newTokenFile(path, token string) (*tokenFile, error) {
	t := &tokenFile{path: path, authz: "Bearer " + token}
	if err := t.reload(); err != nil && token == "" {
		return nil, err
	}
	return t, nil
}

func (t *tokenFile) header() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.changed() && time.Since(t.readAt) < tokenFileRefresh {
		return t.authz
	}
	switch err := t.reload(); {
	case err != nil && !t.failing:
		t.failing = true
		slog.Warn("unable to rotate the bearer token, keeping the last one read", "error", err)
	case err == nil:
		t.failing = false
	}
	return t.authz
}

// changed reports whether the file is not the one last read. Called with
// t.mu held.
func (t *tokenFile) changed() bool {
	fi, err := os.Stat(t.path)
	return err != nil || t.read == nil || !os.SameFile(fi, t.read) ||
		fi.Size() != t.read.Size() || !fi.ModTime().Equal(t.read.ModTime())
}

// reload reads the token; the last one stays when it cannot be read.
// Called with t.mu held, or before t is shared.
func (t *tokenFile) reload() error {
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("failed to read token file %q: %w", t.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("failed to read token file %q: %w", t.path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileSize+1))
	switch {
	case err != nil:
		return fmt.Errorf("failed to read token file %q: %w", t.path, err)
	case len(b) > maxTokenFileSize:
		return fmt.Errorf("token file %q is larger than %d bytes", t.path, maxTokenFileSize)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return fmt.Errorf("read empty token from file %q", t.path)
	}
	t.authz, t.read, t.readAt = "Bearer "+tok, fi, time.Now()
	return nil
}

// rateLimiter is a token bucket: qps tokens a second, at most burst saved.
type rateLimiter struct {
	qps   float64
	burst float64

	mu     sync.Mutex
	tokens float64   // guarded by mu; may go negative: reserved by waiters
	last   time.Time // guarded by mu
}

func newRateLimiter(qps float64, burst int) *rateLimiter {
	if qps <= 0 {
		return nil
	}
	b := float64(max(burst, 1))
	return &rateLimiter{qps: qps, burst: b, tokens: b, last: time.Now()}
}

// wait takes a token, waiting for one as long as ctx allows. A nil limiter
// never waits.
func (l *rateLimiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if err := wait.Sleep(ctx, l.reserve()); err != nil {
		l.cancel()
		return err
	}
	return nil
}

// reserve takes a token now and returns how long until it is really there.
func (l *rateLimiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.qps)
	l.last = now
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.qps * float64(time.Second))
}

// cancel gives back a token a waiter reserved but did not use.
func (l *rateLimiter) cancel() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = min(l.burst, l.tokens+1)
}
