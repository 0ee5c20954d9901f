package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
)

// The hostile requests of issue 14, each against the binary: none may
// corrupt a resource, and every refusal is a Kubernetes Status.

const hostileCMs = "/api/v1/namespaces/default/configmaps"

// answer is a response's code, Status (when it is one) and size.
type answer struct {
	code   int
	status struct{ Kind, Reason, Message string }
	header http.Header
	body   []byte
}

// noRedirects is a client that reports redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// hostile sends one request with the given headers (Content-Type JSON
// unless set; "" removes a header) and reads the whole answer.
func hostile(t *testing.T, s *server, method, path, body string, header ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lineTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{code: resp.StatusCode, header: resp.Header}
	if a.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	_ = json.Unmarshal(a.body, &a.status)
	return a
}

// refused fails unless a is a Status with code.
func refused(t *testing.T, what string, a answer, code int) {
	t.Helper()
	if a.code != code || a.status.Kind != "Status" || a.status.Message == "" {
		t.Errorf("%s: %d %.500s, want a Status with code %d", what, a.code, a.body, code)
	}
}

// healthy fails unless configmaps and namespaces list, and a write
// reaches a watch of configmaps.
func healthy(t *testing.T, s *server) {
	t.Helper()
	for _, path := range []string{hostileCMs, "/api/v1/configmaps", "/api/v1/namespaces"} {
		if a := hostile(t, s, "GET", path, ""); a.code != http.StatusOK {
			t.Fatalf("GET %s: %d %.500s", path, a.code, a.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lineTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+hostileCMs+"?watch=true&fieldSelector=metadata.name%3Dcanary", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	hostile(t, s, "DELETE", hostileCMs+"/canary", "")
	if a := hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"canary"}}`); a.code != http.StatusCreated {
		t.Fatalf("creating the canary: %d %.500s", a.code, a.body)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ADDED"`) || !strings.Contains(line, `"canary"`) {
		t.Fatalf("the watch did not see the canary: %q %v", line, err)
	}
}

// nested is n levels of {"a": ...} around {}.
func nested(n int) string { return strings.Repeat(`{"a":`, n) + "{}" + strings.Repeat("}", n) }

func TestHostileDeepObjects(t *testing.T) {
	s := startServer(t)
	// A deep unknown field: stored pruned or refused, never poisoning.
	start := time.Now()
	a := hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"deep"},"x":`+nested(9_996)+`}`)
	if a.code != http.StatusCreated {
		refused(t, "a deep unknown field", a, http.StatusBadRequest)
	}
	// The same through a merge patch of a namespace, and apply.
	a = hostile(t, s, "PATCH", "/api/v1/namespaces/default", `{"x":`+nested(9_990)+`}`, "Content-Type", "application/merge-patch+json")
	if a.code != http.StatusOK {
		refused(t, "a deep merge patch", a, http.StatusBadRequest)
	}
	hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"applied"}}`)
	for _, m := range []string{"one", "two"} {
		a = hostile(t, s, "PATCH", hostileCMs+"/applied?fieldManager="+m, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied","annotations":{"a":"`+m+`"}},"x":`+nested(9_990)+`}`,
			"Content-Type", "application/apply-patch+yaml")
		if a.code != http.StatusOK && a.code != http.StatusConflict {
			refused(t, "a deep apply", a, http.StatusBadRequest)
		}
		if len(a.body) > 64<<10 {
			t.Errorf("a deep apply by %s answered %d bytes", m, len(a.body))
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("four deep requests took %v", took)
	}
	healthy(t, s)
	s.stop(t)
	s.start(t)
	healthy(t, s)
	for _, path := range []string{hostileCMs + "/deep", hostileCMs + "/applied"} {
		if a := hostile(t, s, "DELETE", path, ""); a.code != http.StatusOK && a.code != http.StatusNotFound {
			t.Errorf("DELETE %s: %d %.500s", path, a.code, a.body)
		}
	}
}

func TestHostilePaths(t *testing.T) {
	s := startServer(t)
	hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"keep"}}`)
	for _, path := range []string{
		hostileCMs + "/..", hostileCMs + "/.", hostileCMs + "/", hostileCMs + "//keep",
		hostileCMs + "/%2E%2E", hostileCMs + "/a%2Fb", "/api/v1/namespaces/default/configmaps/../../kube-system",
	} {
		a := hostile(t, s, "DELETE", path, "")
		if a.code/100 != 4 || a.status.Kind != "Status" {
			t.Errorf("DELETE %s: %d %v, want a 4xx Status", path, a.code, a.header.Get("Location"))
		}
	}
	if a := hostile(t, s, "GET", hostileCMs+"/keep", ""); a.code != http.StatusOK {
		t.Errorf("the configmap was deleted: %d", a.code)
	}
	if a := hostile(t, s, "GET", "/api/v1/namespaces/default", ""); a.code != http.StatusOK {
		t.Errorf("the namespace was deleted: %d", a.code)
	}
	// Our client refuses such names before it sends anything.
	cms := client.NewResource[client.Unstructured](s.client(t), client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default")
	for _, name := range []string{"", ".", "..", "a/b"} {
		if err := cms.Delete(t.Context(), name, client.DeleteOptions{}); err == nil {
			t.Errorf("Delete(%q) succeeded", name)
		}
	}
	if a := hostile(t, s, "GET", hostileCMs+"/keep", ""); a.code != http.StatusOK {
		t.Errorf("the client deleted the configmap: %d", a.code)
	}
}

func TestHostileCrossSite(t *testing.T) {
	s := startServer(t)
	a := hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"typeless"}}`, "Content-Type", "")
	refused(t, "a POST without Content-Type", a, http.StatusUnsupportedMediaType)
	a = hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"plain"}}`, "Content-Type", "text/plain")
	refused(t, "a POST of text/plain", a, http.StatusUnsupportedMediaType)
	a = hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"rebound"}}`, "Host", "evil.example:8080")
	if a.code/100 != 4 || a.status.Kind != "Status" {
		t.Errorf("a POST for Host evil.example: %d %.500s, want a 4xx Status", a.code, a.body)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]:80", s.addr} {
		if a := hostile(t, s, "GET", hostileCMs, "", "Host", host); a.code != http.StatusOK {
			t.Errorf("GET for Host %s: %d %.500s", host, a.code, a.body)
		}
	}
	for _, name := range []string{"typeless", "plain", "rebound"} {
		if a := hostile(t, s, "GET", hostileCMs+"/"+name, ""); a.code != http.StatusNotFound {
			t.Errorf("%s was stored: %d", name, a.code)
		}
	}
}

func TestHostileQueries(t *testing.T) {
	s := startServer(t)
	hostile(t, s, "POST", hostileCMs, `{"metadata":{"name":"q"}}`)
	for _, c := range []struct{ method, path string }{
		{"GET", hostileCMs + "?watch=true&timeoutSeconds=10000000000"},
		{"GET", hostileCMs + "?timeoutSeconds=-1"},
		{"GET", hostileCMs + "/q?resourceVersion=abc"},
		{"GET", hostileCMs + "?limit=abc"},
		{"PATCH", hostileCMs + "/q?fieldManager=m&force=maybe"},
	} {
		body := ""
		if c.method == "PATCH" {
			body = `{"metadata":{"name":"q"}}`
		}
		a := hostile(t, s, c.method, c.path, body, "Content-Type", "application/apply-patch+yaml")
		refused(t, c.method+" "+c.path, a, http.StatusBadRequest)
	}
	// A JSON patch of too many operations is refused with kube's message.
	ops := strings.Repeat(`{"op":"test","path":"/metadata/name","value":"q"},`, 70_000)
	a := hostile(t, s, "PATCH", hostileCMs+"/q", "["+strings.TrimSuffix(ops, ",")+"]", "Content-Type", "application/json-patch+json")
	if a.code != http.StatusRequestEntityTooLarge && a.code != http.StatusUnprocessableEntity {
		t.Errorf("a JSON patch of 70,000 operations: %d %.500s", a.code, a.body)
	}
	if !strings.Contains(a.status.Message, "The allowed maximum operations in a JSON patch is 10000, got 70000") {
		t.Errorf("a JSON patch of 70,000 operations: %q", a.status.Message)
	}
	// A watch from a future resourceVersion is answered, not left hanging.
	start := time.Now()
	a = hostile(t, s, "GET", hostileCMs+"?watch=true&resourceVersion=1000000000", "")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("a watch from a future resourceVersion was answered after %v", took)
	}
	if a.code != http.StatusGatewayTimeout || !strings.HasPrefix(a.status.Message, "Too large resource version") {
		t.Errorf("a watch from a future resourceVersion: %d %.500s", a.code, a.body)
	}
	healthy(t, s)
}

func TestHostileWebSocketTokenOnPlainRequest(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(`s3cret,admin,1,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{addr: freeAddr(t), dataDir: t.TempDir()}
	s.URL = "http://" + s.addr
	s.start(t, "--token-auth-file", tokens)
	t.Cleanup(func() { s.stop(t) })
	protocol := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("s3cret"))
	for _, c := range []struct{ method, path, body string }{
		{"POST", hostileCMs, `{"metadata":{"name":"ws"}}`},
		{"DELETE", hostileCMs, ""},
	} {
		a := hostile(t, s, c.method, c.path, c.body, "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Protocol", protocol)
		refused(t, fmt.Sprintf("%s %s with a WebSocket token", c.method, c.path), a, http.StatusUnauthorized)
	}
}
