package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
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
	// tokenFileRefresh is how often a BearerTokenFile is re-read.
	tokenFileRefresh = time.Minute
)

// newHTTPClient builds the HTTP client of cfg: HTTP/2 over TLS by ALPN, and
// HTTP/1.1, with the configured TLS and authentication. It has no overall
// timeout, because watches are long; requests carry their own deadlines.
func newHTTPClient(cfg *Config) (*http.Client, error) {
	tlsConf, err := cfg.TLS.build()
	if err != nil {
		return nil, err
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	var rt http.RoundTripper = &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
		IdleConnTimeout:     idleConnTimeout,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		Protocols:           &protocols,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: h2ReadIdleTimeout, PingTimeout: h2PingTimeout},
	}
	rt = &headerRoundTripper{next: rt, userAgent: cfg.userAgent(), auth: newAuth(cfg)}
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

// headerRoundTripper sets the User-Agent and the Authorization header.
type headerRoundTripper struct {
	next      http.RoundTripper
	userAgent string
	auth      func() (string, error) // the Authorization header, "" for none
}

func (h *headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	authz, err := h.auth()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", h.userAgent)
	if authz != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", authz)
	}
	return h.next.RoundTrip(req)
}

// newAuth returns the function that makes each request's Authorization.
func newAuth(cfg *Config) func() (string, error) {
	switch {
	case cfg.BearerTokenFile != "":
		tf := &tokenFile{path: cfg.BearerTokenFile, fallback: cfg.BearerToken}
		return tf.header
	case cfg.BearerToken != "":
		return func() (string, error) { return "Bearer " + cfg.BearerToken, nil }
	case cfg.Username != "" || cfg.Password != "":
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(cfg.Username, cfg.Password)
		basic := r.Header.Get("Authorization")
		return func() (string, error) { return basic, nil }
	}
	return func() (string, error) { return "", nil }
}

// tokenFile reads a bearer token from a file, at most once per
// tokenFileRefresh, so a rotated token is picked up.
type tokenFile struct {
	path     string
	fallback string // used while the file cannot be read

	mu     sync.Mutex
	token  string    // guarded by mu
	readAt time.Time // guarded by mu
}

func (t *tokenFile) header() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && time.Since(t.readAt) < tokenFileRefresh {
		return "Bearer " + t.token, nil
	}
	b, err := os.ReadFile(t.path)
	if tok := strings.TrimSpace(string(b)); err == nil && tok != "" {
		t.token, t.readAt = tok, time.Now()
	}
	if t.token == "" { // keep the last token while the file cannot be read
		t.token = t.fallback
	}
	if t.token == "" {
		return "", fmt.Errorf("reading bearer token file %s: %w", t.path, cmp.Or(err, errors.New("empty file")))
	}
	return "Bearer " + t.token, nil
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
	if err := sleep(ctx, l.reserve()); err != nil {
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
