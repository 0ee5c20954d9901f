package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/internal/pki"
)

var names = []string{"localhost", "127.0.0.1", "::1", "host.example", "10.1.2.3"}

// ensure runs pki.Ensure on dir at now, failing the test on an error.
func ensure(t *testing.T, dir string, now time.Time, names ...string) *pki.PKI {
	t.Helper()
	p, err := pki.Ensure(pki.Config{Dir: dir, Names: names, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readCert(t *testing.T, p *pki.PKI, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(p.Path(file))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lasts says whether c expires d after now, to the second (certificates'
// precision).
func lasts(c *x509.Certificate, now time.Time, d time.Duration) bool {
	short := d - c.NotAfter.Sub(now) // NotAfter drops now's fraction of a second
	return short >= 0 && short < time.Second
}

func pool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

// TestEnsureMakes: a first start makes two P-256 CAs of 10 years, a
// serving certificate of a year for every name, signed by the server CA,
// and an admin certificate in system:masters signed by the client CA
// alone; keys are 0600 and the directory 0700.
func TestEnsureMakes(t *testing.T) {
	now := time.Now()
	p := ensure(t, filepath.Join(t.TempDir(), "pki"), now, names...)
	want := []string{pki.ServerCAFile, pki.ClientCAFile, pki.ServingFile, "client-admin.crt"}
	if diff := cmp.Diff(want, p.Made); diff != "" {
		t.Errorf("made (-want +got)\n%s", diff)
	}
	serverCA, clientCA := readCert(t, p, pki.ServerCAFile), readCert(t, p, pki.ClientCAFile)
	serving, admin := readCert(t, p, pki.ServingFile), readCert(t, p, "client-admin.crt")
	for _, c := range []*x509.Certificate{serverCA, clientCA, serving, admin} {
		if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s: key %T, want ECDSA P-256", c.Subject.CommonName, c.PublicKey)
		}
	}
	for _, ca := range []*x509.Certificate{serverCA, clientCA} {
		if !ca.IsCA || !lasts(ca, now, 10*365*24*time.Hour) {
			t.Errorf("%s: CA %v until %v, want a CA of 10 years", ca.Subject.CommonName, ca.IsCA, ca.NotAfter)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: pool(serverCA), DNSName: "host.example"}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	for _, n := range names {
		if err := serving.VerifyHostname(n); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	if !lasts(serving, now, 365*24*time.Hour) {
		t.Errorf("serving certificate until %v, want a year", serving.NotAfter)
	}
	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool(clientCA), KeyUsages: clientAuth}); err != nil {
		t.Errorf("admin certificate: %v", err)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool(serverCA), KeyUsages: clientAuth}); err == nil {
		t.Error("the server CA verifies the admin certificate: the CAs are one")
	}
	if admin.Subject.CommonName != pki.AdminUser || !slices.Equal(admin.Subject.Organization, []string{pki.AdminGroup}) {
		t.Errorf("admin subject %v, want CN=%s O=%s", admin.Subject, pki.AdminUser, pki.AdminGroup)
	}
	modes := map[string]os.FileMode{
		".": 0o700, "server-ca.key": 0o600, "client-ca.key": 0o600, "serving.key": 0o600, "client-admin.key": 0o600,
		pki.ServerCAFile: 0o644, pki.ServingFile: 0o644,
	}
	for f, want := range modes {
		if fi, err := os.Stat(p.Path(f)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", f, fi.Mode(), err, want)
		}
	}
}

// TestEnsureReuses: a later start with the same or fewer names writes
// nothing and returns what the first made.
func TestEnsureReuses(t *testing.T) {
	dir, now := t.TempDir(), time.Now()
	first := ensure(t, dir, now, names...)
	for _, ns := range [][]string{names, names[:2]} {
		again := ensure(t, dir, now.Add(200*24*time.Hour), ns...)
		if len(again.Made) != 0 || string(again.AdminCert) != string(first.AdminCert) || string(again.ServerCA) != string(first.ServerCA) {
			t.Errorf("with names %v: made %v, want everything reused", ns, again.Made)
		}
	}
}

// TestEnsureIssuesAgain: a certificate missing a name, with 120 days or
// less to live, or deleted is issued again, by the same CAs.
func TestEnsureIssuesAgain(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		later time.Time
		names []string
		prep  func(t *testing.T, p *pki.PKI)
		want  []string
	}{
		{"a new name", now, append(names, "new.example"), nil, []string{pki.ServingFile}},
		{"a new address", now, append(names, "10.9.9.9"), nil, []string{pki.ServingFile}},
		{"121 days left", now.Add(244 * 24 * time.Hour), names, nil, nil},
		{"120 days left", now.Add(245 * 24 * time.Hour), names, nil, []string{pki.ServingFile, "client-admin.crt"}},
		{"expired", now.Add(400 * 24 * time.Hour), names, nil, []string{pki.ServingFile, "client-admin.crt"}},
		{"deleted", now, names, func(t *testing.T, p *pki.PKI) {
			for _, f := range []string{pki.ServingFile, pki.ServingKeyFile} {
				if err := os.Remove(p.Path(f)); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{pki.ServingFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first := ensure(t, dir, now, names...)
			if tt.prep != nil {
				tt.prep(t, first)
			}
			again := ensure(t, dir, tt.later, tt.names...)
			if diff := cmp.Diff(tt.want, again.Made); diff != "" {
				t.Fatalf("made (-want +got)\n%s", diff)
			}
			if string(again.ServerCA) != string(first.ServerCA) {
				t.Error("the server CA changed")
			}
			serving := readCert(t, again, pki.ServingFile)
			if _, err := serving.Verify(x509.VerifyOptions{Roots: pool(readCert(t, first, pki.ServerCAFile)), CurrentTime: tt.later}); err != nil {
				t.Errorf("serving certificate: %v", err)
			}
			for _, n := range tt.names {
				if err := serving.VerifyHostname(n); err != nil {
					t.Errorf("serving certificate: %v", err)
				}
			}
		})
	}
}

// TestEnsureErrors: a CA is never replaced: an expired, half-present or
// unreadable CA is an error naming its files; so is an unreadable
// certificate, and a key that is not the certificate's.
func TestEnsureErrors(t *testing.T) {
	now := time.Now()
	write := func(file, content string) func(t *testing.T, p *pki.PKI) {
		return func(t *testing.T, p *pki.PKI) {
			if err := os.WriteFile(p.Path(file), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(file string) func(t *testing.T, p *pki.PKI) {
		return func(t *testing.T, p *pki.PKI) {
			if err := os.Remove(p.Path(file)); err != nil {
				t.Fatal(err)
			}
		}
	}
	swapKey := func(t *testing.T, p *pki.PKI) {
		b, err := os.ReadFile(p.Path("client-admin.key"))
		if err != nil {
			t.Fatal(err)
		}
		write(pki.ServingKeyFile, string(b))(t, p)
	}
	nothing := func(*testing.T, *pki.PKI) {}
	tests := []struct {
		name  string
		prep  func(t *testing.T, p *pki.PKI)
		later time.Time
		want  []string
	}{
		{"a corrupt CA certificate", write(pki.ServerCAFile, "garbage"), now, []string{"server-ca.crt", "never replaced"}},
		{"a CA without its key", remove("client-ca.key"), now, []string{"client-ca.key", "never replaced", "remove"}},
		{"a CA key without its certificate", remove(pki.ClientCAFile), now, []string{"client-ca.crt", "never replaced"}},
		{"an expired CA", nothing, now.Add(11 * 365 * 24 * time.Hour), []string{"server-ca.crt", "expired"}},
		{"a corrupt certificate", write(pki.ServingFile, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), now, []string{"serving.crt", "issued again"}},
		{"a key not the certificate's", swapKey, now, []string{"serving.key", "does not match"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prep(t, ensure(t, dir, now, names...))
			_, err := pki.Ensure(pki.Config{Dir: dir, Names: names, Now: func() time.Time { return tt.later }})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestServingNames(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	got := pki.ServingNames("10.0.0.7", []string{"api.example", "192.0.2.1"})
	for _, want := range []string{"localhost", "127.0.0.1", "::1", host, "10.0.0.7", "api.example", "192.0.2.1"} {
		if !slices.Contains(got, want) {
			t.Errorf("names %v lack %s", got, want)
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && !slices.Contains(got, n.IP.String()) {
			t.Errorf("names %v lack the interface address %s", got, n.IP)
		}
	}
	for _, every := range []string{"0.0.0.0", "::", ""} {
		if got := pki.ServingNames(every, nil); slices.Contains(got, every) || slices.Contains(got, "0.0.0.0") {
			t.Errorf("listening on %q: names %v hold the unspecified address", every, got)
		}
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"api.example.com": true, "API.Example": true, "*.example.com": true, "host": true,
		"10.0.0.1": true, "fd00::1": true,
		"": false, "https://api.example": false, "api example": false, "-api.example": false,
		"api..example": false, "a.*.example": false, strings.Repeat("a", 64) + ".example": false,
		strings.Repeat("a.", 127) + "a": false,
	} {
		if err := pki.CheckName(name); (err == nil) != ok {
			t.Errorf("%q: %v, want ok %v", name, err, ok)
		}
	}
}

func TestKubeconfigServer(t *testing.T) {
	for host, want := range map[string]string{
		"":              "https://127.0.0.1:6443",
		"0.0.0.0":       "https://127.0.0.1:6443",
		"::":            "https://127.0.0.1:6443",
		"127.0.0.1":     "https://127.0.0.1:6443",
		"::1":           "https://[::1]:6443",
		"10.0.0.7":      "https://10.0.0.7:6443",
		"api.example":   "https://api.example:6443",
		"fd00::1":       "https://[fd00::1]:6443",
		"localhost":     "https://localhost:6443",
		"192.168.0.100": "https://192.168.0.100:6443",
	} {
		if got := pki.KubeconfigServer(host, 6443); got != want {
			t.Errorf("%q: %s, want %s", host, got, want)
		}
	}
}

// TestWriteKubeconfig: the admin kubeconfig is 0600 and the client
// library reads from it the server, the server CA and the admin's
// certificate and key.
func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	p := ensure(t, filepath.Join(dir, "pki"), time.Now(), names...)
	path := filepath.Join(dir, pki.KubeconfigFile)
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteKubeconfig(path, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v, want mode 0600", fi.Mode(), err)
	}
	t.Setenv("HOME", dir)
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{cfg.Host, string(cfg.TLS.CAData), string(cfg.TLS.CertData), string(cfg.TLS.KeyData)}
	want := []string{"https://127.0.0.1:6443", string(p.ServerCA), string(p.AdminCert), string(p.AdminKey)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
