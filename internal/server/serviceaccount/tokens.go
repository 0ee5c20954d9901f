// Package serviceaccount issues and verifies service account tokens as
// kube-apiserver does: JWTs signed with the server's key (RS256 for RSA,
// ES256/384/512 for ECDSA), with kube's claims (iss, sub
// system:serviceaccount:<ns>:<name>, aud, exp, iat, nbf, jti and the
// private kubernetes.io claim naming the account and the object the token
// is bound to) and kube's key IDs, so that client libraries that read them
// and other systems that verify them through the OIDC discovery documents
// (discovery.go) work unchanged.
//
// A token is accepted (authenticator.go) while it is signed by a configured
// key, issued by a configured issuer, meant for one of the API's audiences,
// within its lifetime (a minute's leeway, as kube), and the service account
// (and the Secret it is bound to, if any) still exists with the UID it was
// issued for: deleting either revokes it.
//
// Tokens is safe for concurrent use; its configuration never changes.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// DefaultIssuer is the issuer of tokens when none is configured: the name
// in-cluster clients reach the API by, as k3s and kubeadm's clusters use.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// MaxTokenBytes bounds a token the authenticator parses: ours are about a
// kilobyte (RSA-2048), and one signed by a 4096-bit key with many audiences
// stays far below it.
const MaxTokenBytes = 16 << 10

// Config configures Tokens.
type Config struct {
	// Issuers are the accepted values of the iss claim (kube's repeated
	// --service-account-issuer); the first is the issuer of the tokens
	// issued. Empty means DefaultIssuer.
	Issuers []string
	// Audiences are the API's audiences (--api-audiences): a token is
	// accepted only if one of its audiences is among them, and a token
	// requested without audiences gets them. Empty means the first issuer,
	// as kube.
	Audiences []string
	// MaxExpiration shortens longer requested lifetimes
	// (--service-account-max-token-expiration); 0 means no maximum.
	MaxExpiration time.Duration
	// SigningKey signs the tokens issued; tokens signed by it are accepted.
	SigningKey crypto.Signer
	// VerificationKeys are further keys whose tokens are accepted
	// (--service-account-key-file): the keys of earlier signing keys while
	// their tokens live.
	VerificationKeys []crypto.PublicKey
	// JWKSURI is the key set's URL in the OIDC configuration
	// (--service-account-jwks-uri); empty means the JWKS path on the
	// address the client reached.
	JWKSURI string
}

// Tokens issues and verifies service account tokens.
type Tokens struct {
	issuers   []string
	audiences []string
	maxExp    time.Duration
	jwksURI   string
	signer    jose.Signer
	alg       jose.SignatureAlgorithm
	keys      []verificationKey // the signing key's first
	algs      []jose.SignatureAlgorithm
	now       func() time.Time
	verified  verifiedCache
}

type verificationKey struct {
	id  string
	alg jose.SignatureAlgorithm
	key crypto.PublicKey
}

// New returns Tokens for cfg.
func New(cfg Config) (*Tokens, error) {
	if cfg.SigningKey == nil {
		return nil, errors.New("no service account signing key")
	}
	t := &Tokens{issuers: cfg.Issuers, audiences: cfg.Audiences, maxExp: cfg.MaxExpiration, jwksURI: cfg.JWKSURI, now: time.Now}
	if len(t.issuers) == 0 {
		t.issuers = []string{DefaultIssuer}
	}
	for _, iss := range t.issuers {
		if _, err := url.Parse(iss); iss == "" || strings.Contains(iss, ":") && err != nil {
			// kube's rule: a URL, or a name without ':'.
			return nil, fmt.Errorf("service account issuer %q: contains a ':' but is not a valid URL", iss)
		}
	}
	if len(t.audiences) == 0 {
		t.audiences = t.issuers[:1]
	}
	for _, pub := range append([]crypto.PublicKey{cfg.SigningKey.Public()}, cfg.VerificationKeys...) {
		k, err := newVerificationKey(pub)
		if err != nil {
			return nil, err
		}
		t.keys = append(t.keys, k)
		if !slices.Contains(t.algs, k.alg) {
			t.algs = append(t.algs, k.alg)
		}
	}
	t.alg = t.keys[0].alg
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: t.alg, Key: jose.JSONWebKey{
		Key: cfg.SigningKey, KeyID: t.keys[0].id, Algorithm: string(t.alg), Use: "sig",
	}}, nil) // no typ header, as kube's

	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	t.signer = signer
	return t, nil
}

// newVerificationKey names a public key and its algorithm, as kube's
// signers choose it: RS256 for RSA, by curve for ECDSA.
func newVerificationKey(pub crypto.PublicKey) (verificationKey, error) {
	k := verificationKey{key: pub}
	switch p := pub.(type) {
	case *rsa.PublicKey:
		k.alg = jose.RS256
	case *ecdsa.PublicKey:
		switch p.Curve {
		case elliptic.P256():
			k.alg = jose.ES256
		case elliptic.P384():
			k.alg = jose.ES384
		case elliptic.P521():
			k.alg = jose.ES512
		default:
			return k, errors.New("service account key: an ECDSA curve other than P-256, P-384 or P-521")
		}
	default:
		return k, fmt.Errorf("service account key: a %T, not an RSA or ECDSA key", pub)
	}
	var err error
	k.id, err = keyID(pub)
	return k, err
}

// Issuer is the iss claim of the tokens issued.
func (t *Tokens) Issuer() string { return t.issuers[0] }

// Audiences are the API's audiences.
func (t *Tokens) Audiences() []string { return t.audiences }

// MaxExpiration is the longest lifetime issued; 0 for no maximum.
func (t *Tokens) MaxExpiration() time.Duration { return t.maxExp }

// Ref names an object a token is bound to.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Claims are what a token says.
type Claims struct {
	// Namespace and ServiceAccount name the account.
	Namespace      string
	ServiceAccount Ref
	// Secret is the Secret the token is bound to, if any.
	Secret *Ref
	// Audiences are the token's audiences.
	Audiences []string
	// ID is the token's unique ID (jti).
	ID string
	// IssuedAt and Expiry bound the token's lifetime.
	IssuedAt, Expiry time.Time
}

// privateClaims is kube's kubernetes.io claim (pkg/serviceaccount/claims.go).
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io"`
}

type kubernetesClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount Ref    `json:"serviceaccount"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
}

// Issue signs a token saying c, issued by the first issuer. The claims are
// written as kube's are (go-jose's builder writes a lone audience as a
// string; kube's tokens always have an array), in the same order.
func (t *Tokens) Issue(c Claims) (string, error) {
	payload := map[string]any{
		"iss": t.Issuer(),
		"sub": authn.ServiceAccountUser(c.Namespace, c.ServiceAccount.Name),
		"aud": c.Audiences,
		"exp": c.Expiry.Unix(),
		"iat": c.IssuedAt.Unix(),
		"nbf": c.IssuedAt.Unix(),
		"kubernetes.io": kubernetesClaims{
			Namespace: c.Namespace, ServiceAccount: c.ServiceAccount, Secret: c.Secret,
		},
	}
	if c.ID != "" {
		payload["jti"] = c.ID
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	sig, err := t.signer.Sign(b)
	if err != nil {
		return "", fmt.Errorf("signing a service account token: %w", err)
	}
	return sig.CompactSerialize()
}

// Reasons a token is refused, logged (at debug) and never told the client.
var (
	errNotOurs       = errors.New("not a token of this issuer")
	errTooLong       = fmt.Errorf("token longer than %d bytes", MaxTokenBytes)
	errSignature     = errors.New("invalid signature")
	errAudience      = errors.New("token audiences are not the API's")
	errExpired       = errors.New("service account token has expired")
	errNotValidYet   = errors.New("service account token is not valid yet")
	errClaims        = errors.New("service account token claims could not be validated")
	errUnsupportedTo = errors.New("service account token is bound to a kind of object this server does not serve")
)

// verify checks a token's signature, issuer, audience and lifetime, and
// returns what it says. A token of another issuer (or no JWT at all) is
// errNotOurs, so that other authenticators may accept it.
func (t *Tokens) verify(token string) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, errTooLong
	}
	h := sha256.Sum256([]byte(token))
	v, ok := t.verified.get(h)
	if !ok {
		var err error
		if v, err = t.verifyUncached(token); err != nil {
			return nil, err
		}
		t.verified.put(h, v)
	}
	if err := t.checkLifetime(v.public); err != nil {
		t.verified.forget(h)
		return nil, err
	}
	return v.claims, nil
}

// audiencesFor are those of target (the API's when nil) that a token of
// the claims c is meant for, as kube's token authenticator intersects
// them; none is errAudience. A token without audiences (kube's legacy
// ones) is meant for the API's.
func (t *Tokens) audiencesFor(c *Claims, target []string) ([]string, error) {
	if target == nil {
		target = t.audiences
	}
	auds := c.Audiences
	if len(auds) == 0 {
		auds = t.audiences
	}
	both := authn.CommonAudiences(target, auds)
	if len(both) == 0 {
		return nil, errAudience
	}
	return both, nil
}

// verifyUncached checks all of a token but its lifetime and audiences.
func (t *Tokens) verifyUncached(token string) (verifiedToken, error) {
	if !t.issuedByUs(token) {
		return verifiedToken{}, errNotOurs
	}
	tok, err := jwt.ParseSigned(token, t.algs)
	if err != nil {
		return verifiedToken{}, errNotOurs
	}
	var public jwt.Claims
	var private privateClaims
	if err := t.verifySignature(tok, &public, &private); err != nil {
		return verifiedToken{}, err
	}
	if !slices.Contains(t.issuers, public.Issuer) { // read before the signature was checked
		return verifiedToken{}, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}
	k := private.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || public.Subject != authn.ServiceAccountUser(k.Namespace, k.ServiceAccount.Name) {
		return verifiedToken{}, errClaims
	}
	if k.Pod != nil || k.Node != nil {
		return verifiedToken{}, errUnsupportedTo
	}
	c := &Claims{Namespace: k.Namespace, ServiceAccount: k.ServiceAccount, Secret: k.Secret, Audiences: public.Audience, ID: public.ID}
	if public.Expiry != nil {
		c.Expiry = public.Expiry.Time()
	}
	if public.IssuedAt != nil {
		c.IssuedAt = public.IssuedAt.Time()
	}
	return verifiedToken{public: public, claims: c}, nil
}

// checkLifetime checks exp, nbf and iat against now, with go-jose's
// minute of leeway, as kube's validator.
func (t *Tokens) checkLifetime(public jwt.Claims) error {
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: t.now()}, jwt.DefaultLeeway); {
	case errors.Is(err, jwt.ErrExpired):
		return errExpired
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return errNotValidYet
	case err != nil:
		return errClaims
	}
	return nil
}

// verifySignature reads tok's claims with the key its kid names, or with
// each key when it names none, as kube's authenticator.
func (t *Tokens) verifySignature(tok *jwt.JSONWebToken, dest ...any) error {
	kid := ""
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	for _, k := range t.keys {
		if kid != "" && k.id != kid {
			continue
		}
		if tok.Claims(k.key, dest...) == nil {
			return nil
		}
	}
	return errSignature
}

// issuedByUs reads, unverified, whether a compact JWT's iss is one of ours,
// as kube's hasCorrectIssuer: the token of another issuer is left to other
// authenticators before any signature is checked.
func (t *Tokens) issuedByUs(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	return json.Unmarshal(payload, &claims) == nil && slices.Contains(t.issuers, claims.Issuer)
}
