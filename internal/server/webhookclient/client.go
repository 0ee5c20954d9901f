// Package webhookclient calls the webhooks kube-apiserver calls, admission
// and CRD conversion alike, from their clientConfig (kube's
// WebhookClientConfig): by URL or service reference, trusting the
// caBundle, a JSON body posted with the time left as the timeout
// parameter, the answer bounded in size.
//
// A service reference is resolved on every call, as kube's
// resolvingRoundTripper (WebhookRoundTripLoadBalancing, on by default in
// kube 1.37): its Resolver gives the address to dial, while the Host
// header and the TLS server name stay NAME.NAMESPACE.svc, as kube sends
// them. Calls use HTTP/1.1, as kube's (so that a Service's endpoints share
// the load), but by URL to a loopback host.
//
// A call presents the client certificate and bearer token Options'
// Kubeconfig names for its host, as kube's AuthenticationInfoResolver
// (the admission plugins' kubeConfigFile).
//
// # Concurrency
//
// An Endpoint is safe for concurrent use; Close it once it is replaced.
package webhookclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// MaxResponseBytes bounds a webhook's answer as kube bounds a request body
// (3 MiB): what it returns must still be storable.
const MaxResponseBytes = 3 << 20

// ClientConfig is kube's WebhookClientConfig, with its JSON names.
type ClientConfig struct {
	URL     *string `json:"url"`
	Service *struct {
		Namespace, Name string
		Path            *string
		Port            *int32
	} `json:"service"`
	CABundle string `json:"caBundle"`
}

// Resolver finds the address ("host:port") a Service's port is served at,
// as kube-apiserver's ServiceResolver; "" when the Service is not known,
// for the call to go to its DNS name.
type Resolver interface {
	ResolveService(ctx context.Context, namespace, name string, port int32) (string, error)
}

// Endpoint is one webhook's URL and the client that calls it.
type Endpoint struct {
	url    string
	client *http.Client
	// service, when the webhook is a service reference, is what resolver
	// resolves on each call.
	service  *service
	resolver Resolver
	token    string // sent as a bearer token, when set
}

// Options are what the server gives every webhook client.
type Options struct {
	// Resolver resolves service references (nil: by DNS).
	Resolver Resolver
	// Credentials are those of the webhook hosts (nil: none).
	Credentials *Kubeconfig
}

type service struct {
	namespace, name string
	port            int32
}

// New returns the endpoint cc names, with a client trusting its caBundle
// (else the system's roots) and presenting the credentials opts has for
// its host. A service reference is called at
// https://NAME.NAMESPACE.svc:PORT/PATH, at the address opts' resolver
// gives (by DNS when there is none or it knows no such Service).
func New(cc ClientConfig, opts Options) (*Endpoint, error) {
	var u string
	e := &Endpoint{resolver: opts.Resolver}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cc.URL != nil:
		u = *cc.URL
	case cc.Service != nil:
		e.service = &service{namespace: cc.Service.Namespace, name: cc.Service.Name, port: 443} // kube's default port
		if cc.Service.Port != nil {
			e.service.port = *cc.Service.Port
		}
		path := ""
		if cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		tlsConfig.ServerName = cc.Service.Name + "." + cc.Service.Namespace + ".svc"
		u = fmt.Sprintf("https://%s:%d%s", tlsConfig.ServerName, e.service.port, path)
	default:
		return nil, errors.New("neither url nor service")
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	hostPort := parsed.Host
	if parsed.Port() == "" {
		hostPort = net.JoinHostPort(hostPort, "443") // kube's default, for finding credentials
	}
	creds := opts.Credentials.For(hostPort)
	if creds.Certificate != nil {
		tlsConfig.Certificates = []tls.Certificate{*creds.Certificate}
	}
	e.token = creds.Token
	if cc.CABundle != "" {
		pem, err := base64.StdEncoding.DecodeString(cc.CABundle)
		if err != nil {
			return nil, fmt.Errorf("caBundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsConfig,
		ForceAttemptHTTP2:   e.service == nil && isLoopback(parsed.Hostname()),
		MaxIdleConnsPerHost: 25, // kube's webhook client keeps as many
		IdleConnTimeout:     90 * time.Second,
	}
	e.url, e.client = u, &http.Client{Transport: transport}
	return e, nil
}

// isLoopback is kube's isLocalHost: localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Post sends body with kube's timeout parameter (the time left before
// ctx's deadline, rounded up to a second) and decodes the answer into out.
// code is the status kube gives a failure: the webhook's own, else 503.
func (e *Endpoint) Post(ctx context.Context, body []byte, out any) (code int, err error) {
	u := e.url
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left > 0 {
			if t := left.Truncate(time.Second); t != left {
				left = t + time.Second
			}
			u = withQuery(u, "timeout", left.String())
		}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return http.StatusServiceUnavailable, err
	}
	if err := e.resolve(ctx, hr); err != nil {
		return http.StatusServiceUnavailable, &url.Error{Op: "Post", URL: u, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		hr.Header.Set("Authorization", "Bearer "+e.token)
	}
	hr.Header.Set("Accept", "application/json, */*")
	res, err := e.client.Do(hr)
	if err != nil {
		return http.StatusServiceUnavailable, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		return http.StatusServiceUnavailable, err
	}
	if len(b) > MaxResponseBytes {
		return http.StatusServiceUnavailable, fmt.Errorf("the response is larger than %d bytes", MaxResponseBytes)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var st api.Status
		if json.Unmarshal(b, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return res.StatusCode, errors.New(st.Message)
		}
		return res.StatusCode, fmt.Errorf("the server responded with the status code %d but did not return more information", res.StatusCode)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return http.StatusServiceUnavailable, fmt.Errorf("decoding the response: %w", err)
	}
	return res.StatusCode, nil
}

// resolve points a call by service reference at the address the resolver
// gives, keeping the service's name as the Host header (and, set in New,
// as the TLS server name).
func (e *Endpoint) resolve(ctx context.Context, hr *http.Request) error {
	if e.service == nil || e.resolver == nil {
		return nil
	}
	addr, err := e.resolver.ResolveService(ctx, e.service.namespace, e.service.name, e.service.port)
	if err != nil || addr == "" {
		return err
	}
	hr.Host = hr.URL.Host
	hr.URL.Host = addr
	return nil
}

func withQuery(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Close releases the endpoint's idle connections.
func (e *Endpoint) Close() { e.client.CloseIdleConnections() }
