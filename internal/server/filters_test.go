package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/storage/memory"
)

// logRecorder is a slog.Handler that sends access log records to c.
type logRecorder struct{ c chan slog.Record }

func (l logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logRecorder) WithGroup(string) slog.Handler            { return l }

func (l logRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		l.c <- r.Clone()
	}
	return nil
}

// observedServer is a Server behind TLS whose access log the test reads.
type observedServer struct {
	s    *Server
	ts   *httptest.Server
	logs chan slog.Record
}

// newObservedServer starts a Server with cfg on a memory store, serving
// handler(s) over TLS that asks for (and does not verify) client
// certificates, as listwatch serve does with --client-ca-file.
func newObservedServer(t *testing.T, cfg Config, handler func(*Server) http.Handler) *observedServer {
	t.Helper()
	store := memory.New()
	logs := make(chan slog.Record, 1000)
	cfg.Storage, cfg.Logger = store, slog.New(logRecorder{logs})
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(handler(s))
	ts.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	ts.StartTLS()
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	return &observedServer{s: s, ts: ts, logs: logs}
}

// logged waits for the access log line of a request to path and returns
// its attributes.
func (o *observedServer) logged(t *testing.T, path string) map[string]string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-o.logs:
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			if attrs["path"] == path {
				return attrs
			}
		case <-deadline:
			t.Fatalf("no access log line for %s", path)
		}
	}
}

// get makes a request with header and returns the status code, headers
// and body.
func get(t *testing.T, client *http.Client, method, url string, header http.Header) (int, http.Header, string) {
	t.Helper()
	resp, b := roundTrip(t, client, method, url, header, "")
	return resp.StatusCode, resp.Header, string(b)
}

// withCert is a client of ts presenting cert.
func withCert(t *testing.T, ts *httptest.Server, cert tls.Certificate) *http.Client {
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestAuthentication(t *testing.T) {
	ca, other := authntest.NewCA(t), authntest.NewCA(t)
	tokens, err := authn.ParseTokens(strings.NewReader("alice-token,alice,1,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Authenticator: authn.Union{authn.ClientCert{Roots: ca.Pool()}, authn.BearerToken{Tokens: tokens}, authn.WebSocketToken{Tokens: tokens}}}
	o := newObservedServer(t, cfg, (*Server).Handler)
	anon, carol, mallory := o.ts.Client(), withCert(t, o.ts, ca.Client(t, "carol", "ops")), withCert(t, o.ts, other.Client(t, "mallory"))
	alice := http.Header{"Authorization": {"Bearer alice-token"}}
	const cms = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name   string
		client *http.Client
		header http.Header
		paths  []string
		code   int
		user   string
	}{
		{"health checks are open", anon, nil, []string{"/healthz", "/livez", "/readyz"}, http.StatusOK, "system:anonymous"},
		{"everything else is not", anon, nil, []string{cms, "/version", "/api", "/apis", "/openapi/v2", "/metrics", "/nowhere"}, http.StatusUnauthorized, ""},
		{"a bad token", anon, http.Header{"Authorization": {"Bearer nope"}}, []string{cms, "/readyz"}, http.StatusUnauthorized, ""},
		{"a token", anon, alice, []string{cms, "/version", "/api", "/metrics"}, http.StatusOK, "alice"},
		{"a client certificate", carol, nil, []string{cms, "/apis"}, http.StatusOK, "carol"},
		{"a certificate of another CA", mallory, nil, []string{cms}, http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range tt.paths {
				if tt.name == "a bad token" && p == "/readyz" {
					tt.code, tt.user = http.StatusOK, "system:anonymous" // health checks stay open
				}
				code, _, body := get(t, tt.client, "GET", o.ts.URL+p, tt.header)
				if code != tt.code {
					t.Errorf("%s: %d %s, want %d", p, code, body, tt.code)
				}
				if code == http.StatusUnauthorized && !strings.Contains(body, `"reason":"Unauthorized"`) {
					t.Errorf("%s: 401 body %s, want a Status with reason Unauthorized", p, body)
				}
				if got := o.logged(t, p)["user"]; got != tt.user {
					t.Errorf("%s: access log user %q, want %q", p, got, tt.user)
				}
			}
		})
	}
}

func TestWebSocketTokenSubprotocol(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("bob-token,bob,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := newObservedServer(t, Config{Authenticator: authn.WebSocketToken{Tokens: tokens}}, (*Server).Handler)
	url := o.ts.URL + "/api/v1/namespaces/default/configmaps?watch=true"
	dial := func(token string) (*websocket.Conn, *http.Response, error) {
		protocol := authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
		return websocket.Dial(t.Context(), url, &websocket.DialOptions{HTTPClient: o.ts.Client(), Subprotocols: []string{protocol}})
	}
	if _, resp, err := dial("nope"); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a bad token: %v %v, want 401", resp, err)
	}
	conn, _, err := dial("bob-token")
	if err != nil {
		t.Fatal(err)
	}
	conn.CloseNow()
	o.s.Close() // the watch is logged when it ends: Close ends it now, however soon its reader sees the client go
	if got := o.logged(t, "/api/v1/namespaces/default/configmaps")["user"]; got != "" {
		t.Errorf("the rejected upgrade was logged with user %q", got)
	}
	if got := o.logged(t, "/api/v1/namespaces/default/configmaps"); got["user"] != "bob" || got["verb"] != "watch" {
		t.Errorf("the watch was logged as %v", got)
	}
}

// TestWebSocketTokenOnlyOnWatchUpgrade: the subprotocol token
// authenticates a WebSocket watch handshake only; a plain request carrying
// it with Upgrade headers was authenticated (POST 201, deletecollection
// 200) and is now 401, and writes nothing.
func TestWebSocketTokenOnlyOnWatchUpgrade(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("bob-token,bob,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := newObservedServer(t, Config{Authenticator: authn.Union{authn.BearerToken{Tokens: tokens}, authn.WebSocketToken{Tokens: tokens}}}, (*Server).Handler)
	const cms = "/api/v1/namespaces/default/configmaps"
	upgrade := http.Header{
		"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Content-Type": {mediaJSON},
		"Sec-Websocket-Protocol": {authn.WebSocketProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte("bob-token"))},
	}
	notUpgrade := upgrade.Clone()
	notUpgrade.Del("Connection")
	tests := []struct {
		method, path string
		header       http.Header
	}{
		{"POST", cms, upgrade},
		{"PUT", cms + "/a", upgrade},
		{"PATCH", cms + "/a", upgrade},
		{"DELETE", cms + "/a", upgrade},
		{"DELETE", cms, upgrade},
		{"GET", cms, upgrade},
		{"GET", cms + "/a", upgrade},
		{"GET", cms + "?watch=true", notUpgrade},
	}
	for _, tt := range tests {
		r := exchangeWith(t, o.ts.Client(), tt.method, o.ts.URL+tt.path, tt.header, `{"metadata":{"name":"a"}}`)
		if r.code != http.StatusUnauthorized || r.obj["reason"] != "Unauthorized" {
			t.Errorf("%s %s with %v: %d %v, want 401", tt.method, tt.path, tt.header, r.code, r.obj)
		}
	}
	r := exchangeWith(t, o.ts.Client(), "GET", o.ts.URL+cms, http.Header{"Authorization": {"Bearer bob-token"}}, "")
	if items, _ := r.obj["items"].([]any); r.code != http.StatusOK || len(items) != 0 {
		t.Errorf("list after the refused requests: %d %v, want 200 and no items", r.code, r.obj)
	}
}

func TestMaxInFlight(t *testing.T) {
	entered, release := make(chan struct{}, 10), make(chan struct{})
	blocking := func(s *Server) http.Handler {
		return s.filters(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("block") {
				entered <- struct{}{}
				<-release
			}
		}))
	}
	o := newObservedServer(t, Config{MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1}, blocking)
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	const cms = "/api/v1/namespaces/default/configmaps"
	var wg sync.WaitGroup
	for _, method := range []string{"GET", "GET", "POST"} {
		wg.Go(func() {
			if code, _, _ := get(t, o.ts.Client(), method, o.ts.URL+cms+"?block=1", nil); code != http.StatusOK {
				t.Errorf("a blocked %s ended with %d", method, code)
			}
		})
	}
	deadline := time.After(10 * time.Second)
	for range 3 {
		select {
		case <-entered:
		case <-deadline:
			t.Fatal("the blocking requests did not all start")
		}
	}
	for _, method := range []string{"GET", "POST"} {
		code, header, body := get(t, o.ts.Client(), method, o.ts.URL+cms, nil)
		if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" || !strings.Contains(body, `"reason":"TooManyRequests"`) {
			t.Errorf("%s beyond the limit: %d Retry-After %q %s", method, code, header.Get("Retry-After"), body)
		}
	}
	for _, p := range []string{cms + "?watch=true", "/readyz"} {
		if code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+p, nil); code != http.StatusOK {
			t.Errorf("%s is exempt, got %d %s", p, code, body)
		}
	}
	m := scrape(t, o.s)
	for series, want := range map[string]float64{
		`apiserver_current_inflight_requests{request_kind="readOnly"}`: 2,
		`apiserver_current_inflight_requests{request_kind="mutating"}`: 1,
	} {
		if got := m.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	unblock()
	wg.Wait()
}

// exposition is a scrape of /metrics.
type exposition map[string]float64

// scrape reads s's metrics from its handler, outside the filters.
func scrape(t *testing.T, s *Server) exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := exposition{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func (e exposition) value(t *testing.T, series string) float64 {
	t.Helper()
	v, ok := e[series]
	if !ok {
		t.Errorf("no series %s", series)
	}
	return v
}

func TestMetrics(t *testing.T) {
	o := newObservedServer(t, Config{}, (*Server).Handler)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, created := send(t, o.ts, "POST", cms, mediaJSON, "", `{"metadata":{"name":"a"},"data":{"k":"`+strings.Repeat("v", 2000)+`"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, created)
	}
	for _, p := range []string{cms + "/a", cms, "/api/v1/namespaces/default/nothings", "/version"} {
		get(t, o.ts.Client(), "GET", o.ts.URL+p, nil)
	}
	w := openWatch(t, o.ts.Client(), o.ts.URL+cms+"?watch=true")
	if e := w.next(1, false); e[0].Type != api.Added {
		t.Fatalf("watch: %v", e)
	}
	if got := scrape(t, o.s).value(t, `apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"}`); got != 1 {
		t.Errorf("registered watchers %v during the watch, want 1", got)
	}
	w.resp.Body.Close()
	for _, p := range []string{cms, cms + "/a", cms, "/api/v1/namespaces/default/nothings", "/version", cms} {
		o.logged(t, p) // the watch is logged (and counted) when it ends
	}
	const labels = `component="apiserver",dry_run="",group="",resource="configmaps",`
	rev, _ := strconv.ParseFloat(created.ResourceVersion(), 64)
	want := map[string]float64{
		`apiserver_request_total{code="201",` + labels + `scope="resource",subresource="",verb="POST",version="v1"}`:                              1,
		`apiserver_request_total{code="200",` + labels + `scope="resource",subresource="",verb="GET",version="v1"}`:                               1,
		`apiserver_request_total{code="200",` + labels + `scope="namespace",subresource="",verb="LIST",version="v1"}`:                             1,
		`apiserver_request_total{code="200",` + labels + `scope="namespace",subresource="",verb="WATCH",version="v1"}`:                            1,
		`apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""}`: 1,
		`apiserver_request_duration_seconds_count{` + labels + `scope="namespace",subresource="",verb="LIST",version="v1"}`:                       1,
		`apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"}`:                                                                   0,
		`apiserver_watch_events_total{group="",kind="ConfigMap",version="v1"}`:                                                                    1,
		`apiserver_watch_events_sizes_bucket{group="",kind="ConfigMap",version="v1",le="1024"}`:                                                   0,
		`apiserver_watch_events_sizes_count{group="",kind="ConfigMap",version="v1"}`:                                                              1,
		`apiserver_terminated_watchers_total{group="",resource="configmaps"}`:                                                                     0,
		`listwatch_watch_parked_total{group="",resource="configmaps"}`:                                                                            0,
		`listwatch_watch_catchups_total{group="",resource="configmaps"}`:                                                                          0,
		`apiserver_watch_cache_events_received_total{resource="configmaps"}`:                                                                      0,
		`watch_cache_capacity{resource="configmaps"}`:                                                                                             100_000,
		`apiserver_watch_cache_resource_version{resource="configmaps"}`:                                                                           rev,
		`apiserver_storage_objects{resource="configmaps"}`:                                                                                        1,
		`apiserver_current_inflight_requests{request_kind="readOnly"}`:                                                                            0,
		`apiserver_current_inflight_requests{request_kind="mutating"}`:                                                                            0,
	}
	m := scrape(t, o.s)
	for series, v := range want {
		if got := m.value(t, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	if _, ok := m[`listwatch_watch_dispatch_duration_seconds_count{resource="configmaps"}`]; !ok {
		t.Error("no dispatch duration")
	}
}

func TestReadyzDuringShutdown(t *testing.T) {
	o := newObservedServer(t, Config{}, (*Server).Handler)
	if code, _, _ := get(t, o.ts.Client(), "GET", o.ts.URL+"/readyz", nil); code != http.StatusOK {
		t.Fatalf("readyz before shutdown: %d", code)
	}
	o.s.Close()
	for path, want := range map[string]int{"/readyz": http.StatusInternalServerError, "/livez": http.StatusOK, "/healthz": http.StatusOK} {
		if code, _, body := get(t, o.ts.Client(), "GET", o.ts.URL+path, nil); code != want {
			t.Errorf("%s during shutdown: %d %s, want %d", path, code, body, want)
		}
	}
}
