package serviceaccount

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"testing"
)

// BenchmarkAuthenticate is the cost a service account token adds to a
// request: parsing, the signature check and the claims, with the account
// read from memory (the store's read is the backend's Get).
func BenchmarkAuthenticate(b *testing.B) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, generatedKeyBits)
	if err != nil {
		b.Fatal(err)
	}
	for name, key := range map[string]crypto.Signer{"RS256": rsaKey, "ES256": ecKey(b)} {
		b.Run(name, func(b *testing.B) {
			tokens := newTokens(b, Config{SigningKey: key})
			a := authenticator(tokens, objects{"serviceaccounts/default/builder": {UID: "sa-uid"}}, t0)
			token := issue(b, tokens, claims())
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := a.AuthenticateToken(b.Context(), token); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
