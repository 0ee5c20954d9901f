package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/serviceaccount"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// userRecorder allows everything and keeps the last user it saw.
type userRecorder struct {
	mu   sync.Mutex
	last *authn.User
}

func (u *userRecorder) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.last = a.User
	return authz.Allow, "", nil
}

func (u *userRecorder) user() *authn.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

// tokenServer is a server issuing service account tokens and accepting
// them, and a static token "admin" of system:masters.
type tokenServer struct {
	ts    *httptest.Server
	store storage.Interface
	users *userRecorder
}

func newTokenServer(t testing.TB, maxExpiration time.Duration) *tokenServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := serviceaccount.New(serviceaccount.Config{SigningKey: key, MaxExpiration: maxExpiration})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	static, err := authn.ParseTokens(strings.NewReader(`admin,admin,1,system:masters`))
	if err != nil {
		t.Fatal(err)
	}
	sa := &serviceaccount.Authenticator{Tokens: tokens, Objects: serviceaccount.StoreObjects{Store: store}, Log: slog.New(slog.DiscardHandler)}
	users := &userRecorder{}
	s, err := New(t.Context(), Config{
		Storage: store, ServiceAccountTokens: tokens, Authorizer: users,
		Authenticator: authn.AuthenticatedGroup{Authenticator: authn.Union{authn.BearerToken{Tokens: static}, authn.BearerToken{Tokens: sa}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &tokenServer{ts: ts, store: store, users: users}
}

// as makes a request with a bearer token.
func (s *tokenServer) as(t *testing.T, token, method, path, body string) response {
	t.Helper()
	return exchange(t, s.ts, method, path, http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {mediaJSON}}, body)
}

// requestToken asks for a token of default/<sa> and returns it.
func (s *tokenServer) requestToken(t *testing.T, sa, body string) string {
	t.Helper()
	r := s.as(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts/"+sa+"/token", body)
	token, _ := r.obj["status"].(map[string]any)["token"].(string)
	if r.code != http.StatusCreated || token == "" {
		t.Fatalf("token request: %d %v", r.code, r.obj)
	}
	return token
}

func TestTokenRequest(t *testing.T) {
	s := newTokenServer(t, 0)
	before := time.Now()
	r := s.as(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest"}`)
	if r.code != http.StatusCreated || r.obj.APIVersion() != "authentication.k8s.io/v1" || r.obj.Kind() != "TokenRequest" {
		t.Fatalf("token request: %d %v", r.code, r.obj)
	}
	spec, status := r.obj["spec"].(map[string]any), r.obj["status"].(map[string]any)
	if spec["expirationSeconds"] != json.Number("3600") || len(spec["audiences"].([]any)) != 1 || spec["audiences"].([]any)[0] != serviceaccount.DefaultIssuer {
		t.Errorf("spec %v, want an hour for the API's audience", spec)
	}
	exp, err := time.Parse(time.RFC3339, status["expirationTimestamp"].(string))
	if err != nil || exp.Before(before.Add(time.Hour-time.Second)) || exp.After(time.Now().Add(time.Hour)) {
		t.Errorf("expirationTimestamp %v (%v), want an hour from now", status["expirationTimestamp"], err)
	}
	if got := s.as(t, status["token"].(string), "GET", "/api/v1/namespaces/default/configmaps", ""); got.code != http.StatusOK {
		t.Fatalf("list with the token: %d %v", got.code, got.obj)
	}
	u := s.users.user()
	sa := s.as(t, "admin", "GET", "/api/v1/namespaces/default/serviceaccounts/default", "").obj
	if u.Name != "system:serviceaccount:default:default" || u.UID != sa.UID() || strings.Join(u.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:default,system:authenticated" ||
		len(u.Extra[serviceaccount.CredentialIDKey]) != 1 || !strings.HasPrefix(u.Extra[serviceaccount.CredentialIDKey][0], "JTI=") {
		t.Errorf("user %+v, account uid %s", u, sa.UID())
	}
}

func TestTokenRequestRejects(t *testing.T) {
	s := newTokenServer(t, 0)
	const tokenPath = "/api/v1/namespaces/default/serviceaccounts/default/token"
	tests := []struct {
		name, method, path, body string
		code                     int
		message                  string
	}{
		{"too short", "POST", tokenPath, `{"spec":{"expirationSeconds":599}}`, 422,
			`TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"too long", "POST", tokenPath, `{"spec":{"expirationSeconds":4294967297}}`, 422,
			`TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{"other name", "POST", tokenPath, `{"metadata":{"name":"other"}}`, 422, `metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"no such account", "POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", `{}`, 404, `serviceaccounts "nobody" not found`},
		{"wrong kind", "POST", tokenPath, `{"apiVersion":"v1","kind":"ConfigMap"}`, 400, "does not match the expected API version"},
		{"bound to a pod", "POST", tokenPath, `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}}}`, 404, `pods "p" not found`},
		{"bound to a deployment", "POST", tokenPath, `{"spec":{"boundObjectRef":{"kind":"Deployment","apiVersion":"apps/v1","name":"d"}}}`, 400, "cannot bind token to object of type apps/v1, Kind=Deployment"},
		{"bound to a missing secret", "POST", tokenPath, `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}}}`, 404, `secrets "s" not found`},
		{"get", "GET", tokenPath, "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.as(t, "admin", tt.method, tt.path, tt.body)
			if msg, _ := r.obj["message"].(string); r.code != tt.code || r.obj.Kind() != "Status" || !strings.Contains(msg, tt.message) {
				t.Fatalf("got %d %v, want %d with %q", r.code, r.obj, tt.code, tt.message)
			}
		})
	}
}

// TestTokenRequestMaxExpiration checks that a longer lifetime than the
// server's maximum is shortened, with kube's warning.
func TestTokenRequestMaxExpiration(t *testing.T) {
	s := newTokenServer(t, time.Hour)
	r := s.as(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", `{"spec":{"expirationSeconds":7200}}`)
	if r.code != http.StatusCreated || r.obj["spec"].(map[string]any)["expirationSeconds"] != json.Number("3600") ||
		r.header.Get("Warning") != `299 - "requested expiration of 7200 seconds shortened to 3600 seconds"` {
		t.Fatalf("got %d %v, Warning %q", r.code, r.obj, r.header.Get("Warning"))
	}
}

// TestTokenRevoked checks that a token stops working when its account is
// deleted, even once the default account is made again (another UID), and
// when the Secret it is bound to is deleted.
func TestTokenRevoked(t *testing.T) {
	s := newTokenServer(t, 0)
	secret := s.as(t, "admin", "POST", "/api/v1/namespaces/default/secrets", `{"metadata":{"name":"s"}}`).obj
	r := s.as(t, "admin", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s","uid":"wrong"}}}`)
	if r.code != http.StatusConflict || !strings.Contains(r.obj["message"].(string), `Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (wrong) does not match`) {
		t.Fatalf("a stale uid: %d %v", r.code, r.obj)
	}
	bound := s.requestToken(t, "default", `{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s","uid":"`+secret.UID()+`"}}}`)
	plain := s.requestToken(t, "default", `{}`)
	const list = "/api/v1/namespaces/default/configmaps"
	for _, tok := range []string{bound, plain} {
		if r := s.as(t, tok, "GET", list, ""); r.code != http.StatusOK {
			t.Fatalf("before deletions: %d %v", r.code, r.obj)
		}
	}
	s.as(t, "admin", "DELETE", "/api/v1/namespaces/default/secrets/s", "")
	if r := s.as(t, bound, "GET", list, ""); r.code != http.StatusUnauthorized || r.obj["message"] != "Unauthorized" {
		t.Fatalf("a token bound to a deleted secret: %d %v", r.code, r.obj)
	}
	if r := s.as(t, plain, "GET", list, ""); r.code != http.StatusOK {
		t.Fatalf("an unbound token after the secret's deletion: %d %v", r.code, r.obj)
	}
	recreated := s.waitDefaultAccountDeleted(t, "default")
	if r := s.as(t, plain, "GET", list, ""); r.code != http.StatusUnauthorized {
		t.Fatalf("a token of a deleted account (made again with uid %s): %d %v", recreated, r.code, r.obj)
	}
}

// waitDefaultAccountDeleted deletes namespace ns's default account and
// waits until the server has made it again, returning its new UID.
func (s *tokenServer) waitDefaultAccountDeleted(t *testing.T, ns string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rev, err := s.store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.store.Watch(ctx, "/registry/core/serviceaccounts/"+ns+"/default", rev)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.as(t, "admin", "DELETE", "/api/v1/namespaces/"+ns+"/serviceaccounts/default", ""); r.code != http.StatusOK {
		t.Fatalf("deleting the default account: %d %v", r.code, r.obj)
	}
	for batch := range w.Events() {
		for _, ev := range batch {
			if ev.Type != storage.EventDelete {
				var sa struct{ Metadata struct{ UID string } }
				_ = json.Unmarshal(ev.KV.Value, &sa)
				return sa.Metadata.UID
			}
		}
	}
	t.Fatalf("the default account was not made again: %v", w.Err())
	return ""
}

// TestDefaultServiceAccounts checks that every namespace has a default
// account: the initial ones from the start, a new one once created.
func TestDefaultServiceAccounts(t *testing.T) {
	s := newTokenServer(t, 0)
	for _, ns := range initialNamespaces {
		if r := s.as(t, "admin", "GET", "/api/v1/namespaces/"+ns+"/serviceaccounts/default", ""); r.code != http.StatusOK {
			t.Errorf("%s: %d %v", ns, r.code, r.obj)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rev, _ := s.store.CurrentRevision(ctx)
	w, err := s.store.Watch(ctx, "/registry/core/serviceaccounts/team/", rev)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.as(t, "admin", "POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`); r.code != http.StatusCreated {
		t.Fatalf("creating a namespace: %d %v", r.code, r.obj)
	}
	batch, ok := <-w.Events()
	if !ok || batch[0].KV.Key != "/registry/core/serviceaccounts/team/default" {
		t.Fatalf("the new namespace's first account: %v %v", batch, w.Err())
	}
}

// TestOIDCDiscovery checks the discovery documents, and that the key set
// verifies a token as a relying party would.
func TestOIDCDiscovery(t *testing.T) {
	s := newTokenServer(t, 0)
	resp, body := roundTrip(t, s.ts.Client(), "GET", s.ts.URL+"/.well-known/openid-configuration", http.Header{"Authorization": {"Bearer admin"}}, "")
	var conf struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &conf); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != mediaJSON ||
		resp.Header.Get("Cache-Control") != "public, max-age=3600" || resp.Header.Get("Vary") != "Host" || conf.Issuer != serviceaccount.DefaultIssuer || conf.JWKSURI != s.ts.URL+"/openid/v1/jwks" {
		t.Fatalf("configuration: %d %v %s (%v)", resp.StatusCode, resp.Header, body, err)
	}
	resp, body = roundTrip(t, s.ts.Client(), "GET", conf.JWKSURI, http.Header{"Authorization": {"Bearer admin"}}, "")
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("key set: %d %v %s (%v)", resp.StatusCode, resp.Header, body, err)
	}
	tok, err := jwt.ParseSigned(s.requestToken(t, "default", "{}"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	var claims jwt.Claims
	if len(keys) != 1 || tok.Claims(keys[0].Key, &claims) != nil || claims.Issuer != conf.Issuer {
		t.Fatalf("the key set's key %v did not verify the token (claims %+v)", keys, claims)
	}
}

// TestServiceAccountKind checks the serviceaccounts built-in: kube's Table
// columns, secrets merged by name in a strategic merge patch, and the types
// of its fields checked.
func TestServiceAccountKind(t *testing.T) {
	ts := newTestServer(t)
	const sas = "/api/v1/namespaces/default/serviceaccounts"
	if code, obj := call(t, ts, "POST", sas, mediaJSON, `{"metadata":{"name":"b"},"secrets":[{"name":"one"}]}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	code, patched := call(t, ts, "PATCH", sas+"/b", "application/strategic-merge-patch+json", `{"secrets":[{"name":"two"}]}`)
	if secrets, _ := patched["secrets"].([]any); code != http.StatusOK || len(secrets) != 2 {
		t.Fatalf("strategic merge of secrets: %d %v, want both", code, patched)
	}
	r := exchange(t, ts, "GET", sas+"/b", http.Header{"Accept": {tableAccept}}, "")
	cols, _ := r.obj["columnDefinitions"].([]any)
	rows, _ := r.obj["rows"].([]any)
	var names []string
	for _, c := range cols {
		names = append(names, c.(map[string]any)["name"].(string)+":"+c.(map[string]any)["type"].(string))
	}
	// kube prints a service account's name and age only.
	if strings.Join(names, ",") != "Name:string,Age:string" || len(rows) != 1 || rows[0].(map[string]any)["cells"].([]any)[0] != "b" {
		t.Fatalf("Table: %d %v", r.code, r.obj)
	}
	for _, body := range []string{
		`{"metadata":{"name":"x"},"automountServiceAccountToken":"yes"}`,
		`{"metadata":{"name":"x"},"secrets":{"name":"s"}}`,
		`{"metadata":{"name":"x"},"imagePullSecrets":[{"name":1}]}`,
	} {
		if code, obj := call(t, ts, "POST", sas, mediaJSON, body); code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %v, want 422", body, code, obj)
		}
	}
}

// BenchmarkTokenAuthentication is the cost of a request (an empty LIST)
// authenticated by a static token and by a service account token, whose
// account is read from the store on every request.
func BenchmarkTokenAuthentication(b *testing.B) {
	s := newTokenServer(b, 0)
	resp, body := roundTrip(b, s.ts.Client(), "POST", s.ts.URL+"/api/v1/namespaces/default/serviceaccounts/default/token",
		http.Header{"Authorization": {"Bearer admin"}, "Content-Type": {mediaJSON}}, "{}")
	var tr tokenRequest
	if err := json.Unmarshal(body, &tr); err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("token request: %d %s", resp.StatusCode, body)
	}
	for name, token := range map[string]string{"static": "admin", "serviceaccount": tr.Status.Token} {
		b.Run(name, func(b *testing.B) {
			header := http.Header{"Authorization": {"Bearer " + token}}
			b.ReportAllocs()
			for b.Loop() {
				if resp, body := roundTrip(b, s.ts.Client(), "GET", s.ts.URL+"/api/v1/namespaces/default/configmaps", header, ""); resp.StatusCode != http.StatusOK {
					b.Fatalf("%d %s", resp.StatusCode, body)
				}
			}
		})
	}
}

// TestTokenSubresourceDiscovery checks that discovery lists
// serviceaccounts/token as kube does, only on a server issuing tokens.
func TestTokenSubresourceDiscovery(t *testing.T) {
	const want = `{"name":"serviceaccounts/token","singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]}`
	s := newTokenServer(t, 0)
	_, body := roundTrip(t, s.ts.Client(), "GET", s.ts.URL+"/api/v1", http.Header{"Authorization": {"Bearer admin"}}, "")
	if !strings.Contains(string(body), want) {
		t.Errorf("/api/v1 lacks %s:\n%s", want, body)
	}
	_, body = roundTrip(t, s.ts.Client(), "GET", s.ts.URL+"/api", http.Header{"Authorization": {"Bearer admin"}, "Accept": {"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}}, "")
	if sub := `{"subresource":"token","responseKind":{"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest"},"verbs":["create"]}`; !strings.Contains(string(body), sub) {
		t.Errorf("aggregated /api lacks %s:\n%s", sub, body)
	}
	plain := newTestServer(t)
	_, body = roundTrip(t, plain.Client(), "GET", plain.URL+"/api/v1", nil, "")
	if strings.Contains(string(body), "serviceaccounts/token") {
		t.Errorf("a server without tokens lists serviceaccounts/token")
	}
}

// TestTokenReviewAudiences: a TokenReview accepts a token meant for one of
// the audiences it names (the API's when it names none) and answers the
// audiences both share, as kube's; a token file's tokens, which know no
// audiences, only for the API's.
func TestTokenReviewAudiences(t *testing.T) {
	s := newTokenServer(t, 0)
	api, vault := s.requestToken(t, "default", `{}`), s.requestToken(t, "default", `{"spec":{"audiences":["vault","other"]}}`)
	review := func(token, audiences string) any {
		t.Helper()
		r := s.as(t, "admin", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"spec":{"token":"`+token+`"`+audiences+`}}`)
		if r.code != http.StatusCreated {
			t.Fatalf("review: %d %v", r.code, r.obj)
		}
		status := r.obj["status"].(map[string]any)
		if status["authenticated"] != true {
			return nil
		}
		return status["audiences"]
	}
	tests := []struct {
		name, token, audiences string
		want                   any // nil: not authenticated
	}{
		{"the API's token, no audiences asked", api, ``, []any{serviceaccount.DefaultIssuer}},
		{"vault's token, no audiences asked", vault, ``, nil},
		{"vault's token, for vault", vault, `,"audiences":["nomad","vault"]`, []any{"vault"}},
		{"the API's token, for vault", api, `,"audiences":["vault"]`, nil},
		{"a token file's token, for the API", "admin", `,"audiences":["` + serviceaccount.DefaultIssuer + `"]`, []any{serviceaccount.DefaultIssuer}},
		{"a token file's token, for vault", "admin", `,"audiences":["vault"]`, nil},
	}
	for _, tt := range tests {
		if got := review(tt.token, tt.audiences); !reflect.DeepEqual(tt.want, got) {
			t.Errorf("%s: audiences %v, want %v (nil: not authenticated)", tt.name, got, tt.want)
		}
	}
}
