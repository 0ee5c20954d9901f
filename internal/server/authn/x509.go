package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// LoadClientCA reads a PEM file of CA certificates.
func LoadClientCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("client CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// ClientCert authenticates the x509 client certificate of a TLS
// connection: one that chains to a root in Roots and allows client
// authentication names its user in the subject's common name (CN) and its
// groups in the organizations (O), as kube-apiserver reads it. The server's
// TLS configuration must request client certificates without verifying
// them (tls.RequestClientCert), so that requests without one can still
// present a token.
type ClientCert struct{ Roots *x509.CertPool }

func (c ClientCert) String() string { return "x509 client certificates" }

// Authenticate implements Authenticator.
func (c ClientCert) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         c.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, ic := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("client certificate without a common name")
	}
	return &User{Name: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}, true, nil
}
