package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// request makes one request to s and returns the status code and body.
func (s *server) request(t *testing.T, method, path, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestHostileDocuments drives the binary with hostile documents: a ConfigMap whose unknown field nests 10,000 levels (the
// decoder's limit), the same as a merge patch of namespace default, and an
// apply conflicting on thousands of fields; then checks that everything
// still lists, deletes, and lists after a restart. Before, the first made
// every LIST of configmaps answer 500 for good, and the last answered with
// a body of megabytes.
func TestHostileDocuments(t *testing.T) {
	s := startServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	deep := strings.Repeat(`{"a":`, 9999) + "1" + strings.Repeat("}", 9999)
	want := func(what string, code int, got int, body []byte) {
		t.Helper()
		if got != code {
			if len(body) > 300 {
				body = body[:300]
			}
			t.Fatalf("%s: %d, want %d: %s", what, got, code, body)
		}
	}
	code, body := s.request(t, "POST", cms, "application/json", `{"metadata":{"name":"deep"},"x":`+deep+`}`)
	want("create with a field 10,000 levels deep", http.StatusCreated, code, body)
	code, body = s.request(t, "POST", cms, "application/json", `{"metadata":{"name":"deeper"},"x":{"a":`+deep+`}}`)
	want("create with a field 10,001 levels deep", http.StatusBadRequest, code, body)
	code, body = s.request(t, "PATCH", "/api/v1/namespaces/default", "application/merge-patch+json", `{"x":`+deep+`}`)
	want("merge patch of namespace default", http.StatusOK, code, body)

	const keys = 5000
	data := func(v string) string {
		kv := make([]string, keys)
		for i := range kv {
			kv[i] = fmt.Sprintf(`"k%04d":%q`, i, v)
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
	code, body = s.request(t, "POST", cms, "application/json", `{"metadata":{"name":"wide"},"data":`+data("1")+`}`)
	want("create of a wide ConfigMap", http.StatusCreated, code, body)
	code, body = s.request(t, "PATCH", cms+"/wide?fieldManager=other", "application/apply-patch+yaml",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"wide"},"data":`+data("2")+`}`)
	want("conflicting apply", http.StatusConflict, code, body)
	if len(body) > 64<<10 || !strings.Contains(string(body), fmt.Sprintf("Apply failed with %d conflicts", keys)) {
		t.Errorf("apply conflict: %d bytes: %.300s", len(body), body)
	}

	check := func() {
		t.Helper()
		for _, p := range []string{cms, "/api/v1/configmaps", "/api/v1/namespaces"} {
			code, body := s.request(t, "GET", p, "", "")
			var list struct{ Items []json.RawMessage }
			if err := json.Unmarshal(body, &list); code != http.StatusOK || err != nil {
				t.Fatalf("list %s: %d %v", p, code, err)
			}
		}
	}
	check()
	s.stop(t)
	s.start(t)
	check()
	for _, name := range []string{"deep", "wide"} {
		code, body := s.request(t, "DELETE", cms+"/"+name, "", "")
		want("delete "+name, http.StatusOK, code, body)
	}
}
