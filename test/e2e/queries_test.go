package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// status is what a test reads of a Status answer.
type status struct{ Kind, Reason, Message string }

func parseStatus(t *testing.T, what string, code, want int, body []byte) status {
	t.Helper()
	var st status
	if err := json.Unmarshal(body, &st); err != nil || code != want || st.Kind != "Status" || st.Message == "" {
		t.Errorf("%s: %d %.500s, want a Status with code %d", what, code, body, want)
	}
	return st
}

// TestHostileQueries sends the binary hostile query parameters: each is refused with kube's Status, and a watch from a future
// resourceVersion is answered instead of hanging.
func TestHostileQueries(t *testing.T) {
	s := startServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if code, b := s.request(t, "POST", cms, "application/json", `{"metadata":{"name":"q"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	for _, path := range []string{cms + "?watch=true&timeoutSeconds=-1", cms + "/q?resourceVersion=abc", cms + "?limit=abc"} {
		code, b := s.request(t, "GET", path, "", "")
		parseStatus(t, path, code, http.StatusBadRequest, b)
	}
	ops := strings.Repeat(`{"op":"test","path":"/a","value":1},`, 70_000) // 2.5 MB: within the body limit
	code, b := s.request(t, "PATCH", cms+"/q", "application/json-patch+json", "["+strings.TrimSuffix(ops, ",")+"]")
	st := parseStatus(t, "a JSON patch of 70,000 operations", code, http.StatusRequestEntityTooLarge, b)
	if !strings.Contains(st.Message, "The allowed maximum operations in a JSON patch is 10000, got 70000") {
		t.Errorf("a JSON patch of 70,000 operations: %q", st.Message)
	}
	start := time.Now()
	code, b = s.request(t, "GET", cms+"?watch=true&resourceVersion=1000000000&timeoutSeconds=30", "", "")
	if took := time.Since(start); took > lineTimeout {
		t.Errorf("a watch from a future resourceVersion was answered after %v", took)
	}
	if st := parseStatus(t, "a watch from a future resourceVersion", code, http.StatusGatewayTimeout, b); !strings.HasPrefix(st.Message, "Too large resource version") {
		t.Errorf("a watch from a future resourceVersion: %q", st.Message)
	}
}

// TestWebSocketTokenOnPlainRequest: the bearer token of a WebSocket
// subprotocol authenticates a WebSocket watch only, never a write that
// carries the upgrade headers.
func TestWebSocketTokenOnPlainRequest(t *testing.T) {
	s := startServer(t, "--token-auth-file", tokenFile(t, `s3cret,admin,1,"system:masters"`), "--anonymous-auth=false")
	protocol := "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte("s3cret"))
	for _, method := range []string{"POST", "DELETE"} {
		req, err := http.NewRequestWithContext(t.Context(), method, s.URL+"/api/v1/namespaces/default/configmaps", strings.NewReader(`{"metadata":{"name":"ws"}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Protocol", protocol)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with a WebSocket token: %d, want 401", method, resp.StatusCode)
		}
	}
}
