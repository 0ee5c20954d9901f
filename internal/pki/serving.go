package pki

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// retryAfter is how long a serving certificate whose renewal failed (a
// full disk) is served before the next try: it has about 120 days left.
const retryAfter = time.Hour

// Serving hands a TLS server its serving certificate
// (tls.Config.GetCertificate). On the first handshake once the
// certificate is due (120 days before its end) it issues it again, as
// Ensure would, files included, so that a server that runs for longer
// than a certificate lives never serves an expired one; the other
// handshakes meanwhile wait for it, or are served the current one.
type Serving struct {
	p    *PKI
	ca   *pair
	want x509.Certificate // subject, names, usage
	now  func() time.Time

	mu  sync.Mutex // held while issuing, so that one handshake does it
	cur atomic.Pointer[servingCert]
}

// servingCert is a serving certificate and when to issue the next.
type servingCert struct {
	cert    tls.Certificate
	renewAt time.Time
}

func newServingCert(c *pair) *servingCert {
	return &servingCert{
		cert:    tls.Certificate{Certificate: [][]byte{c.cert.Raw}, PrivateKey: c.key, Leaf: c.cert},
		renewAt: c.cert.NotAfter.Add(-renewBefore),
	}
}

// GetCertificate returns the serving certificate, issued again if due.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.cur.Load(); s.now().Before(c.renewAt) {
		return &c.cert, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, now := s.cur.Load(), s.now()
	if now.Before(c.renewAt) { // another handshake issued it
		return &c.cert, nil
	}
	next, err := s.p.issue(leafTemplate(s.want, now), s.ca, ServingFile, ServingKeyFile)
	if err != nil {
		slog.Error("issuing the serving certificate again failed; serving the current one", "expires", c.cert.Leaf.NotAfter, "retry", retryAfter, "err", err)
		s.cur.Store(&servingCert{cert: c.cert, renewAt: now.Add(retryAfter)})
		return &c.cert, nil
	}
	slog.Info("serving certificate issued again", "expires", next.cert.NotAfter)
	nc := newServingCert(next)
	s.cur.Store(nc)
	return &nc.cert, nil
}
