package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

// screenServer serves a Server with cfg over HTTP/1.1 and h2c, as listwatch
// serve does, and returns clients of both that never follow a redirect.
func screenServer(t *testing.T, cfg Config) (ts *httptest.Server, clients map[string]*http.Client) {
	t.Helper()
	store := memory.New()
	cfg.Storage = store
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts = serveHTTP(s.Handler())
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h1 := &http.Transport{}
	h2c := &http.Transport{Protocols: unencryptedHTTP2()}
	t.Cleanup(func() { h1.CloseIdleConnections(); h2c.CloseIdleConnections(); s.Close(); ts.Close(); store.Close() })
	return ts, map[string]*http.Client{
		"HTTP/1.1": {Transport: h1, CheckRedirect: noRedirect},
		"HTTP/2":   {Transport: h2c, CheckRedirect: noRedirect},
	}
}

// screenCall sends one request with header and decodes the answer.
func screenCall(t *testing.T, c *http.Client, method, url string, header http.Header, body string) (int, api.Object) {
	t.Helper()
	r := exchangeWith(t, c, method, url, header, body)
	return r.code, r.obj
}

var jsonBody = http.Header{"Content-Type": {mediaJSON}}

// TestPathSegments: no path the mux would clean reaches it, over HTTP/1.1
// or HTTP/2: DELETE configmaps/.. answered a 307 to the namespace, which a
// client following it deleted. A name is kube's 400, any
// other segment a 404, and nothing is deleted.
func TestPathSegments(t *testing.T) {
	ts, clients := screenServer(t, Config{})
	const ns = "/api/v1/namespaces/team"
	const cms = ns + "/configmaps"
	tests := []struct {
		method, path string
		code         int
		message      string
	}{
		{"DELETE", cms + "/..", 400, `Name parameter invalid: "..": may not be '..'`},
		{"DELETE", cms + "/.", 400, `Name parameter invalid: ".": may not be '.'`},
		{"DELETE", cms + "/%2E%2E", 400, `Name parameter invalid: "..": may not be '..'`},
		{"DELETE", "/api/v1/namespaces/..", 400, `Name parameter invalid: "..": may not be '..'`},
		{"GET", cms + "/a%2F..", 400, `Name parameter invalid: "a/..": may not contain '/'`},
		{"GET", cms + "/a%2fb", 400, `Name parameter invalid: "a/b": may not contain '/'`},
		{"GET", cms + "/a%25", 400, `Name parameter invalid: "a%": may not contain '%'`},
		{"PUT", cms + "/a%2F%25", 400, `Name parameter invalid: "a/%": may not contain '/';may not contain '%'`},
		{"DELETE", cms + "/", 404, "the server could not find the requested resource"},
		{"DELETE", cms + "/a/..", 404, "the server could not find the requested resource"},
		{"DELETE", cms + "/a/../", 404, "the server could not find the requested resource"},
		{"DELETE", ns + "/../team/configmaps", 404, "the server could not find the requested resource"},
		{"GET", "/api/v1//namespaces", 404, "the server could not find the requested resource"},
		{"GET", "/api/v1/namespaces/team%2Fconfigmaps/a", 404, "the server could not find the requested resource"},
		{"GET", "/api/./v1/namespaces", 404, "the server could not find the requested resource"},
		{"GET", "/version/../api", 404, "the server could not find the requested resource"},
		{"GET", "//version", 404, "the server could not find the requested resource"},
	}
	for proto, c := range clients {
		for _, p := range []string{"/api/v1/namespaces", cms} {
			body := `{"metadata":{"name":"team"}}`
			if p == cms {
				body = `{"metadata":{"name":"a"}}`
			}
			if code, _ := screenCall(t, c, "POST", ts.URL+p, jsonBody, body); code != http.StatusCreated && code != http.StatusConflict {
				t.Fatalf("%s: create in %s: %d", proto, p, code)
			}
		}
		for _, tt := range tests {
			t.Run(proto+" "+tt.method+" "+tt.path, func(t *testing.T) {
				code, status := screenCall(t, c, tt.method, ts.URL+tt.path, jsonBody, "")
				if code != tt.code || status["kind"] != "Status" || status["message"] != tt.message {
					t.Errorf("got %d %v, want %d %q", code, status, tt.code, tt.message)
				}
			})
		}
		for _, p := range []string{ns, cms + "/a"} {
			if code, _ := screenCall(t, c, "GET", ts.URL+p, nil, ""); code != http.StatusOK {
				t.Errorf("%s: %s is gone after the refused requests: %d", proto, p, code)
			}
		}
	}
}

// TestLoopbackHost: with LoopbackOnly (anonymous serving on loopback), a
// Host that is not loopback is refused before anything is read or written,
// so that a web page on a name rebound to 127.0.0.1 cannot use the server;
// loopback names and addresses with any port pass.
func TestLoopbackHost(t *testing.T) {
	ts, clients := screenServer(t, Config{LoopbackOnly: true})
	const cms = "/api/v1/namespaces/default/configmaps"
	for proto, c := range clients {
		for _, host := range []string{"localhost", "LOCALHOST:8080", "127.0.0.1", "127.1.2.3:443", "[::1]:8080", "[::1]"} {
			if code, _ := screenCall(t, c, "GET", ts.URL+cms, http.Header{"Host": {host}}, ""); code != http.StatusOK {
				t.Errorf("%s Host %s: %d, want 200", proto, host, code)
			}
		}
		for _, host := range []string{"rebound.example:8080", "rebound.example", "localhost.rebound.example", "10.0.0.1:8080", "[fe80::1]:80", "0.0.0.0"} {
			code, status := screenCall(t, c, "POST", ts.URL+cms, http.Header{"Host": {host}, "Content-Type": {mediaJSON}}, `{"metadata":{"name":"a"}}`)
			want := `host "` + host + `" is not allowed: anonymous requests are served to loopback names and addresses only`
			if code != http.StatusForbidden || status["reason"] != "Forbidden" || status["message"] != want {
				t.Errorf("%s Host %s: %d %v, want 403 %q", proto, host, code, status, want)
			}
		}
	}
	_, list := screenCall(t, clients["HTTP/1.1"], "GET", ts.URL+cms, nil, "")
	if items, _ := list["items"].([]any); len(items) != 0 {
		t.Errorf("a refused request wrote: %v", items)
	}
}

// TestLoopbackOrigin: with LoopbackOnly, a request a page of another
// origin sent is refused, a WebSocket watch above all, which a browser lets
// any page open to 127.0.0.1 and read; a page served from loopback, and a
// client that sends no Origin, pass.
func TestLoopbackOrigin(t *testing.T) {
	ts, clients := screenServer(t, Config{LoopbackOnly: true})
	const cms = "/api/v1/namespaces/default/configmaps"
	c := clients["HTTP/1.1"]
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]", "https://localhost"} {
		if code, _ := screenCall(t, c, "GET", ts.URL+cms, http.Header{"Origin": {origin}}, ""); code != http.StatusOK {
			t.Errorf("Origin %s: %d, want 200", origin, code)
		}
	}
	for _, origin := range []string{"https://evil.example", "null", "http://localhost.evil.example", "http://127.0.0.1.evil.example:8080", "http://10.0.0.1"} {
		code, status := screenCall(t, c, "GET", ts.URL+cms, http.Header{"Origin": {origin}}, "")
		want := `origin "` + origin + `" is not allowed: anonymous requests are served to loopback names and addresses only`
		if code != http.StatusForbidden || status["reason"] != "Forbidden" || status["message"] != want {
			t.Errorf("Origin %s: %d %v, want 403 %q", origin, code, status, want)
		}
	}
	watch := strings.Replace(ts.URL, "http://", "ws://", 1) + cms + "?watch=true"
	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(t.Context(), watch, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	}
	if _, resp, err := dial("https://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a WebSocket watch from another origin: %v %v, want 403", resp, err)
	}
	conn, _, err := dial("http://localhost:3000")
	if err != nil {
		t.Fatalf("a WebSocket watch from a loopback page: %v", err)
	}
	conn.CloseNow()
}

// TestAnyHostWithoutLoopbackOnly: without LoopbackOnly (an authenticated
// or deliberately exposed server) neither Host nor Origin is checked.
func TestAnyHostWithoutLoopbackOnly(t *testing.T) {
	ts, clients := screenServer(t, Config{})
	header := http.Header{"Host": {"api.example:6443"}, "Origin": {"https://dashboard.example"}}
	if code, _ := screenCall(t, clients["HTTP/1.1"], "GET", ts.URL+"/api/v1/namespaces", header, ""); code != http.StatusOK {
		t.Errorf("GET with another Host and Origin: %d, want 200", code)
	}
}

// TestBodyContentType: a write's body needs a JSON, YAML, protobuf or
// patch Content-Type; without one (what a web page can send across sites)
// it is kube's 415 and nothing is written. A DELETE
// without a body needs none.
func TestBodyContentType(t *testing.T) {
	ts, clients := screenServer(t, Config{})
	c := clients["HTTP/1.1"]
	const cms = "/api/v1/namespaces/default/configmaps"
	const objectTypes = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	const patchTypes = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
	if code, _ := screenCall(t, c, "POST", ts.URL+cms, jsonBody, `{"metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	// A body without a type is JSON, as kube reads it, but not from a web
	// page (it says so in Origin, here one of this machine's).
	if code, _ := screenCall(t, c, "POST", ts.URL+cms, nil, `{"metadata":{"name":"typeless"}}`); code != http.StatusCreated {
		t.Errorf("POST without a type: %d, want 201", code)
	}
	tests := []struct {
		name, method, path, contentType, body, message string
	}{
		{"POST without", "POST", cms, "", `{"metadata":{"name":"b"}}`, objectTypes},
		{"POST text/plain", "POST", cms, "text/plain", `{"metadata":{"name":"b"}}`, objectTypes},
		{"POST form", "POST", cms, "application/x-www-form-urlencoded", `{"metadata":{"name":"b"}}`, objectTypes},
		{"POST malformed", "POST", cms, "application/json;;", `{"metadata":{"name":"b"}}`, objectTypes},
		{"PUT without", "PUT", cms + "/a", "", `{"metadata":{"name":"a"},"data":{"k":"v"}}`, objectTypes},
		{"PATCH without", "PATCH", cms + "/a", "", `{"data":{"k":"v"}}`, patchTypes},
		{"PATCH JSON", "PATCH", cms + "/a", mediaJSON, `{"data":{"k":"v"}}`, patchTypes},
		{"DELETE without", "DELETE", cms + "/a", "", `{"kind":"DeleteOptions","apiVersion":"v1"}`, objectTypes},
		{"deletecollection without", "DELETE", cms, "", `{"kind":"DeleteOptions","apiVersion":"v1"}`, objectTypes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := http.Header{"Content-Type": {tt.contentType}, "Origin": {"http://127.0.0.1:8001"}}
			code, status := screenCall(t, c, tt.method, ts.URL+tt.path, header, tt.body)
			if code != http.StatusUnsupportedMediaType || status["reason"] != "UnsupportedMediaType" || status["message"] != tt.message {
				t.Errorf("got %d %v, want 415 %q", code, status, tt.message)
			}
		})
	}
	code, got := screenCall(t, c, "GET", ts.URL+cms+"/a", nil, "")
	if code != http.StatusOK || got["data"] != nil {
		t.Errorf("a refused write changed the object: %d %v", code, got)
	}
	if code, _ := screenCall(t, c, "DELETE", ts.URL+cms+"/a", nil, ""); code != http.StatusOK {
		t.Errorf("DELETE without a body: %d, want 200", code)
	}
	if code, _ := screenCall(t, c, "POST", ts.URL+cms, http.Header{"Content-Type": {"application/json; charset=utf-8"}}, `{"metadata":{"name":"c"}}`); code != http.StatusCreated {
		t.Errorf("POST with a charset: %d, want 201", code)
	}
}
