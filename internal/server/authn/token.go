package authn

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Tokens are the static tokens of a token file, kube's CSV format: one
// line per token, `token,user,uid` and optionally a quoted, comma-separated
// list of groups: `token,user,uid,"group1,group2"`.
type Tokens struct {
	// byHash maps the SHA-256 of each token to its user, so that lookups
	// do not compare secrets byte by byte.
	byHash map[[sha256.Size]byte]*User
}

var _ TokenAuthenticator = (*Tokens)(nil)

func (*Tokens) String() string { return "the token file" }

// LoadTokenFile reads a token file. Any malformed line is an error naming it.
func LoadTokenFile(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening token file: %w", err)
	}
	defer f.Close()
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens reads tokens in the token file format. Unlike kube-apiserver,
// which skips empty tokens and lets a duplicate override with a warning, it
// rejects both: a token file is small and a mistake in it is a security one.
func ParseTokens(r io.Reader) (*Tokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	t := &Tokens{byHash: map[[sha256.Size]byte]*User{}}
	for {
		record, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, err // a *csv.ParseError names its line
		}
		line, _ := cr.FieldPos(0)
		if err := t.add(record); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
}

// add adds one record of the token file.
func (t *Tokens) add(record []string) error {
	if len(record) < 3 || len(record) > 4 {
		return fmt.Errorf("want 3 or 4 columns (token, user, uid, groups), found %d", len(record))
	}
	if record[0] == "" || record[1] == "" {
		return errors.New("the token and the user name must not be empty")
	}
	h := sha256.Sum256([]byte(record[0]))
	if _, dup := t.byHash[h]; dup {
		return errors.New("a token given on an earlier line")
	}
	u := &User{Name: record[1], UID: record[2]}
	if len(record) == 4 {
		for g := range strings.SplitSeq(record[3], ",") {
			if g = strings.TrimSpace(g); g != "" {
				u.Groups = append(u.Groups, g)
			}
		}
	}
	t.byHash[h] = u
	return nil
}

// AuthenticateToken implements TokenAuthenticator. The tokens of a file
// know no audiences (User.Audiences stays nil).
func (t *Tokens) AuthenticateToken(_ context.Context, token string) (*User, bool) {
	u, ok := t.byHash[sha256.Sum256([]byte(token))]
	return u, ok
}

// BearerToken authenticates the token of an `Authorization: Bearer <token>`
// header.
type BearerToken struct{ Tokens TokenAuthenticator }

func (b BearerToken) String() string { return "bearer tokens" + of(b.Tokens) }

// of names the tokens t checks for a log, when t says.
func of(t TokenAuthenticator) string {
	if s, ok := t.(fmt.Stringer); ok {
		return " of " + s.String()
	}
	return ""
}

// Authenticate implements Authenticator.
func (b BearerToken) Authenticate(r *http.Request) (*User, bool, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return nil, false, nil
	}
	return authenticateToken(r.Context(), b.Tokens, token)
}

func authenticateToken(ctx context.Context, tokens TokenAuthenticator, token string) (*User, bool, error) {
	if u, ok := tokens.AuthenticateToken(ctx, token); ok {
		return u, true, nil
	}
	return nil, false, errInvalidToken
}

// WebSocketProtocolPrefix marks the WebSocket subprotocol that carries a
// bearer token, base64url-encoded without padding, for clients (browsers)
// that cannot set headers on a WebSocket.
const WebSocketProtocolPrefix = "base64url.bearer.authorization.k8s.io."

// WebSocketToken authenticates the token of a WebSocket upgrade's
// `Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.<token>`,
// on a request the server marked WithWebSocketWatch only: any other request
// carrying it, a POST with an Upgrade header say, is not authenticated by
// it.
type WebSocketToken struct{ Tokens TokenAuthenticator }

type webSocketWatchKey struct{}

// WithWebSocketWatch marks the context of a request that is a WebSocket
// handshake the server answers with a watch, the one kind of request that
// may carry its token in a subprotocol.
func WithWebSocketWatch(ctx context.Context) context.Context {
	return context.WithValue(ctx, webSocketWatchKey{}, true)
}

func (ws WebSocketToken) String() string {
	return "bearer tokens in WebSocket subprotocols" + of(ws.Tokens)
}

// Authenticate implements Authenticator.
func (ws WebSocketToken) Authenticate(r *http.Request) (*User, bool, error) {
	if marked, _ := r.Context().Value(webSocketWatchKey{}).(bool); !marked {
		return nil, false, nil
	}
	var encoded []string
	for _, p := range WebSocketProtocols(r) {
		if rest, ok := strings.CutPrefix(p, WebSocketProtocolPrefix); ok {
			encoded = append(encoded, rest)
		}
	}
	switch len(encoded) {
	case 0:
		return nil, false, nil
	case 1:
	default:
		return nil, false, errors.New("more than one bearer token subprotocol")
	}
	token, err := base64.RawURLEncoding.DecodeString(encoded[0])
	if err != nil || len(token) == 0 {
		return nil, false, errors.New("invalid bearer token subprotocol: not base64url")
	}
	return authenticateToken(r.Context(), ws.Tokens, string(token))
}

// WebSocketProtocols is the subprotocols a WebSocket upgrade offers, in
// order, from every Sec-WebSocket-Protocol header.
func WebSocketProtocols(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
