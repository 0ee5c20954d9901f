package etcdstore_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/listwatch/listwatch/storage/etcd"
	"github.com/listwatch/listwatch/test/interop"
)

// TestEtcdMutualTLS checks Config.TLS against an etcd that serves clients
// over TLS and requires a client certificate.
func TestEtcdMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil, x509.ExtKeyUsageAny)
	writeCert(t, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	writeCert(t, dir, "client", ca, caKey, x509.ExtKeyUsageClientAuth)
	cli := interop.RunEtcd(t, func(cfg *embed.Config) {
		for _, urls := range [][]neturl.URL{cfg.ListenClientUrls, cfg.AdvertiseClientUrls} {
			for i := range urls {
				urls[i].Scheme = "https"
			}
		}
		cfg.ClientTLSInfo.CertFile = filepath.Join(dir, "server.pem")
		cfg.ClientTLSInfo.KeyFile = filepath.Join(dir, "server-key.pem")
		cfg.ClientTLSInfo.TrustedCAFile = filepath.Join(dir, "ca.pem")
		cfg.ClientTLSInfo.ClientCertAuth = true
	})
	// RunEtcd's own client speaks plaintext: only its endpoint serves here.
	cfg := etcd.Config{
		Endpoints:   []string{"https://" + cli.Endpoints()[0]},
		DialTimeout: 5 * time.Second,
		TLS: etcd.TLSConfig{
			CAFile:   filepath.Join(dir, "ca.pem"),
			CertFile: filepath.Join(dir, "client.pem"),
			KeyFile:  filepath.Join(dir, "client-key.pem"),
		},
	}
	s, err := etcd.New(cfg)
	if err != nil {
		t.Fatalf("New over mutual TLS: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	mustCreate(t, s, "/k", "v")

	cfg.TLS.CertFile, cfg.TLS.KeyFile = "", ""
	cfg.DialTimeout = 500 * time.Millisecond
	if s, err := etcd.New(cfg); err == nil {
		s.Close()
		t.Error("New without a client certificate: no error")
	}
}

// writeCert writes name.pem and name-key.pem to dir: a CA if parent is nil,
// else a certificate for 127.0.0.1 that parent signs.
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
