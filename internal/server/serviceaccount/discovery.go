package serviceaccount

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// The paths of the OIDC discovery documents, as kube-apiserver serves them.
const (
	OpenIDConfigurationPath = "/.well-known/openid-configuration"
	JWKSPath                = "/openid/v1/jwks"
)

// CacheControl is the Cache-Control header of the discovery documents:
// kube's hour, for keys that never change while the server runs.
const CacheControl = "public, max-age=3600"

// MediaJWKS is the media type of the key set.
const MediaJWKS = "application/jwk-set+json"

// Discoverable says whether the issuer can have OIDC discovery documents:
// kube serves them only for an https issuer URL, which is where relying
// parties fetch them.
func (t *Tokens) Discoverable() bool {
	u, err := url.Parse(t.Issuer())
	return err == nil && u.Scheme == "https" && u.Host != ""
}

// OpenIDConfiguration is the OIDC provider configuration document, with
// kube's fields; its key set is at the configured JWKSURI, else at
// reachedAt (the JWKS path on the address the client reached).
func (t *Tokens) OpenIDConfiguration(reachedAt string) []byte {
	jwksURI := cmp.Or(t.jwksURI, reachedAt)
	var algs []string
	for _, k := range t.keys {
		if a := string(k.alg); !slices.Contains(algs, a) {
			algs = append(algs, a)
		}
	}
	b, _ := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{t.Issuer(), jwksURI, []string{"id_token"}, []string{"public"}, algs})
	return b
}

// JWKS is the key set of every verification key (RFC 7517), each with
// kube's key ID, its algorithm and use "sig".
func (t *Tokens) JWKS() []byte {
	set := jose.JSONWebKeySet{}
	for _, k := range t.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key, KeyID: k.id, Algorithm: string(k.alg), Use: "sig"})
	}
	b, _ := json.Marshal(set)
	return b
}
