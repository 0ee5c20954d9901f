package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// certificate is a self-signed certificate for 127.0.0.1 (ECDSA P-256)
// made at run time and written to a temporary directory, for the children
// of a TLS run to serve; the run's clients trust it alone.
type certificate struct {
	dir, certFile, keyFile string
	client                 *tls.Config
}

// certValidity is the certificate's life: far longer than any run.
const certValidity = 24 * time.Hour

func newCertificate() (*certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a certificate serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "listwatch bench"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the self-signed certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the TLS key: %w", err)
	}
	dir, err := os.MkdirTemp("", "listwatch-bench-tls-")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for the certificate: %w", err)
	}
	c := &certificate{dir: dir, certFile: filepath.Join(dir, "cert.pem"), keyFile: filepath.Join(dir, "key.pem")}
	if err := writePEM(c.certFile, "CERTIFICATE", der); err != nil {
		c.remove()
		return nil, err
	}
	if err := writePEM(c.keyFile, "PRIVATE KEY", keyDER); err != nil {
		c.remove()
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	c.client = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return c, nil
}

func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// remove deletes the certificate's files; c may be nil.
func (c *certificate) remove() {
	if c != nil {
		os.RemoveAll(c.dir)
	}
}

// args are the flags that make a child serve the certificate.
func (c *certificate) args() []string {
	return []string{"--tls-cert-file", c.certFile, "--tls-private-key-file", c.keyFile}
}

// isHTTPS reports whether url is served over TLS.
func isHTTPS(url string) bool { return strings.HasPrefix(url, "https://") }

// hostPort is url's host:port.
func hostPort(url string) string {
	return strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
}

// checkTLS checks that tls agrees with a target given by URL: an https URL
// is TLS, an http one is not.
func checkTLS(target Process, tls bool) error {
	if target.URL != "" && tls != isHTTPS(target.URL) {
		return fmt.Errorf("--tls %v with --server %s: an https URL needs --tls, an http one excludes it", tls, target.URL)
	}
	return nil
}

// checkTransport checks that a watch transport exists with tls or without.
func checkTransport(transport string, tls bool) error {
	switch {
	case transport == TransportHTTP1, transport == TransportH2 && tls, transport == TransportH2C && !tls:
		return nil
	case tls:
		return fmt.Errorf("--transport %q with --tls: must be %s or %s", transport, TransportHTTP1, TransportH2)
	}
	return fmt.Errorf("--transport %q: must be %s or %s (with --tls: %s or %s)", transport, TransportHTTP1, TransportH2C, TransportHTTP1, TransportH2)
}

// transportLabel names a transport for reports, saying TLS.
func transportLabel(transport string, tls bool) string {
	if tls {
		return transport + ", TLS"
	}
	return transport
}

// handshakeHTTP1 runs a TLS handshake on raw, a connection to addr,
// trusting tc's roots and asking for HTTP/1.1 (ALPN).
func handshakeHTTP1(ctx context.Context, raw net.Conn, addr string, tc *tls.Config) (*tls.Conn, error) {
	tc = tc.Clone()
	tc.NextProtos = []string{"http/1.1"}
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	t := tls.Client(raw, tc)
	if err := t.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return t, nil
}
