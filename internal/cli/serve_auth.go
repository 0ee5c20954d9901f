package cli

import (
	"crypto/x509"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// authentication builds the authenticators the flags configure: x509
// client certificates (--client-ca-file), then bearer tokens in the
// Authorization header and in the WebSocket subprotocol (--token-auth-file).
// Every user they accept is in system:authenticated, as in kube.
// It returns a nil Authenticator when neither is set (every request is
// anonymous), and the CA pool the TLS server asks client certificates of.
func (o *serveOptions) authentication() (authn.Authenticator, *x509.CertPool, error) {
	var union authn.Union
	var clientCAs *x509.CertPool
	if o.clientCA != "" {
		pool, err := authn.LoadClientCA(o.clientCA)
		if err != nil {
			return nil, nil, err
		}
		clientCAs = pool
		union = append(union, authn.ClientCert{Roots: pool})
	}
	if o.tokenFile != "" {
		tokens, err := authn.LoadTokenFile(o.tokenFile)
		if err != nil {
			return nil, nil, err
		}
		union = append(union, authn.BearerToken{Tokens: tokens}, authn.WebSocketToken{Tokens: tokens})
	}
	if len(union) == 0 {
		return nil, nil, nil
	}
	return authn.AuthenticatedGroup{Authenticator: union}, clientCAs, nil
}

// inFlightLimit turns a limit flag, where 0 means no limit as in
// kube-apiserver, into server.Config's terms (negative for no limit).
func inFlightLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
