package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// KubeconfigOptions choose the kubeconfig files and context, as kubectl's
// --kubeconfig, --context and --server flags do.
type KubeconfigOptions struct {
	// Path is the one file to read, which must exist. When empty, the files
	// listed in $KUBECONFIG are merged (missing ones skipped), or, without
	// KUBECONFIG, ~/.kube/config is read if it exists.
	Path string
	// Context replaces the files' current-context.
	Context string
	// Server replaces the context's cluster server; with no kubeconfig at
	// all it is the whole configuration.
	Server string
}

// ErrNoConfig means no kubeconfig file exists (or none names a context) and
// no server was given: kubectl's "no configuration has been provided". A
// command line may then fall back to DefaultServer, as kubectl falls back to
// localhost:8080.
var ErrNoConfig = errors.New("no configuration has been provided: no kubeconfig file names a context, and no server was given")

// kubeconfig is the part of a kubeconfig file (clientcmd/api/v1) the client
// reads. Relative paths in it are made absolute against the file's directory
// as it is read.
type kubeconfig struct {
	CurrentContext string         `json:"current-context"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
}

type namedCluster struct {
	Name    string  `json:"name"`
	Cluster cluster `json:"cluster"`
}

type cluster struct {
	Server                   string           `json:"server"`
	TLSServerName            string           `json:"tls-server-name"`
	InsecureSkipTLSVerify    bool             `json:"insecure-skip-tls-verify"`
	CertificateAuthority     string           `json:"certificate-authority"`
	CertificateAuthorityData []byte           `json:"certificate-authority-data"`
	ProxyURL                 string           `json:"proxy-url"`
	Extensions               []namedExtension `json:"extensions"`
}

type namedExtension struct {
	Name      string          `json:"name"`
	Extension json.RawMessage `json:"extension"`
}

// execExtension names the cluster extension a credential plugin is given.
const execExtension = "client.authentication.k8s.io/exec"

type namedUser struct {
	Name string `json:"name"`
	User user   `json:"user"`
}

type user struct {
	ClientCertificate     string              `json:"client-certificate"`
	ClientCertificateData []byte              `json:"client-certificate-data"`
	ClientKey             string              `json:"client-key"`
	ClientKeyData         []byte              `json:"client-key-data"`
	Token                 string              `json:"token"`
	TokenFile             string              `json:"tokenFile"`
	Username              string              `json:"username"`
	Password              string              `json:"password"`
	Exec                  *ExecConfig         `json:"exec"`
	AuthProvider          json.RawMessage     `json:"auth-provider"`
	As                    string              `json:"as"`
	AsUID                 string              `json:"as-uid"`
	AsGroups              []string            `json:"as-groups"`
	AsUserExtra           map[string][]string `json:"as-user-extra"`
}

type namedContext struct {
	Name    string          `json:"name"`
	Context kubeconfContext `json:"context"`
}

type kubeconfContext struct {
	Cluster   string `json:"cluster"`
	User      string `json:"user"`
	Namespace string `json:"namespace"`
}

// LoadKubeconfig reads the kubeconfig files that opts select, merged as
// kubectl merges $KUBECONFIG (the first file to set a cluster, user,
// context or current-context wins), and returns the chosen context's
// configuration.
func LoadKubeconfig(opts KubeconfigOptions) (*Config, error) {
	kc, err := loadKubeconfigFiles(opts.Path)
	if err != nil {
		return nil, err
	}
	name := kc.CurrentContext
	if opts.Context != "" {
		name = opts.Context
	}
	if name == "" {
		if opts.Server == "" {
			return nil, ErrNoConfig
		}
		return ConfigForURL(opts.Server), nil
	}
	cfg, err := kc.config(name)
	if err != nil {
		return nil, err
	}
	if opts.Server != "" {
		cfg.Host = opts.Server
	}
	return cfg, nil
}

// kubeconfigPaths lists the files to merge, in precedence order.
func kubeconfigPaths(explicit string) (paths []string, mustExist bool) {
	if explicit != "" {
		return []string{explicit}, true
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env), false
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, false
	}
	return []string{filepath.Join(home, ".kube", "config")}, false
}

// loadKubeconfigFiles reads and merges the selected files.
func loadKubeconfigFiles(explicit string) (*kubeconfig, error) {
	paths, mustExist := kubeconfigPaths(explicit)
	merged := &kubeconfig{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		kc, err := readKubeconfig(p)
		if errors.Is(err, fs.ErrNotExist) && !mustExist {
			continue
		}
		if err != nil {
			return nil, err
		}
		merged.merge(kc)
	}
	return merged, nil
}

// readKubeconfig parses one file and resolves its relative paths.
func readKubeconfig(path string) (*kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	kc.resolvePaths(dir)
	return &kc, nil
}

func (kc *kubeconfig) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	for i := range kc.Clusters {
		abs(&kc.Clusters[i].Cluster.CertificateAuthority)
	}
	for i := range kc.Users {
		u := &kc.Users[i].User
		abs(&u.ClientCertificate)
		abs(&u.ClientKey)
		abs(&u.TokenFile)
		// A plugin's command is a path only when it names a directory;
		// else it is looked up in PATH (clientcmd's rule).
		if u.Exec != nil && strings.ContainsRune(u.Exec.Command, filepath.Separator) {
			abs(&u.Exec.Command)
		}
	}
}

// merge adds other's entries that kc does not have yet: earlier files win.
func (kc *kubeconfig) merge(other *kubeconfig) {
	if kc.CurrentContext == "" {
		kc.CurrentContext = other.CurrentContext
	}
	kc.Clusters = appendNew(kc.Clusters, other.Clusters, func(c namedCluster) string { return c.Name })
	kc.Users = appendNew(kc.Users, other.Users, func(u namedUser) string { return u.Name })
	kc.Contexts = appendNew(kc.Contexts, other.Contexts, func(c namedContext) string { return c.Name })
}

// appendNew appends the entries of add whose names dst does not hold.
func appendNew[E any](dst, add []E, name func(E) string) []E {
	for _, e := range add {
		if _, ok := find(dst, name(e), name); !ok {
			dst = append(dst, e)
		}
	}
	return dst
}

func find[E any](list []E, want string, name func(E) string) (E, bool) {
	for _, e := range list {
		if name(e) == want {
			return e, true
		}
	}
	var zero E
	return zero, false
}

// config resolves the named context into a Config.
func (kc *kubeconfig) config(contextName string) (*Config, error) {
	ctx, ok := find(kc.Contexts, contextName, func(c namedContext) string { return c.Name })
	if !ok {
		return nil, fmt.Errorf("kubeconfig: context %q not found", contextName)
	}
	cl, ok := find(kc.Clusters, ctx.Context.Cluster, func(c namedCluster) string { return c.Name })
	if !ok {
		return nil, fmt.Errorf("kubeconfig: context %q: cluster %q not found", contextName, ctx.Context.Cluster)
	}
	cfg := &Config{Namespace: ctx.Context.Namespace}
	if err := cl.Cluster.apply(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig: cluster %q: %w", cl.Name, err)
	}
	if ctx.Context.User == "" {
		return cfg, nil
	}
	u, ok := find(kc.Users, ctx.Context.User, func(u namedUser) string { return u.Name })
	if !ok {
		return nil, fmt.Errorf("kubeconfig: context %q: user %q not found", contextName, ctx.Context.User)
	}
	if err := u.User.apply(cfg); err != nil {
		return nil, fmt.Errorf("kubeconfig: user %q: %w", u.Name, err)
	}
	if cfg.Exec != nil {
		cfg.Exec.ClusterConfig = cl.Cluster.execConfig()
	}
	return cfg, nil
}

// execConfig is the cluster's extension for credential plugins, if any.
func (c *cluster) execConfig() json.RawMessage {
	e, _ := find(c.Extensions, execExtension, func(e namedExtension) string { return e.Name })
	return e.Extension
}

func (c *cluster) apply(cfg *Config) error {
	if c.ProxyURL != "" {
		return errors.New("proxy-url is not supported")
	}
	cfg.Host = c.Server
	cfg.TLS.ServerName = c.TLSServerName
	cfg.TLS.Insecure = c.InsecureSkipTLSVerify
	cfg.TLS.CAFile = c.CertificateAuthority
	cfg.TLS.CAData = c.CertificateAuthorityData
	return nil
}

func (u *user) apply(cfg *Config) error {
	if len(u.AuthProvider) > 0 && string(u.AuthProvider) != "null" {
		return errors.New("auth-provider is not supported: use a token, tokenFile, client certificate or exec plugin")
	}
	if u.Exec != nil {
		if err := u.Exec.validate(); err != nil {
			return err
		}
	}
	cfg.TLS.CertFile, cfg.TLS.CertData = u.ClientCertificate, u.ClientCertificateData
	cfg.TLS.KeyFile, cfg.TLS.KeyData = u.ClientKey, u.ClientKeyData
	cfg.BearerToken, cfg.BearerTokenFile = u.Token, u.TokenFile
	cfg.Username, cfg.Password = u.Username, u.Password
	cfg.Exec = u.Exec
	cfg.Impersonate = ImpersonationConfig{UserName: u.As, UID: u.AsUID, Groups: u.AsGroups, Extra: u.AsUserExtra}
	return cfg.Impersonate.check()
}
