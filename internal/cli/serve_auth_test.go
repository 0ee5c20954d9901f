package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestServiceAccountKeyFlags checks where the signing key comes from: one
// generated into the data directory on first start and the same one later,
// or the file given; a bad file or a negative maximum is refused.
func TestServiceAccountKeyFlags(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	first, err := (&serviceAccountOptions{}).tokens(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := (&serviceAccountOptions{}).tokens(dataDir)
	if err != nil || string(again.JWKS()) != string(first.JWKS()) {
		t.Fatalf("second start: %v; keys %s, want %s", err, again.JWKS(), first.JWKS())
	}
	keyFile := filepath.Join(dataDir, generatedKeyFile)
	given, err := (&serviceAccountOptions{signingKeyFile: keyFile, issuers: []string{"https://issuer"}, audiences: []string{"a", "b"}}).tokens(t.TempDir())
	if err != nil || string(given.JWKS()) != string(first.JWKS()) || given.Issuer() != "https://issuer" || strings.Join(given.Audiences(), ",") != "a,b" {
		t.Fatalf("--service-account-signing-key-file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]serviceAccountOptions{
		"--service-account-signing-key-file":     {signingKeyFile: bad},
		"--service-account-key-file":             {keyFiles: []string{bad}},
		"--service-account-max-token-expiration": {maxExpiration: -time.Second},
	} {
		if _, err := o.tokens(dataDir); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming the flag", name, err)
		}
	}
}

// TestAuthenticationDescribed: the mode log names each way serve
// authenticates once, through the AuthenticatedGroup that wraps them.
func TestAuthenticationDescribed(t *testing.T) {
	dir := t.TempDir()
	o := &serveOptions{clientCA: filepath.Join(dir, "ca.crt"), tokenFile: filepath.Join(dir, "tokens.csv")}
	authntest.WriteFile(t, o.clientCA, string(authntest.NewCA(t).PEM))
	authntest.WriteFile(t, o.tokenFile, "t,alice,1\n")
	tokens, err := (&serviceAccountOptions{}).tokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	defer store.Close()
	a, _, err := o.authentication(store, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(a), "x509 client certificates, bearer tokens, bearer tokens in WebSocket subprotocols"; got != want {
		t.Errorf("described as %q, want %q", got, want)
	}
}
