package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// generatedKeyBits is the size of the RSA key made when no key is given:
// RS256, the one algorithm every OIDC relying party accepts, at the size
// kubeadm and k3s generate.
const generatedKeyBits = 2048

// maxKeyFileBytes bounds a key file: a PEM key is a few KiB; a bundle of
// verification keys for rotation a few of them.
const maxKeyFileBytes = 1 << 20

// LoadSigningKey reads the PEM private key tokens are signed with
// (--service-account-signing-key-file): RSA or ECDSA (P-256, P-384, P-521),
// in PKCS #1, SEC 1 or PKCS #8.
func LoadSigningKey(path string) (crypto.Signer, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
		if key, err := parsePrivateKey(block); err == nil && key != nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("%s: no RSA or ECDSA private key in PEM", path)
}

// LoadVerificationKeys reads the PEM keys tokens may be verified with
// (--service-account-key-file, as kube's: public keys, certificates, or
// private keys, whose public halves are taken).
func LoadVerificationKeys(path string) ([]crypto.PublicKey, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	var keys []crypto.PublicKey
	for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
		key, err := parsePublicKey(block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if key != nil {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no RSA or ECDSA key in PEM", path)
	}
	return keys, nil
}

// EnsureSigningKey returns the key in path, first generating an RSA key
// into it (mode 0600) if the file does not exist: a server with no key
// flag keeps its tokens valid across restarts. Servers sharing the path
// (and an etcd store) that start at once agree on the key the first of
// them wrote.
func EnsureSigningKey(path string) (key crypto.Signer, generated bool, err error) {
	return ensureSigningKey(path, func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, generatedKeyBits) })
}

func ensureSigningKey(path string, generate func() (*rsa.PrivateKey, error)) (key crypto.Signer, generated bool, err error) {
	key, err = LoadSigningKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	rsaKey, err := generate()
	if err != nil {
		return nil, false, err
	}
	der := x509.MarshalPKCS1PrivateKey(rsaKey)
	err = writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}))
	if errors.Is(err, fs.ErrExist) { // another server wrote one meanwhile
		key, err = LoadSigningKey(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return rsaKey, true, nil
}

// writeNew writes a new file of mode 0600 whole: into a temporary file
// renamed over path, so that a crash leaves no half key behind, and never
// over a file another process made meanwhile.
func writeNew(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sa-key-*")
	if err != nil {
		return fmt.Errorf("writing the service account key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path) // fails if path exists
	}
	if err != nil {
		return fmt.Errorf("writing the service account key: %w", err)
	}
	return nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxKeyFileBytes)
	}
	return b, nil
}

// parsePrivateKey reads an RSA or ECDSA private key; nil for a block of
// another type.
func parsePrivateKey(block *pem.Block) (crypto.Signer, error) {
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", block.Type, err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%s: a %T, not an RSA or ECDSA key", block.Type, key)
}

// parsePublicKey reads the public key of a PEM block: a public key, a
// certificate or a private key; nil for a block of another type.
func parsePublicKey(block *pem.Block) (crypto.PublicKey, error) {
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		priv, perr := parsePrivateKey(block)
		if priv == nil || perr != nil {
			return nil, perr
		}
		key = priv.Public()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", block.Type, err)
	}
	switch key.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey:
		return key, nil
	}
	return nil, fmt.Errorf("%s: a %T, not an RSA or ECDSA key", block.Type, key)
}

// keyID is kube's key ID of a public key (keyIDFromPublicKey): the
// unpadded base64url SHA-256 of its PKIX DER, which names the key without
// revealing it.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("serializing a public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
