package client

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// Client is a connection to one API server: its base URL, HTTP client,
// rate limiter and retry policy. It is safe for concurrent use; typed access
// goes through Resource.
type Client struct {
	base       *url.URL
	http       *http.Client
	limiter    *rateLimiter
	timeout    time.Duration // of non-watch requests; 0: none
	maxRetries int
	namespace  string
	protobuf   bool // lists of protobuf message types are asked for in protobuf
}

// New returns a client for cfg.
func New(cfg *Config) (*Client, error) {
	base, err := cfg.baseURL()
	if err != nil {
		return nil, err
	}
	hc, err := newHTTPClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	c := &Client{
		base: base, http: hc, limiter: newRateLimiter(cfg.QPS, cfg.Burst),
		timeout: positiveOr(cfg.Timeout, DefaultTimeout), maxRetries: positiveOr(cfg.MaxRetries, DefaultMaxRetries),
		namespace: cfg.Namespace, protobuf: !cfg.DisableProtobuf,
	}
	return c, nil
}

// positiveOr returns v when positive, def when zero, and 0 when negative.
func positiveOr[N int | time.Duration](v, def N) N {
	switch {
	case v > 0:
		return v
	case v == 0:
		return def
	}
	return 0
}

// Namespace is the configuration's default namespace ("" if it has none).
func (c *Client) Namespace() string { return c.namespace }

// Host is the server's base URL.
func (c *Client) Host() string { return c.base.String() }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Media types the client sends and accepts.
const (
	mediaJSON = "application/json"
	// MediaTable asks for the Table form kubectl prints (v1, falling back
	// to v1beta1 and then plain JSON, as kubectl asks).
	MediaTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)

// request is one API call.
type request struct {
	method      string
	path        string // below the base URL, starting with "/"
	query       url.Values
	accept      string // default: JSON
	contentType string // of body
	body        []byte
	// decode, when set, reads a 2xx response's body, of the given
	// Content-Type, as it arrives instead of buffering it whole (a large
	// list need not be held twice).
	decode func(contentType string, body io.Reader) error
}

// url is the request's URL; path segments in r.path are already escaped.
func (r *request) url(base *url.URL) (string, error) {
	u := *base
	u.RawPath = base.EscapedPath() + r.path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", r.path, err)
	}
	u.Path = p
	u.RawQuery = r.query.Encode()
	return u.String(), nil
}

// newHTTPRequest builds the HTTP request of r.
func (c *Client) newHTTPRequest(ctx context.Context, r *request) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	u, err := r.url(c.base)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", cmp.Or(r.accept, mediaJSON))
	if r.body != nil {
		req.Header.Set("Content-Type", cmp.Or(r.contentType, mediaJSON))
	}
	return req, nil
}

// response is a successful answer.
type response struct {
	body        []byte
	contentType string
}

// do sends a non-watch request within the client's timeout, retrying a 429
// or 5xx that carries Retry-After up to maxRetries times (client-go's
// policy), and returns a 2xx response, or the decoded error.
func (c *Client) do(ctx context.Context, r *request) (*response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	for attempt := 0; ; attempt++ {
		resp, retryIn, err := c.once(ctx, r)
		if retryIn < 0 || attempt >= c.maxRetries {
			return resp, err
		}
		if err := wait.Sleep(ctx, retryIn); err != nil {
			return nil, fmt.Errorf("%s %s: waiting to retry: %w", r.method, r.path, err)
		}
	}
}

// once sends r one time. wait is how long to wait before a retry, or
// negative when the response must not be retried.
func (c *Client) once(ctx context.Context, r *request) (_ *response, wait time.Duration, _ error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, -1, err
	}
	defer resp.Body.Close()
	if r.decode != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return decodeStream(r, resp)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, -1, fmt.Errorf("%s %s: reading the response: %w", r.method, r.path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &response{body: body, contentType: resp.Header.Get("Content-Type")}, -1, nil
	}
	return nil, retryWait(resp), statusError(resp.StatusCode, resp.Header, body)
}

// decodeStream gives a 2xx response's body to r.decode, then reads what it
// left (trailing white space), so that the connection can be reused.
func decodeStream(r *request, resp *http.Response) (*response, time.Duration, error) {
	if err := r.decode(resp.Header.Get("Content-Type"), resp.Body); err != nil {
		return nil, -1, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, -1, fmt.Errorf("%s %s: reading the response: %w", r.method, r.path, err)
	}
	return &response{contentType: resp.Header.Get("Content-Type")}, -1, nil
}

// send waits for the rate limiter and sends r.
func (c *Client) send(ctx context.Context, r *request) (*http.Response, error) {
	if err := c.limiter.wait(ctx); err != nil {
		return nil, fmt.Errorf("%s %s: rate limiter: %w", r.method, r.path, err)
	}
	req, err := c.newHTTPRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	return resp, nil
}

// retryWait says how long to wait before retrying resp: client-go retries a
// 429 or a 5xx only when the server says when, with Retry-After.
func retryWait(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return -1
	}
	secs, ok := retryAfterHeader(resp.Header)
	if !ok {
		return -1
	}
	return time.Duration(secs) * time.Second
}
