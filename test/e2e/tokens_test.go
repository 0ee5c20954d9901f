package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/listwatch/listwatch/internal/server/serviceaccount"
)

// adminTokenFlags are the flags of a server whose static token "admin" is
// in system:masters, and which lets every user do anything: these tests
// are of authentication.
func adminTokenFlags(t *testing.T) []string {
	return []string{"--token-auth-file", tokenFile(t, `admin,admin,1,"system:masters"`), "--authorization-mode", "AlwaysAllow"}
}

// createToken asks for a token of namespace default's account sa.
func (s *server) createToken(t *testing.T, sa string) string {
	t.Helper()
	code, b := s.bearer(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts/"+sa+"/token", `{"spec":{}}`)
	var tr struct{ Status struct{ Token string } }
	if err := json.Unmarshal(b, &tr); err != nil || code != http.StatusCreated || tr.Status.Token == "" {
		t.Fatalf("token request: %d %s", code, b)
	}
	return tr.Status.Token
}

const defaultConfigMaps = "/api/v1/namespaces/default/configmaps"

// TestServiceAccountTokens drives the binary: a token requested for an
// account authenticates it, and survives a restart (the generated key is
// kept); forged, expired, wrong-audience and deleted-account tokens get 401
// with no detail; the published key set verifies a token.
func TestServiceAccountTokens(t *testing.T) {
	flags := adminTokenFlags(t)
	s := startServer(t, flags...)
	if code, b := s.bearer(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"builder"}}`); code != http.StatusCreated {
		t.Fatalf("creating an account: %d %s", code, b)
	}
	token := s.createToken(t, "builder")
	if code, b := s.bearer(t, token, "GET", defaultConfigMaps, ""); code != http.StatusOK {
		t.Fatalf("list with the account's token: %d %s", code, b)
	}
	s.stop(t)
	s.start(t, flags...)
	if code, b := s.bearer(t, token, "GET", defaultConfigMaps, ""); code != http.StatusOK {
		t.Fatalf("the token after a restart: %d %s", code, b)
	}

	key, err := serviceaccount.LoadSigningKey(filepath.Join(s.dataDir, "service-account.key"))
	if err != nil {
		t.Fatalf("the generated key: %v", err)
	}
	ours, err := serviceaccount.New(serviceaccount.Config{SigningKey: key})
	if err != nil {
		t.Fatal(err)
	}
	_, b := s.bearer(t, "admin", "GET", "/api/v1/namespaces/default/serviceaccounts/builder", "")
	var sa struct{ Metadata struct{ UID string } }
	if err := json.Unmarshal(b, &sa); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	signed := func(f func(*serviceaccount.Claims)) string {
		c := serviceaccount.Claims{
			Namespace: "default", ServiceAccount: serviceaccount.Ref{Name: "builder", UID: sa.Metadata.UID},
			Audiences: []string{serviceaccount.DefaultIssuer}, IssuedAt: now, Expiry: now.Add(time.Hour),
		}
		f(&c)
		tok, err := ours.Issue(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if code, b := s.bearer(t, signed(func(*serviceaccount.Claims) {}), "GET", defaultConfigMaps, ""); code != http.StatusOK {
		t.Fatalf("a token signed with the key in the data directory: %d %s", code, b)
	}
	parts := strings.Split(token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = bytes.ReplaceAll(payload, []byte("builder"), []byte("mallory"))
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	for name, tok := range map[string]string{
		"expired": signed(func(c *serviceaccount.Claims) {
			c.IssuedAt, c.Expiry = now.Add(-2*time.Hour), now.Add(-time.Hour)
		}),
		"wrong audience": signed(func(c *serviceaccount.Claims) { c.Audiences = []string{"vault"} }),
		"forged":         forged,
	} {
		if code, b := s.bearer(t, tok, "GET", defaultConfigMaps, ""); code != http.StatusUnauthorized || !strings.Contains(string(b), `"message":"Unauthorized"`) {
			t.Errorf("%s token: %d %s, want 401 Unauthorized", name, code, b)
		}
	}

	code, b := s.bearer(t, "admin", "GET", "/openid/v1/jwks", "")
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil || code != http.StatusOK {
		t.Fatalf("key set: %d %s", code, b)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.Claims
	if keys := set.Key(parsed.Headers[0].KeyID); len(keys) != 1 || parsed.Claims(keys[0].Key, &claims) != nil || claims.Subject != "system:serviceaccount:default:builder" {
		t.Fatalf("the key set %s did not verify the token", b)
	}

	if code, b := s.bearer(t, "admin", "DELETE", "/api/v1/namespaces/default/serviceaccounts/builder", ""); code != http.StatusOK {
		t.Fatalf("deleting the account: %d %s", code, b)
	}
	if code, b := s.bearer(t, token, "GET", defaultConfigMaps, ""); code != http.StatusUnauthorized {
		t.Fatalf("the token of a deleted account: %d %s, want 401", code, b)
	}
}
