package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/pki"
)

// TestServingIssuesAgainWhenDue: a running server's serving certificate
// is issued again, once, by the first handshakes after it is due (120
// days before its end), by the same CA and for the same names, and
// written where the next start finds it.
func TestServingIssuesAgainWhenDue(t *testing.T) {
	start := time.Now()
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	dir := t.TempDir()
	p, err := pki.Ensure(pki.Config{Dir: dir, Names: names, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	get := func() *tls.Certificate {
		t.Helper()
		c, err := p.Serving.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := get()
	clock.Store(start.Add(244 * 24 * time.Hour).UnixNano())
	if get() != first {
		t.Fatal("issued again with 121 days left")
	}
	clock.Store(start.Add(245 * 24 * time.Hour).UnixNano())
	var wg sync.WaitGroup
	got := make([]*tls.Certificate, 8)
	for i := range got {
		wg.Go(func() { got[i] = get() })
	}
	wg.Wait()
	renewed := got[0]
	for _, c := range got {
		if c != renewed {
			t.Fatal("concurrent handshakes got different certificates: issued more than once")
		}
	}
	if renewed == first || renewed.Leaf.NotAfter.Before(now().Add(364*24*time.Hour)) {
		t.Fatalf("due: got the certificate until %v, want a new one of a year", renewed.Leaf.NotAfter)
	}
	ca := readCert(t, p, pki.ServerCAFile)
	if _, err := renewed.Leaf.Verify(x509.VerifyOptions{Roots: pool(ca), CurrentTime: now()}); err != nil {
		t.Errorf("renewed certificate: %v", err)
	}
	for _, n := range names {
		if err := renewed.Leaf.VerifyHostname(n); err != nil {
			t.Error(err)
		}
	}
	if onDisk := readCert(t, p, pki.ServingFile); !onDisk.Equal(renewed.Leaf) {
		t.Error("the renewed certificate is not the one on disk")
	}
	if again := ensure(t, dir, now(), names...); slices.Contains(again.Made, pki.ServingFile) {
		t.Errorf("the next start made %v, want the renewed serving certificate reused", again.Made)
	}
}
