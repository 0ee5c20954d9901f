package webhookclient

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Credentials are what calls of a webhook host present, from a kubeconfig
// user: a client certificate, a bearer token.
type Credentials struct {
	Certificate *tls.Certificate
	Token       string
}

// Kubeconfig holds the credentials of webhook hosts, as kube-apiserver
// reads a WebhookAdmissionConfiguration's kubeConfigFile: each user is
// named for the host it is presented to ("host:port", "host" for port
// 443, "*.domain" for every host under domain, "*" for any other host);
// the current context's user is presented to a host none names.
type Kubeconfig struct {
	users   map[string]Credentials
	current string // the current context's user, if any
}

// kubeconfigUser is a kubeconfig user's fields that webhook calls use.
type kubeconfigUser struct {
	Token                 string `json:"token"`
	TokenFile             string `json:"tokenFile"`
	ClientCertificate     string `json:"client-certificate"`
	ClientCertificateData []byte `json:"client-certificate-data"`
	ClientKey             string `json:"client-key"`
	ClientKeyData         []byte `json:"client-key-data"`
}

// LoadKubeconfig reads the users of a kubeconfig file; relative file
// names are relative to its directory, as kube resolves them.
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc struct {
		Users []struct {
			Name string         `json:"name"`
			User kubeconfigUser `json:"user"`
		} `json:"users"`
		Contexts []struct {
			Name    string `json:"name"`
			Context struct {
				User string `json:"user"`
			} `json:"context"`
		} `json:"contexts"`
		CurrentContext string `json:"current-context"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	out := &Kubeconfig{users: make(map[string]Credentials, len(kc.Users))}
	for _, u := range kc.Users {
		creds, err := u.User.credentials(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: user %q: %w", path, u.Name, err)
		}
		out.users[u.Name] = creds
	}
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext && kc.CurrentContext != "" {
			out.current = c.Context.User
		}
	}
	return out, nil
}

func (u kubeconfigUser) credentials(dir string) (Credentials, error) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var c Credentials
	c.Token = u.Token
	if u.Token == "" && u.TokenFile != "" {
		b, err := os.ReadFile(abs(u.TokenFile))
		if err != nil {
			return c, err
		}
		c.Token = strings.TrimSpace(string(b))
	}
	certPEM, keyPEM := u.ClientCertificateData, u.ClientKeyData
	var err error
	if len(certPEM) == 0 && u.ClientCertificate != "" {
		if certPEM, err = os.ReadFile(abs(u.ClientCertificate)); err != nil {
			return c, err
		}
	}
	if len(keyPEM) == 0 && u.ClientKey != "" {
		if keyPEM, err = os.ReadFile(abs(u.ClientKey)); err != nil {
			return c, err
		}
	}
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return c, err
		}
		c.Certificate = &cert
	}
	return c, nil
}

// For returns the credentials for hostPort, found as kube's
// defaultAuthenticationInfoResolver finds them: the user named hostPort,
// else "*." and each shorter suffix of it; then, for port 443, the same
// without the port; then the user "*", then the current context's user.
// None (anonymous) when none of these is.
func (k *Kubeconfig) For(hostPort string) Credentials {
	if k == nil {
		return Credentials{}
	}
	if c, ok := k.match(hostPort); ok {
		return c
	}
	if host, port, err := net.SplitHostPort(hostPort); err == nil && port == "443" {
		if c, ok := k.match(host); ok {
			return c
		}
	}
	if c, ok := k.users["*"]; ok {
		return c
	}
	if c, ok := k.users[k.current]; ok && k.current != "" {
		return c
	}
	return Credentials{}
}

func (k *Kubeconfig) match(target string) (Credentials, bool) {
	if c, ok := k.users[target]; ok {
		return c, true
	}
	steps := strings.Split(target, ".")
	for i := 1; i < len(steps); i++ {
		if c, ok := k.users["*."+strings.Join(steps[i:], ".")]; ok {
			return c, true
		}
	}
	return Credentials{}, false
}
