package client

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// Config says where the server is and how to talk to it: what a kubeconfig
// context resolves to, or what a program sets by hand.
type Config struct {
	// Host is the server's base URL (https://host:port, with an optional
	// path prefix). A bare host:port means https, as in client-go.
	Host string

	TLS TLSConfig

	// BearerToken authenticates every request. BearerTokenFile, when set,
	// is read when the client is built and again whenever it changes (a
	// projected service account token rotates), at least every 50 s; the
	// last token read is used while the file cannot be read, BearerToken
	// before the first.
	BearerToken     string
	BearerTokenFile string
	// Username and Password are sent as HTTP basic authentication.
	Username string
	Password string
	// Exec runs a credential plugin for a token or a client certificate
	// when no other credential is configured (kubeconfig users[].user.exec).
	Exec *ExecConfig
	// Impersonate acts as another user, when the server lets the
	// authenticated one (the impersonate verb).
	Impersonate ImpersonationConfig

	// Namespace is the context's default namespace ("" when it has none).
	Namespace string

	// Timeout bounds every request except watches (0: DefaultTimeout;
	// negative: no bound).
	Timeout time.Duration
	// QPS and Burst limit the rate of requests with a token bucket; QPS 0
	// means no limit.
	QPS   float64
	Burst int
	// MaxRetries bounds the retries of a non-watch request answered 429 or
	// 5xx with Retry-After (0: DefaultMaxRetries; negative: none).
	MaxRetries int
	// UserAgent defaults to "listwatch/<Version>".
	UserAgent string
	// DisableProtobuf asks for lists in JSON even when the resource's type
	// is a protobuf message type (k8s.io/api's are), which by default are
	// asked for in protobuf, as client-go does.
	DisableProtobuf bool
}

// ImpersonationConfig is who the client acts as, sent as client-go sends
// it: Impersonate-User, Impersonate-Uid, one Impersonate-Group per group,
// and Impersonate-Extra-<key> per value, the key percent-encoded where it
// is not a header name's character.
type ImpersonationConfig struct {
	UserName string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// set reports whether any impersonation is asked for.
func (i *ImpersonationConfig) set() bool {
	return i.UserName != "" || i.UID != "" || len(i.Groups) > 0 || len(i.Extra) > 0
}

// TLSConfig is the TLS side of Config. Files are read when the client is
// built; *Data fields hold PEM directly and win over files.
type TLSConfig struct {
	CAFile   string
	CAData   []byte
	CertFile string
	CertData []byte
	KeyFile  string
	KeyData  []byte
	// ServerName overrides the name the server's certificate is checked
	// against (kubeconfig tls-server-name).
	ServerName string
	// Insecure skips verification of the server's certificate.
	Insecure bool
}

// Defaults of Config.
const (
	// DefaultTimeout bounds a non-watch request: kube-apiserver ends its own
	// requests after 60 s, so waiting longer only hides a dead connection.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is client-go's bound on Retry-After retries.
	DefaultMaxRetries = 10
	// DefaultServer is where the CLI looks when nothing is configured: the
	// address `listwatch serve` listens on by default.
	DefaultServer = "http://127.0.0.1:8080"
)

// Version is the client's version in its User-Agent; builds may set it with
// -ldflags "-X github.com/listwatch/listwatch/client.Version=v1.2.3".
var Version = buildVersion()

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// userAgent is the User-Agent the client sends.
func (c *Config) userAgent() string {
	if c.UserAgent != "" {
		return c.UserAgent
	}
	return "listwatch/" + Version
}

// baseURL parses Host, defaulting the scheme to https.
func (c *Config) baseURL() (*url.URL, error) {
	host := c.Host
	if host == "" {
		return nil, errors.New("no server: set the cluster's server in the kubeconfig, or a URL")
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", c.Host, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("server URL %q: scheme must be http or https", c.Host)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q has no host", c.Host)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// ConfigForURL is the configuration of a server at a plain URL with no
// authentication (such as `listwatch serve` on loopback).
func ConfigForURL(server string) *Config { return &Config{Host: server} }

// In-cluster defaults: where Kubernetes mounts a pod's service account.
const (
	InClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	InClusterCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// InClusterConfig is the configuration of a program running in a pod: the
// server from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the
// service account's token (re-read as it rotates) and CA, as client-go's
// rest.InClusterConfig.
func InClusterConfig() (*Config, error) {
	return InClusterConfigFrom(InClusterTokenFile, InClusterCAFile)
}

// InClusterConfigFrom is InClusterConfig with the service account's token
// and CA in the given files; the namespace is read from the file
// "namespace" beside the token, when there is one.
func InClusterConfigFrom(tokenFile, caFile string) (*Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
	}
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("in-cluster token: %w", err)
	}
	cfg := &Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: tokenFile,
		TLS:             TLSConfig{CAFile: caFile},
	}
	if ns, err := os.ReadFile(filepath.Join(filepath.Dir(tokenFile), "namespace")); err == nil {
		cfg.Namespace = strings.TrimSpace(string(ns))
	}
	return cfg, nil
}
