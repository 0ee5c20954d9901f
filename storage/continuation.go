package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// continueToken is what a continue string holds: the revision the first page
// was read at and the next key, relative to the list's prefix so that a token
// can never reach outside it. The shape follows kube-apiserver's tokens.
type continueToken struct {
	Version  string `json:"v"`
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

const continueVersion = "listwatch/v1"

// EncodeContinue returns the continue token for a list under prefix read at
// revision whose next page starts at nextKey (which must start with prefix).
func EncodeContinue(prefix string, revision int64, nextKey string) string {
	b, _ := json.Marshal(continueToken{Version: continueVersion, Revision: revision, Start: nextKey[len(prefix):]})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeContinue parses a token made by EncodeContinue for prefix and returns
// the revision to read at and the key to start from. Malformed tokens return
// an error wrapping ErrInvalidArgument.
func DecodeContinue(prefix, token string) (revision int64, startKey string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", fmt.Errorf("%w: continue token is not base64: %v", ErrInvalidArgument, err)
	}
	var t continueToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return 0, "", fmt.Errorf("%w: continue token is not JSON: %v", ErrInvalidArgument, err)
	}
	if t.Version != continueVersion {
		return 0, "", fmt.Errorf("%w: continue token version %q, want %q", ErrInvalidArgument, t.Version, continueVersion)
	}
	if t.Revision <= 0 {
		return 0, "", fmt.Errorf("%w: continue token revision %d", ErrInvalidArgument, t.Revision)
	}
	startKey = prefix + t.Start
	if err := ValidateKey(startKey); err != nil {
		return 0, "", fmt.Errorf("continue token start: %w", err)
	}
	return t.Revision, startKey, nil
}
