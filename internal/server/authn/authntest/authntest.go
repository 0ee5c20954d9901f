// Package authntest makes the certificates and token files that tests of
// authentication need: a CA generated in the test, certificates it signs
// for servers and clients, certificate requests, and token files.
package authntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA makes a CA.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := template(tb, pkix.Name{CommonName: "listwatch test CA"})
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool returns a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Client issues a client certificate for user cn in groups orgs.
func (ca *CA) Client(tb testing.TB, cn string, orgs ...string) tls.Certificate {
	tb.Helper()
	tmpl := template(tb, pkix.Name{CommonName: cn, Organization: orgs})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(tb, tmpl)
}

// Server issues a serving certificate for 127.0.0.1 and localhost.
func (ca *CA) Server(tb testing.TB) tls.Certificate {
	tb.Helper()
	tmpl := template(tb, pkix.Name{CommonName: "127.0.0.1"})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
	return ca.issue(tb, tmpl)
}

// ServerFor issues a serving certificate for DNS names only (a Service's
// NAME.NAMESPACE.svc), not for the address it is served at.
func (ca *CA) ServerFor(tb testing.TB, names ...string) tls.Certificate {
	tb.Helper()
	tmpl := template(tb, pkix.Name{CommonName: names[0]})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = names
	return ca.issue(tb, tmpl)
}

func (ca *CA) issue(tb testing.TB, tmpl *x509.Certificate) tls.Certificate {
	tb.Helper()
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	key := newKey(tb)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// CertificateRequest is a PEM certificate request (what a
// CertificateSigningRequest's spec.request holds) for user cn in groups
// orgs.
func CertificateRequest(tb testing.TB, cn string, orgs ...string) []byte {
	tb.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, newKey(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func template(tb testing.TB, subject pkix.Name) *x509.Certificate {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
}

// WritePEM writes cert (and its key) as PEM files in a temporary directory
// and returns their paths.
func WritePEM(tb testing.TB, cert tls.Certificate) (certFile, keyFile string) {
	tb.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	WriteFile(tb, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})))
	WriteFile(tb, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})))
	return certFile, keyFile
}

// WriteFile writes content to path, readable only by its owner.
func WriteFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}
