package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/storage"
)

// objects is a fake Objects: resource/namespace/name -> object.
type objects map[string]Object

func (o objects) Get(_ context.Context, resource, ns, name string) (Object, error) {
	obj, ok := o[resource+"/"+ns+"/"+name]
	if !ok {
		return Object{}, fmt.Errorf("%s %s/%s: %w", resource, ns, name, storage.ErrNotFound)
	}
	return obj, nil
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newTokens(t testing.TB, cfg Config) *Tokens {
	if cfg.SigningKey == nil {
		cfg.SigningKey = ecKey(t)
	}
	tokens, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// claims are those of a token for default/builder, issued at t0 for an hour.
func claims() Claims {
	return Claims{
		Namespace: "default", ServiceAccount: Ref{Name: "builder", UID: "sa-uid"},
		Audiences: []string{DefaultIssuer}, ID: "jti-1", IssuedAt: t0, Expiry: t0.Add(time.Hour),
	}
}

func issue(t testing.TB, tokens *Tokens, c Claims) string {
	tok, err := tokens.Issue(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func authenticator(tokens *Tokens, objs objects, now time.Time) *Authenticator {
	tokens.now = func() time.Time { return now }
	return &Authenticator{Tokens: tokens, Objects: objs, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestAuthenticateAcceptsIssuedToken(t *testing.T) {
	tokens := newTokens(t, Config{})
	a := authenticator(tokens, objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}, t0.Add(time.Minute))
	u, ok := a.AuthenticateToken(t.Context(), issue(t, tokens, claims()))
	if !ok {
		t.Fatal("a token just issued was refused")
	}
	want := &authn.User{
		Name: "system:serviceaccount:default:builder", UID: "sa-uid",
		Groups:    []string{"system:serviceaccounts", "system:serviceaccounts:default"}, // system:authenticated is the union's to add
		Extra:     map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=jti-1"}},
		Audiences: []string{DefaultIssuer}, // the API's, which the token is meant for
	}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
}

// TestTokenClaims checks the token's header and claims as kube writes
// them: alg, kid (kube's keyIDFromPublicKey), and every claim.
func TestTokenClaims(t *testing.T) {
	key := ecKey(t)
	tokens := newTokens(t, Config{SigningKey: key})
	c := claims()
	c.Secret = &Ref{Name: "s", UID: "secret-uid"}
	parts := strings.Split(issue(t, tokens, c), ".")
	var header, payload map[string]any
	for i, dst := range []*map[string]any{&header, &payload} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, dst) != nil {
			t.Fatalf("part %d is not base64url JSON: %v", i, err)
		}
	}
	der, _ := x509.MarshalPKIXPublicKey(key.Public())
	sum := sha256.Sum256(der)
	if want := map[string]any{"alg": "ES256", "kid": base64.RawURLEncoding.EncodeToString(sum[:])}; !cmp.Equal(want, header) {
		t.Errorf("header %v, want %v", header, want)
	}
	want := map[string]any{
		"iss": DefaultIssuer, "sub": "system:serviceaccount:default:builder", "aud": []any{DefaultIssuer},
		"exp": float64(t0.Add(time.Hour).Unix()), "iat": float64(t0.Unix()), "nbf": float64(t0.Unix()), "jti": "jti-1",
		"kubernetes.io": map[string]any{
			"namespace":      "default",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			"secret":         map[string]any{"name": "s", "uid": "secret-uid"},
		},
	}
	if diff := cmp.Diff(want, payload); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}

// TestAuthenticateRefuses checks every reason a token is refused.
func TestAuthenticateRefuses(t *testing.T) {
	tokens := newTokens(t, Config{})
	other := newTokens(t, Config{}) // same issuer, another key
	live := objects{"serviceaccounts/default/builder": {UID: "sa-uid"}, "secrets/default/s": {UID: "secret-uid"}}
	bound := claims()
	bound.Secret = &Ref{Name: "s", UID: "secret-uid"}
	with := func(f func(*Claims)) Claims {
		c := claims()
		f(&c)
		return c
	}
	during := t0.Add(time.Minute)
	tests := []struct {
		name  string
		token string
		objs  objects
		now   time.Time
		why   string // in the reason logged
	}{
		{"expired", issue(t, tokens, claims()), live, t0.Add(time.Hour + jwt.DefaultLeeway + time.Second), "has expired"},
		{"not valid yet", issue(t, tokens, claims()), live, t0.Add(-jwt.DefaultLeeway - time.Second), "not valid yet"},
		{"forged: another key", issue(t, other, claims()), live, during, "invalid signature"},
		{"forged: claims changed", forge(t, issue(t, tokens, claims()), "builder", "admin"), live, during, "invalid signature"},
		{"wrong audience", issue(t, tokens, with(func(c *Claims) { c.Audiences = []string{"vault"} })), live, during, "audiences"},
		{"service account deleted", issue(t, tokens, claims()), objects{}, during, "not found"},
		{"service account recreated", issue(t, tokens, claims()), objects{"serviceaccounts/default/builder": {UID: "new"}}, during, "does not match claim"},
		{"service account being deleted", issue(t, tokens, claims()), objects{"serviceaccounts/default/builder": {UID: "sa-uid", Deleting: t0}}, t0.Add(2 * time.Minute), "has been deleted"},
		{"bound secret deleted", issue(t, tokens, bound), objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}, during, "invalidated"},
		{"bound secret recreated", issue(t, tokens, bound), objects{"serviceaccounts/default/builder": {UID: "sa-uid"}, "secrets/default/s": {UID: "new"}}, during, "does not match service account secret ref"},
		{"bound secret being deleted", issue(t, tokens, bound), objects{"serviceaccounts/default/builder": {UID: "sa-uid"}, "secrets/default/s": {UID: "secret-uid", Deleting: t0}}, t0.Add(2 * time.Minute), "invalidated"},
		{"another issuer", issue(t, newTokens(t, Config{Issuers: []string{"https://elsewhere"}}), claims()), live, during, "not a token of this issuer"},
		{"no namespace", issue(t, tokens, with(func(c *Claims) { c.Namespace = "" })), live, during, "could not be validated"},
		{"alg none", unsigned(t, issue(t, tokens, claims())), live, during, "not a token of this issuer"},
		{"too long", issue(t, tokens, with(func(c *Claims) { c.Audiences = append(c.Audiences, strings.Repeat("a", MaxTokenBytes)) })), live, during, "longer than"},
		{"not a JWT", "a.b.c", live, during, "not a token of this issuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := authenticator(tokens, tt.objs, tt.now)
			if u, ok := a.AuthenticateToken(t.Context(), tt.token); ok {
				t.Fatalf("accepted as %v", u)
			}
			if _, err := a.authenticate(context.Background(), tt.token); err == nil || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("refused for %v, want %q", err, tt.why)
			}
		})
	}
}

// forge replaces text in a token's claims, keeping its signature.
func forge(t *testing.T, token, old, new string) string {
	parts := strings.Split(token, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(strings.ReplaceAll(string(b), old, new)))
	return strings.Join(parts, ".")
}

// unsigned is token with alg none and no signature.
func unsigned(t *testing.T, token string) string {
	parts := strings.Split(token, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
}

// TestVerificationKeys checks that a token signed by an earlier key given
// as a verification key is accepted, and that a key with another algorithm
// (RSA beside ECDSA) is tried by its kid.
func TestVerificationKeys(t *testing.T) {
	old, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	before := newTokens(t, Config{SigningKey: old})
	now := newTokens(t, Config{VerificationKeys: []crypto.PublicKey{old.Public()}})
	a := authenticator(now, objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}, t0)
	if _, ok := a.AuthenticateToken(t.Context(), issue(t, before, claims())); !ok {
		t.Fatal("a token of the earlier key was refused")
	}
	if _, ok := a.AuthenticateToken(t.Context(), issue(t, now, claims())); !ok {
		t.Fatal("a token of the signing key was refused")
	}
}

// TestAudiences checks that a token is accepted when one of its audiences
// is the API's, and that a token requested without audiences gets them.
func TestAudiences(t *testing.T) {
	tokens := newTokens(t, Config{Audiences: []string{"api", "other"}})
	a := authenticator(tokens, objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}, t0)
	c := claims()
	c.Audiences = []string{"vault", "other"}
	if _, ok := a.AuthenticateToken(t.Context(), issue(t, tokens, c)); !ok {
		t.Fatal("a token with one of the API's audiences was refused")
	}
	if got := tokens.Audiences(); !cmp.Equal(got, []string{"api", "other"}) {
		t.Errorf("Audiences %v", got)
	}
	if got := newTokens(t, Config{Issuers: []string{"https://a", "https://b"}}).Audiences(); !cmp.Equal(got, []string{"https://a"}) {
		t.Errorf("default audiences %v, want the first issuer", got)
	}
}

// TestJWKSVerifiesToken checks that the published key set verifies a token,
// as a relying party would, and that the configuration points to it.
func TestJWKSVerifiesToken(t *testing.T) {
	tokens := newTokens(t, Config{})
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(tokens.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(issue(t, tokens, claims()), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 || keys[0].Use != "sig" || keys[0].Algorithm != "ES256" || !keys[0].IsPublic() {
		t.Fatalf("keys of kid %q: %+v", tok.Headers[0].KeyID, keys)
	}
	var c jwt.Claims
	if err := tok.Claims(keys[0].Key, &c); err != nil || c.Subject != "system:serviceaccount:default:builder" {
		t.Fatalf("verified with the JWKS key: %v %+v", err, c)
	}
	var conf map[string]any
	if err := json.Unmarshal(tokens.OpenIDConfiguration("https://h/openid/v1/jwks"), &conf); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer": DefaultIssuer, "jwks_uri": "https://h/openid/v1/jwks", "response_types_supported": []any{"id_token"},
		"subject_types_supported": []any{"public"}, "id_token_signing_alg_values_supported": []any{"ES256"},
	}
	if diff := cmp.Diff(want, conf); diff != "" {
		t.Errorf("configuration (-want +got):\n%s", diff)
	}
	given := newTokens(t, Config{JWKSURI: "https://public.example/keys"})
	if err := json.Unmarshal(given.OpenIDConfiguration("https://h/openid/v1/jwks"), &conf); err != nil || conf["jwks_uri"] != "https://public.example/keys" {
		t.Errorf("jwks_uri %v (%v), want the configured one", conf["jwks_uri"], err)
	}
}

// TestEnsureSigningKey checks that a key is generated once, private to its
// owner, and read back on the next start.
func TestEnsureSigningKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sa.key")
	first, generated, err := EnsureSigningKey(path)
	if err != nil || !generated {
		t.Fatalf("first start: generated %v, %v", generated, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi.Mode(), err)
	}
	second, generated, err := EnsureSigningKey(path)
	if err != nil || generated || !second.Public().(*rsa.PublicKey).Equal(first.Public()) {
		t.Fatalf("second start: generated %v, same key %v, %v", generated, second.Public().(*rsa.PublicKey).Equal(first.Public()), err)
	}
	pubs, err := LoadVerificationKeys(path)
	if err != nil || len(pubs) != 1 || !first.Public().(*rsa.PublicKey).Equal(pubs[0]) {
		t.Fatalf("verification keys of the key file: %v %v", pubs, err)
	}
}

// TestEnsureSigningKeyRace: a server that finds the key file written by
// another while it generated its own uses the other's, as every server
// sharing the path must.
func TestEnsureSigningKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sa.key")
	var theirs crypto.Signer
	key, generated, err := ensureSigningKey(path, func() (*rsa.PrivateKey, error) {
		var err error
		theirs, _, err = EnsureSigningKey(path) // the other server, first
		if err != nil {
			return nil, err
		}
		return rsa.GenerateKey(rand.Reader, 2048)
	})
	if err != nil || generated || !key.Public().(*rsa.PublicKey).Equal(theirs.Public()) {
		t.Fatalf("generated %v, %v; want the other server's key", generated, err)
	}
}

func TestLoadKeysRejects(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":    "",
		"not pem":  "hello",
		"bad der":  "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
		"too long": strings.Repeat("x", maxKeyFileBytes+1),
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSigningKey(path); err == nil {
			t.Errorf("%s: LoadSigningKey accepted it", name)
		}
		if _, err := LoadVerificationKeys(path); err == nil {
			t.Errorf("%s: LoadVerificationKeys accepted it", name)
		}
	}
}

// TestVerifiedTokenLifetime checks that a token verified once (and so
// remembered) is still refused once expired, and after its account's
// deletion.
func TestVerifiedTokenLifetime(t *testing.T) {
	tokens := newTokens(t, Config{})
	objs := objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}
	token := issue(t, tokens, claims())
	if _, ok := authenticator(tokens, objs, t0).AuthenticateToken(t.Context(), token); !ok {
		t.Fatal("refused when issued")
	}
	if _, ok := tokens.verified.get(sha256.Sum256([]byte(token))); !ok {
		t.Fatal("a verified token was not remembered")
	}
	if _, err := authenticator(tokens, objects{}, t0).authenticate(context.Background(), token); err == nil {
		t.Fatal("accepted after its account's deletion")
	}
	if _, err := authenticator(tokens, objs, t0.Add(2*time.Hour)).authenticate(context.Background(), token); err != errExpired {
		t.Fatalf("two hours later: %v, want expired", err)
	}
	if _, ok := tokens.verified.get(sha256.Sum256([]byte(token))); ok {
		t.Fatal("an expired token is still remembered")
	}
}

// TestVerifiedCacheBound checks that the cache holds at most its bound.
func TestVerifiedCacheBound(t *testing.T) {
	var c verifiedCache
	for i := range maxVerifiedTokens + 10 {
		c.put(sha256.Sum256([]byte(fmt.Sprint(i))), verifiedToken{})
	}
	if len(c.tokens) != maxVerifiedTokens {
		t.Fatalf("%d tokens remembered, want %d", len(c.tokens), maxVerifiedTokens)
	}
}
