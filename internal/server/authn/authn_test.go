package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

const tokenFile = `alice-token,alice,1,"admins,devs"
bob-token, bob, 2
`

func TestParseTokens(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := tokens.AuthenticateToken(t.Context(), "alice-token")
	if want := (&authn.User{Name: "alice", UID: "1", Groups: []string{"admins", "devs"}}); !ok || !cmp.Equal(want, u) {
		t.Errorf("alice: (-want +got)\n%s", cmp.Diff(want, u))
	}
	u, ok = tokens.AuthenticateToken(t.Context(), "bob-token")
	if want := (&authn.User{Name: "bob", UID: "2"}); !ok || !cmp.Equal(want, u) {
		t.Errorf("bob: (-want +got)\n%s", cmp.Diff(want, u))
	}
	if _, ok := tokens.AuthenticateToken(t.Context(), "carol-token"); ok {
		t.Error("an unknown token authenticated")
	}
}

func TestParseTokensBadLines(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"too few columns", "a,alice,1\nb,bob\n", "line 2: want 3 or 4 columns"},
		{"too many columns", "a,alice,1,g,extra\n", "line 1: want 3 or 4 columns"},
		{"empty token", "a,alice,1\n,bob,2\n", "line 2: the token and the user name must not be empty"},
		{"empty user", ",,1\n", "line 1: the token and the user name must not be empty"},
		{"duplicate token", "a,alice,1\n\na,bob,2\n", "line 3: a token given on an earlier line"},
		{"bad quoting", "a,alice,1,\"g\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := authn.ParseTokens(strings.NewReader(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadTokenFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	authntest.WriteFile(t, path, "a,alice\n")
	_, err := authn.LoadTokenFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 1") {
		t.Fatalf("got %v, want the path and the line", err)
	}
}

func TestBearerAndWebSocketTokens(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader(tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	a := authn.Union{authn.BearerToken{Tokens: tokens}, authn.WebSocketToken{Tokens: tokens}}
	ws := func(protocols ...string) http.Header {
		return http.Header{"Upgrade": {"websocket"}, "Sec-Websocket-Protocol": protocols}
	}
	enc := func(s string) string {
		return authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(s))
	}
	tests := []struct {
		name    string
		header  http.Header
		user    string
		wantErr bool
		// wsWatch: the server marked the request a WebSocket watch.
		wsWatch bool
	}{
		{"no credentials", http.Header{}, "", false, false},
		{"bearer", http.Header{"Authorization": {"Bearer alice-token"}}, "alice", false, false},
		{"bearer lower case", http.Header{"Authorization": {"bearer bob-token"}}, "bob", false, false},
		{"bad bearer", http.Header{"Authorization": {"Bearer nope"}}, "", true, false},
		{"basic is not ours", http.Header{"Authorization": {"Basic YTpi"}}, "", false, false},
		{"websocket", ws("v4.channel.k8s.io, " + enc("bob-token")), "bob", false, true},
		{"websocket bad token", ws(enc("nope")), "", true, true},
		{"websocket not base64", ws(authn.WebSocketProtocolPrefix + "!!"), "", true, true},
		{"websocket two tokens", ws(enc("bob-token"), enc("alice-token")), "", true, true},
		{"protocol without upgrade", http.Header{"Sec-Websocket-Protocol": {enc("bob-token")}}, "", false, false},
		{"websocket not marked a watch", ws(enc("bob-token")), "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.Header = tt.header
			if tt.wsWatch {
				r = r.WithContext(authn.WithWebSocketWatch(r.Context()))
			}
			u, ok, err := a.Authenticate(r)
			if (err != nil) != tt.wantErr || ok != (tt.user != "") || (ok && u.Name != tt.user) {
				t.Fatalf("got %v %v %v, want user %q (error %v)", u, ok, err, tt.user, tt.wantErr)
			}
		})
	}
}

func TestClientCert(t *testing.T) {
	ca, other := authntest.NewCA(t), authntest.NewCA(t)
	a := authn.ClientCert{Roots: ca.Pool()}
	peer := func(c tls.Certificate) *tls.ConnectionState {
		return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}}
	}
	tests := []struct {
		name    string
		tls     *tls.ConnectionState
		want    *authn.User
		wantErr bool
	}{
		{"plain HTTP", nil, nil, false},
		{"no certificate", &tls.ConnectionState{}, nil, false},
		{"signed by the CA", peer(ca.Client(t, "carol", "admins", "ops")), &authn.User{Name: "carol", Groups: []string{"admins", "ops"}}, false},
		{"signed by another CA", peer(other.Client(t, "mallory")), nil, true},
		{"a server certificate", peer(ca.Server(t)), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = tt.tls
			u, ok, err := a.Authenticate(r)
			if (err != nil) != tt.wantErr || ok != (tt.want != nil) || !cmp.Equal(tt.want, u, cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
				t.Fatalf("got %v %v %v, want %v (error %v)", u, ok, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestAuthenticatedGroup: every user accepted is in system:authenticated,
// once, as kube's AuthenticatedGroupAdder adds it, without changing the
// token file's user.
func TestAuthenticatedGroup(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("a,alice,1,devs\nb,bob,2,system:authenticated\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := authn.AuthenticatedGroup{Authenticator: authn.BearerToken{Tokens: tokens}}
	for _, tc := range []struct {
		token string
		want  []string
	}{
		{"a", []string{"devs", "system:authenticated"}},
		{"a", []string{"devs", "system:authenticated"}},
		{"b", []string{"system:authenticated"}},
	} {
		r := httptest.NewRequest("GET", "/api", nil)
		r.Header.Set("Authorization", "Bearer "+tc.token)
		u, ok, err := a.Authenticate(r)
		if !ok || err != nil || !cmp.Equal(tc.want, u.Groups) {
			t.Errorf("token %s: %+v %v %v, want groups %q", tc.token, u, ok, err, tc.want)
		}
	}
	if u, _ := tokens.AuthenticateToken(t.Context(), "a"); len(u.Groups) != 1 {
		t.Errorf("the token file's user changed: %+v", u)
	}
	if _, ok, err := a.Authenticate(httptest.NewRequest("GET", "/api", nil)); ok || err != nil {
		t.Errorf("no credentials: %v %v", ok, err)
	}
}
