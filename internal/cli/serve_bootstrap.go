package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/listwatch/listwatch/internal/pki"
	"github.com/listwatch/listwatch/internal/server/authn"
)

// bootstrapped says whether serve runs in secure mode on certificates of
// its own: secure mode (--secure, or implied by a non-loopback --listen)
// without TLS flags, and the risk of anonymity not accepted.
func (o *serveOptions) bootstrapped() bool {
	return o.tlsCert == "" && o.clientCA == "" && !o.insecureAnon && (o.secure || !loopbackListen(o.listen))
}

// bootstrapPKI makes or reuses the CAs and certificates of --data-dir/pki
// when bootstrapped, and points the TLS flags at them: the serving
// certificate, and the client CA whose certificates authenticate. It
// returns nil otherwise.
func (o *serveOptions) bootstrapPKI() (*pki.PKI, error) {
	if !o.bootstrapped() {
		return nil, nil
	}
	for _, san := range o.tlsSANs {
		if err := pki.CheckName(san); err != nil {
			return nil, fmt.Errorf("--tls-san: %w", err)
		}
	}
	host, _, _ := net.SplitHostPort(o.listen)
	p, err := pki.Ensure(pki.Config{Dir: filepath.Join(o.dataDir, "pki"), Names: pki.ServingNames(host, o.tlsSANs)})
	if err != nil {
		return nil, fmt.Errorf("secure mode: %w", err)
	}
	o.tlsCert, o.tlsKey, o.clientCA = p.Path(pki.ServingFile), p.Path(pki.ServingKeyFile), p.Path(pki.ClientCAFile)
	return p, nil
}

// rootCA is the CA bundle the kube-root-ca.crt ConfigMaps hold:
// --root-ca-file, else secure mode's server CA, else none.
func (o *serveOptions) rootCA(boot *pki.PKI) ([]byte, error) {
	path := o.rootCAFile
	if path == "" && boot != nil {
		path = boot.Path(pki.ServerCAFile)
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err == nil && !x509.NewCertPool().AppendCertsFromPEM(b) {
		err = errors.New("no PEM certificate in it")
	}
	if err != nil {
		return nil, fmt.Errorf("root CA %s: %w", path, err)
	}
	return b, nil
}

// writeKubeconfig writes --data-dir/admin.kubeconfig for a server listening
// at addr, at every start (the port, or the admin's certificate, may have
// changed), and returns its path; nothing when p is nil.
func (o *serveOptions) writeKubeconfig(p *pki.PKI, addr net.Addr) (string, error) {
	if p == nil {
		return "", nil
	}
	host, _, _ := net.SplitHostPort(o.listen)
	port := 0
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = tcp.Port
	}
	path := filepath.Join(o.dataDir, pki.KubeconfigFile)
	if err := p.WriteKubeconfig(path, pki.KubeconfigServer(host, port)); err != nil {
		return "", fmt.Errorf("secure mode: %w", err)
	}
	return path, nil
}

// logMode says in one line which mode serve runs in: who may do what, and
// how a user gets in.
func (o *serveOptions) logMode(a authn.Authenticator, p *pki.PKI, kubeconfig string) {
	switch {
	case a == nil && loopbackListen(o.listen):
		slog.Info("anonymous mode: loopback only, no authentication, every request allowed; --secure for TLS and authentication")
		return
	case a == nil:
		slog.Warn("anonymous mode on a non-loopback address (--insecure-allow-anonymous): no authentication, every request allowed", "listen", o.listen, "tls", o.tlsCert != "")
		return
	case o.tlsCert == "":
		slog.Info("authenticated mode without TLS (loopback only)", "authentication", describe(a))
		return
	}
	attrs := []any{"authentication", describe(a)}
	if p != nil {
		attrs = append(attrs, "tls", p.Dir, "admin-kubeconfig", kubeconfig,
			"serving-certificate-expires", p.ServingExpires.Format(time.DateOnly))
		if len(p.Made) > 0 {
			attrs = append(attrs, "made", strings.Join(p.Made, ","))
		}
	} else {
		attrs = append(attrs, "tls", o.tlsCert)
	}
	slog.Info("secure mode", attrs...)
}

// describe names the authenticators of a for the log: each by its String
// method, else its type (never its fields, which may hold secrets), each
// name once (static and service account tokens come the same two ways).
func describe(a authn.Authenticator) string {
	if g, ok := a.(authn.AuthenticatedGroup); ok {
		a = g.Authenticator
	}
	all, ok := a.(authn.Union)
	if !ok {
		all = authn.Union{a}
	}
	names := make([]string, 0, len(all))
	for _, x := range all {
		name := fmt.Sprintf("%T", x)
		if s, ok := x.(fmt.Stringer); ok {
			name = s.String()
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}
