// Package pki makes and keeps the certificates of `listwatch serve`'s
// secure mode when no TLS flags are given, as k3s does on its first start:
// in one directory, a server CA and the serving certificate it signs, a
// client CA and the admin's client certificate it signs.
//
// Two CAs, as k3s (kubeadm uses one): what clients trust to verify the
// server (server-ca.crt, in every kubeconfig) is not what mints identities
// (client-ca.key, whose holder can make a system:masters certificate), so
// that handing out the first never widens who the second trusts, and
// either can be replaced without the other.
//
// Keys are ECDSA P-256 and lifetimes those of k3s and kubeadm: 10 years for
// a CA, one year for a certificate it signs. Ensure reuses what the
// directory holds; it issues a certificate again when it is missing, was
// not signed by the current CA, lacks a name it needs, or has 120 days or
// less to live (k3s's renewal window); Serving does the same for the
// serving certificate of a running server. It never replaces a CA: a CA that is
// expired, half present or unreadable is an error for the operator to
// resolve. Keys are written 0600, certificates 0644, the directory 0700;
// each file is replaced atomically.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// Lifetimes, as k3s (dynamiclistener) and kubeadm issue them.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	certLifetime = 365 * 24 * time.Hour
	// renewBefore is k3s's CertificateRenewDays: a certificate with this
	// little left is issued again at start.
	renewBefore = 120 * 24 * time.Hour
	// backdate covers clocks a little behind ours.
	backdate = time.Hour
)

// The admin identity, as k3s names it: its group is cluster-admin under
// RBAC (kube's system:masters).
const (
	AdminUser  = "system:admin"
	AdminGroup = authn.SystemPrivilegedGroup
)

// The files of the directory.
const (
	ServerCAFile   = "server-ca.crt"
	serverCAKey    = "server-ca.key"
	ClientCAFile   = "client-ca.crt"
	clientCAKey    = "client-ca.key"
	ServingFile    = "serving.crt"
	ServingKeyFile = "serving.key"
	adminFile      = "client-admin.crt"
	adminKey       = "client-admin.key"
)

// Config says where the files live and which names the serving
// certificate must hold.
type Config struct {
	Dir string
	// Names are the DNS names and IP addresses clients may reach the
	// server by (ServingNames).
	Names []string
	// Now is the clock; nil for time.Now.
	Now func() time.Time
}

// PKI is what Ensure found or made.
type PKI struct {
	Dir string
	// ServerCA is the PEM of the CA that signed the serving certificate.
	ServerCA []byte
	// AdminCert and AdminKey are the PEM of the admin's client
	// certificate and key.
	AdminCert, AdminKey []byte
	// ServingExpires is when the serving certificate expires.
	ServingExpires time.Time
	// Serving hands the serving certificate to a TLS server.
	Serving *Serving
	// Made names the certificates Ensure wrote, for the log.
	Made []string
}

// Path returns the path of one of the directory's files.
func (p *PKI) Path(file string) string { return filepath.Join(p.Dir, file) }

// Ensure loads the CAs and certificates of cfg.Dir, making or issuing again
// what is missing or due (see the package documentation).
func Ensure(cfg Config) (*PKI, error) {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", cfg.Dir, err)
	}
	p := &PKI{Dir: cfg.Dir}
	t := now()
	serverCA, err := p.ca(ServerCAFile, serverCAKey, "listwatch-server-ca", t)
	if err != nil {
		return nil, err
	}
	clientCA, err := p.ca(ClientCAFile, clientCAKey, "listwatch-client-ca", t)
	if err != nil {
		return nil, err
	}
	p.ServerCA = serverCA.pem
	dns, ips := splitNames(cfg.Names)
	want := x509.Certificate{
		Subject:     pkix.Name{CommonName: "listwatch"},
		DNSNames:    dns,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	serving, err := p.leaf(serverCA, ServingFile, ServingKeyFile, t, want)
	if err != nil {
		return nil, err
	}
	p.ServingExpires = serving.cert.NotAfter
	p.Serving = &Serving{p: p, ca: serverCA, want: want, now: now}
	p.Serving.cur.Store(newServingCert(serving))
	admin, err := p.leaf(clientCA, adminFile, adminKey, t, x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p.AdminCert, p.AdminKey = admin.pem, admin.keyPEM
	return p, nil
}

// pair is a certificate and its key, parsed and as PEM.
type pair struct {
	cert        *x509.Certificate
	key         *ecdsa.PrivateKey
	pem, keyPEM []byte
}

// ca loads the CA of certFile and keyFile, or makes it when neither exists.
func (p *PKI) ca(certFile, keyFile, name string, now time.Time) (*pair, error) {
	ca, err := p.load(certFile, keyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", name, now.Unix())},
			NotBefore:             now.Add(-backdate),
			NotAfter:              now.Add(caLifetime),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			IsCA:                  true,
			BasicConstraintsValid: true,
		}
		p.Made = append(p.Made, certFile)
		return p.issue(tmpl, nil, certFile, keyFile)
	case err != nil:
		return nil, fmt.Errorf("%w; the CA is never replaced on its own: restore it, or remove %s and %s to make a new one (every kubeconfig and client certificate of the old one stops working)", err, p.Path(certFile), p.Path(keyFile))
	case !ca.cert.IsCA:
		return nil, fmt.Errorf("%s is not a CA certificate", p.Path(certFile))
	case !now.Before(ca.cert.NotAfter):
		return nil, fmt.Errorf("the CA %s expired on %s; it is never replaced on its own: remove %s and %s to make a new one (every kubeconfig and client certificate of the old one stops working)", p.Path(certFile), ca.cert.NotAfter.Format(time.DateOnly), p.Path(certFile), p.Path(keyFile))
	}
	return ca, nil
}

// leaf loads the certificate of certFile and keyFile, or issues it as want
// (subject, names, usage) says when it is missing or due.
func (p *PKI) leaf(ca *pair, certFile, keyFile string, now time.Time, want x509.Certificate) (*pair, error) {
	have, err := p.load(certFile, keyFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w; remove %s and %s to have them issued again", err, p.Path(certFile), p.Path(keyFile))
	}
	if err == nil && current(have.cert, ca.cert, &want, now) {
		return have, nil
	}
	p.Made = append(p.Made, certFile)
	return p.issue(leafTemplate(want, now), ca, certFile, keyFile)
}

// leafTemplate is want as a certificate issued at now.
func leafTemplate(want x509.Certificate, now time.Time) *x509.Certificate {
	want.NotBefore, want.NotAfter = now.Add(-backdate), now.Add(certLifetime)
	want.KeyUsage = x509.KeyUsageDigitalSignature
	return &want
}

// current says whether cert may go on serving as tmpl: signed by ca, for
// tmpl's usage, subject and every one of its names, and not due.
func current(cert, ca *x509.Certificate, tmpl *x509.Certificate, now time.Time) bool {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: tmpl.ExtKeyUsage}); err != nil {
		return false
	}
	if now.Add(renewBefore).After(cert.NotAfter) {
		return false
	}
	if cert.Subject.CommonName != tmpl.Subject.CommonName || !slices.Equal(cert.Subject.Organization, tmpl.Subject.Organization) {
		return false
	}
	for _, name := range tmpl.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range tmpl.IPAddresses {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// issue makes a key and a certificate from tmpl signed by ca (self-signed
// when ca is nil), and writes them.
func (p *PKI) issue(tmpl *x509.Certificate, ca *pair, certFile, keyFile string) (*pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)); err != nil {
		return nil, err
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("issuing %s: %w", certFile, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := &pair{
		cert: cert, key: key,
		pem:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	// The key first: a crash between the two leaves a pair that does not
	// match, which load reports, rather than a new certificate whose key
	// is lost.
	if err := WriteFile(p.Path(keyFile), out.keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := WriteFile(p.Path(certFile), out.pem, 0o644); err != nil {
		return nil, err
	}
	return out, nil
}

// load reads a certificate and its key. Both missing is fs.ErrNotExist;
// one without the other, or either unreadable, is another error naming
// the file.
func (p *PKI) load(certFile, keyFile string) (*pair, error) {
	certPEM, certErr := os.ReadFile(p.Path(certFile))
	keyPEM, keyErr := os.ReadFile(p.Path(keyFile))
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return nil, fs.ErrNotExist
	// %v, not %w: one file of the two missing is not fs.ErrNotExist.
	case certErr != nil:
		return nil, fmt.Errorf("reading %s: %v", p.Path(certFile), certErr)
	case keyErr != nil:
		return nil, fmt.Errorf("reading %s: %v", p.Path(keyFile), keyErr)
	}
	kp, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", p.Path(certFile), p.Path(keyFile), err)
	}
	key, ok := kp.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ECDSA key", p.Path(keyFile))
	}
	return &pair{cert: kp.Leaf, key: key, pem: certPEM, keyPEM: keyPEM}, nil
}

// splitNames sorts names into DNS names and IP addresses, without repeats.
func splitNames(names []string) (dns []string, ips []net.IP) {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if !slices.Contains(dns, n) {
			dns = append(dns, n)
		}
	}
	return dns, ips
}

// WriteFile replaces path with data atomically (a temporary file renamed
// over it), with mode perm.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
