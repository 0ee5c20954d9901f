package serviceaccount

import (
	"crypto/sha256"
	"sync"

	"github.com/go-jose/go-jose/v4/jwt"
)

// maxVerifiedTokens bounds the tokens verifiedCache remembers: a server's
// clients rarely hold more live tokens, and a full cache costs only a
// signature check per request for the tokens beyond it.
const maxVerifiedTokens = 4096

// verifiedCache remembers the tokens whose signature, issuer, audience and
// claims were checked, by their SHA-256, so that a client sending the same
// token with every request pays for the signature (an RSA-2048 or P-256
// check is nearly all of a token's cost) once. A hit checks the token's
// lifetime again; the account and Secret are read on every request, so a
// deletion revokes at once. Only tokens signed by our keys get in.
type verifiedCache struct {
	mu     sync.Mutex
	tokens map[[sha256.Size]byte]verifiedToken // guarded by mu
}

type verifiedToken struct {
	public jwt.Claims // for its lifetime
	claims *Claims
}

func (c *verifiedCache) get(h [sha256.Size]byte) (verifiedToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.tokens[h]
	return v, ok
}

// put remembers a verified token, first making room by forgetting one
// (the map's pick) if full.
func (c *verifiedCache) put(h [sha256.Size]byte, v verifiedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens == nil {
		c.tokens = map[[sha256.Size]byte]verifiedToken{}
	}
	if len(c.tokens) >= maxVerifiedTokens {
		for k := range c.tokens {
			delete(c.tokens, k)
			break
		}
	}
	c.tokens[h] = v
}

// forget drops a token whose lifetime is over.
func (c *verifiedCache) forget(h [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tokens, h)
}
