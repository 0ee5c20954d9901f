package cli

import (
	"crypto"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/serviceaccount"
	"github.com/listwatch/listwatch/storage"
)

// authentication builds the authenticators the flags configure: x509
// client certificates (--client-ca-file), then bearer tokens in the
// Authorization header and in the WebSocket subprotocol (--token-auth-file),
// then, with either, the service account tokens saTokens issued, whose
// accounts are read from store. Every user they accept is in
// system:authenticated, as in kube. It returns a nil Authenticator when
// neither flag is set (every request is anonymous), and the CA pool the
// TLS server asks client certificates of.
func (o *serveOptions) authentication(store storage.Interface, saTokens *serviceaccount.Tokens) (authn.Authenticator, *x509.CertPool, error) {
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
	sa := &serviceaccount.Authenticator{Tokens: saTokens, Objects: serviceaccount.StoreObjects{Store: store}, Log: slog.Default()}
	union = append(union, authn.BearerToken{Tokens: sa}, authn.WebSocketToken{Tokens: sa})
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

// serviceAccountOptions are kube-apiserver's service account token flags.
type serviceAccountOptions struct {
	signingKeyFile string
	keyFiles       []string
	issuers        []string
	audiences      []string
	maxExpiration  time.Duration
	jwksURI        string
}

// generatedKeyFile is the signing key made in the data directory when
// --service-account-signing-key-file is not given.
const generatedKeyFile = "service-account.key"

func (o *serviceAccountOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.signingKeyFile, "service-account-signing-key-file", "", "PEM private key (RSA or ECDSA) service account tokens are signed with; default: one generated on first start into <data-dir>/"+generatedKeyFile)
	f.StringArrayVar(&o.keyFiles, "service-account-key-file", nil, "PEM file of further public or private keys whose service account tokens are accepted (rotation); repeatable")
	f.StringArrayVar(&o.issuers, "service-account-issuer", nil, "issuer of service account tokens (iss); the first signs, every one is accepted; repeatable (default "+serviceaccount.DefaultIssuer+")")
	f.StringSliceVar(&o.audiences, "api-audiences", nil, "audiences a service account token must have one of, and that tokens requested without audiences get (default: the first issuer)")
	f.StringVar(&o.jwksURI, "service-account-jwks-uri", "", "URL of the key set in the OIDC configuration at /.well-known/openid-configuration (default: /openid/v1/jwks on the address the client reached)")
	f.DurationVar(&o.maxExpiration, "service-account-max-token-expiration", 0, "longest lifetime of a requested service account token; longer requests are shortened (0: no maximum)")
}

// tokens loads the keys and returns the Tokens the flags configure; with no
// signing key flag it generates one into dataDir on first start (0600) and
// reuses it later, so that tokens outlive restarts. Servers sharing an
// etcd store must be given the same key.
func (o *serviceAccountOptions) tokens(dataDir string) (*serviceaccount.Tokens, error) {
	if o.maxExpiration < 0 {
		return nil, fmt.Errorf("--service-account-max-token-expiration %v: must not be negative", o.maxExpiration)
	}
	var key crypto.Signer
	var err error
	if o.signingKeyFile != "" {
		if key, err = serviceaccount.LoadSigningKey(o.signingKeyFile); err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
	} else {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating data directory: %w", err)
		}
		path := filepath.Join(dataDir, generatedKeyFile)
		var generated bool
		if key, generated, err = serviceaccount.EnsureSigningKey(path); err != nil {
			return nil, fmt.Errorf("the service account signing key %s: %w", path, err)
		}
		if generated {
			slog.Info("generated the service account signing key", "path", path)
		}
	}
	var verify []crypto.PublicKey
	for _, f := range o.keyFiles {
		keys, err := serviceaccount.LoadVerificationKeys(f)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
		verify = append(verify, keys...)
	}
	return serviceaccount.New(serviceaccount.Config{
		Issuers: o.issuers, Audiences: o.audiences, MaxExpiration: o.maxExpiration, SigningKey: key, VerificationKeys: verify, JWKSURI: o.jwksURI,
	})
}
