package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client"
)

// TestHostileEdges drives a fresh `listwatch serve` (anonymous, on
// loopback) with hostile requests: a name that is
// another path, a body without a Content-Type, a Host rebound to
// loopback, another site's page. Each is refused with a Status and changes nothing; our client
// and kubectl still work.
func TestHostileEdges(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c := s.client(t)
	cms := client.NewResource[*configMap](c, configMaps, "default")
	if _, err := cms.Create(ctx, newConfigMap("a", nil), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(noRedirect.CloseIdleConnections)
	const cm = "/api/v1/namespaces/default/configmaps"
	for _, tt := range []struct {
		method, path, host, origin, contentType string
		code                                    int
		reason                                  string
	}{
		{"DELETE", cm + "/..", "", "", "", http.StatusBadRequest, "BadRequest"},
		{"DELETE", cm + "/", "", "", "", http.StatusNotFound, "NotFound"},
		{"POST", cm, "", "http://localhost:3000", "", http.StatusUnsupportedMediaType, "UnsupportedMediaType"}, // a page's typeless body
		{"POST", cm, "rebound.example:8080", "", "application/json", http.StatusForbidden, "Forbidden"},
		{"GET", cm, "rebound.example", "", "", http.StatusForbidden, "Forbidden"},
		{"GET", cm + "?watch=true", "", "https://evil.example", "", http.StatusForbidden, "Forbidden"},
	} {
		req, err := http.NewRequestWithContext(ctx, tt.method, s.URL+tt.path, strings.NewReader(`{"metadata":{"name":"b"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if tt.host != "" {
			req.Host = tt.host
		}
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var status struct{ Kind, Reason string }
		err = json.NewDecoder(resp.Body).Decode(&status)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || err != nil || status.Kind != "Status" || status.Reason != tt.reason {
			t.Errorf("%s %s (Host %q, Origin %q): %d %+v %v, want %d %s", tt.method, tt.path, tt.host, tt.origin, resp.StatusCode, status, err, tt.code, tt.reason)
		}
	}
	for _, name := range []string{"..", "", "."} {
		if err := cms.Delete(ctx, name, client.DeleteOptions{}); err == nil {
			t.Errorf("Delete(%q) was sent", name)
		}
	}
	namespaces := client.NewResource[*configMap](c, client.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "")
	if _, err := namespaces.Get(ctx, "default"); err != nil {
		t.Errorf("namespace default after the refused requests: %v", err)
	}
	if items, _, _, err := cms.List(ctx, client.ListOptions{}); err != nil || len(items) != 1 {
		t.Errorf("configmaps after the refused requests: %d %v, want a alone", len(items), err)
	}

	kubectl := needKubectl(t)
	for _, args := range [][]string{
		{"create", "configmap", "k", "--from-literal=x=1"},
		{"patch", "configmap", "k", "-p", `{"data":{"x":"2"}}`},
		{"apply", "--server-side", "--force-conflicts", "-f", "-"},
		{"delete", "configmap", "k"},
	} {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--server", s.URL, "-n", "default"}, args...)...)
		cmd.Stdin = strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\ndata:\n  x: \"3\"\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
