package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
)

// newTestServer starts a Server on a memory store behind a real socket.
func newTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	s, err := New(t.Context(), Config{Storage: store, NamespaceDeletionGracePeriod: testNamespaceGrace})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

// call makes one request and returns the status code and decoded body.
func call(t *testing.T, ts *httptest.Server, method, path, contentType, body string) (int, api.Object) {
	t.Helper()
	return send(t, ts, method, path, contentType, "", body)
}

func TestCRUD(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, created := call(t, ts, "POST", cms, mediaJSON, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"x"}},"data":{"k":"v"}}`)
	if code != http.StatusCreated || created.UID() == "" || created.ResourceVersion() == "" || created.MetaString("creationTimestamp") == "" {
		t.Fatalf("create: %d %v", code, created)
	}
	code, got := call(t, ts, "GET", cms+"/a", "", "")
	if code != http.StatusOK || got.ResourceVersion() != created.ResourceVersion() || got["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("get: %d %v", code, got)
	}
	stale := created.ResourceVersion()
	code, updated := call(t, ts, "PUT", cms+"/a", mediaJSON, `{"metadata":{"name":"a","labels":{"app":"x"},"resourceVersion":"`+stale+`"},"data":{"k":"v2"}}`)
	if code != http.StatusOK || updated.ResourceVersion() == stale || updated.UID() != created.UID() {
		t.Fatalf("update: %d %v", code, updated)
	}
	code, conflict := call(t, ts, "PUT", cms+"/a", mediaJSON, `{"metadata":{"name":"a","resourceVersion":"`+stale+`"},"data":{"k":"v3"}}`)
	if code != http.StatusConflict || conflict["reason"] != "Conflict" {
		t.Fatalf("stale update: %d %v", code, conflict)
	}
	code, list := call(t, ts, "GET", "/api/v1/configmaps?labelSelector=app%3Dx", "", "")
	items, _ := list["items"].([]any)
	if code != http.StatusOK || len(items) != 1 || list["kind"] != "ConfigMapList" {
		t.Fatalf("list: %d %v", code, list)
	}
	code, patched := call(t, ts, "PATCH", cms+"/a", "application/merge-patch+json", `{"data":{"extra":"1"}}`)
	if code != http.StatusOK || patched["data"].(map[string]any)["extra"] != "1" {
		t.Fatalf("merge patch: %d %v", code, patched)
	}
	code, _ = call(t, ts, "DELETE", cms+"/a", "", "")
	if code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	code, missing := call(t, ts, "GET", cms+"/a", "", "")
	if code != http.StatusNotFound || missing["message"] != `configmaps "a" not found` {
		t.Fatalf("get after delete: %d %v", code, missing)
	}
}

func TestBadInput(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, method, path, contentType, body string
		code                                  int
		reason                                string
	}{
		{"malformed JSON", "POST", cms, mediaJSON, `{"metadata":`, 400, "BadRequest"},
		{"wrong kind", "POST", cms, mediaJSON, `{"kind":"Secret","metadata":{"name":"a"}}`, 400, "BadRequest"},
		{"invalid name", "POST", cms, mediaJSON, `{"metadata":{"name":"Not_Valid"}}`, 422, "Invalid"},
		{"no name", "POST", cms, mediaJSON, `{"metadata":{}}`, 422, "Invalid"},
		{"invalid label", "POST", cms, mediaJSON, `{"metadata":{"name":"a","labels":{"-bad":"x"}}}`, 422, "Invalid"},
		{"missing namespace", "POST", "/api/v1/namespaces/nope/configmaps", mediaJSON, `{"metadata":{"name":"a"}}`, 404, "NotFound"},
		{"unknown content type", "POST", cms, "text/plain", `x`, 415, "UnsupportedMediaType"},
		{"oversized body", "POST", cms, mediaJSON, `{"metadata":{"name":"a"},"data":{"k":"` + strings.Repeat("x", 4<<20) + `"}}`, 413, "RequestEntityTooLarge"},
		{"unknown resource", "GET", "/api/v1/nothings", "", "", 404, "NotFound"},
		{"invalid label selector", "GET", cms + "?labelSelector=a%3D%3D%3Db", "", "", 400, "BadRequest"},
		{"unsupported field selector", "GET", cms + "?fieldSelector=spec.x%3Dy", "", "", 400, "BadRequest"},
		{"malformed resourceVersion", "GET", cms + "?resourceVersion=abc", "", "", 400, "BadRequest"},
		{"match without version", "GET", cms + "?resourceVersionMatch=Exact", "", "", 422, "Invalid"},
		{"strategic patch on unknown media", "PATCH", cms + "/a", "application/x-patch", `{}`, 415, "UnsupportedMediaType"},
		{"delete default namespace", "DELETE", "/api/v1/namespaces/default", "", "", 403, "Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, status := call(t, ts, tt.method, tt.path, tt.contentType, tt.body)
			if code != tt.code || status["kind"] != "Status" || status["reason"] != tt.reason || status["message"] == "" {
				t.Errorf("got %d %v, want %d with reason %s", code, status, tt.code, tt.reason)
			}
		})
	}
	// Nothing above was written.
	_, list := call(t, ts, "GET", cms, "", "")
	if items := list["items"].([]any); len(items) != 0 {
		t.Errorf("rejected requests left objects behind: %v", items)
	}
}

func TestNamespaceDeletionDeletesContents(t *testing.T) {
	ts := newTestServer(t)
	call(t, ts, "POST", "/api/v1/namespaces", mediaJSON, `{"metadata":{"name":"team"}}`)
	call(t, ts, "POST", "/api/v1/namespaces/team/configmaps", mediaJSON, `{"metadata":{"name":"a"}}`)
	call(t, ts, "POST", "/api/v1/namespaces/team/secrets", mediaJSON, `{"metadata":{"name":"s"},"stringData":{"p":"w"}}`)
	call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"keep"}}`)
	if code, _ := call(t, ts, "DELETE", "/api/v1/namespaces/team", "", ""); code != http.StatusOK {
		t.Fatalf("delete namespace: %d", code)
	}
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		code, _ := call(t, ts, "GET", "/api/v1/namespaces/team", "", "")
		return code == http.StatusNotFound
	})
	for _, p := range []string{"/api/v1/namespaces/team/configmaps/a", "/api/v1/namespaces/team/secrets/s"} {
		if code, _ := call(t, ts, "GET", p, "", ""); code != http.StatusNotFound {
			t.Errorf("GET %s after namespace deletion: %d", p, code)
		}
	}
	if code, _ := call(t, ts, "GET", "/api/v1/namespaces/default/configmaps/keep", "", ""); code != http.StatusOK {
		t.Errorf("an object of another namespace was deleted")
	}
}

func TestDiscovery(t *testing.T) {
	ts := newTestServer(t)
	req, _ := http.NewRequest("GET", ts.URL+"/apis", nil)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != mediaDiscoveryV2 {
		t.Fatalf("aggregated discovery Content-Type %q", ct)
	}
	var list api.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("aggregated /apis: %v %s", err, body)
	}
	var names []string
	for _, g := range list.Items {
		names = append(names, g.ObjectMeta.Name)
	}
	// kube 1.37's groups served by default, in the order of its
	// api/discovery/apis.json (by priority).
	want := []string{"apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
		"autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io",
		"admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
		"discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io"}
	if !slices.Equal(names, want) {
		t.Fatalf("aggregated /apis groups %q, want %q", names, want)
	}
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp, err = ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation with the ETag: %d, want 304", resp.StatusCode)
	}
	code, core := call(t, ts, "GET", "/api/v1", "", "")
	b, _ := json.Marshal(core)
	if code != 200 || !bytes.Contains(b, []byte(`"shortNames":["cm"]`)) || !bytes.Contains(b, []byte(`"name":"namespaces/status"`)) ||
		!bytes.Contains(b, []byte(`"storageVersionHash":"qFsyl6wFWjQ="`)) { // kube's, for configmaps
		t.Fatalf("/api/v1: %d %s", code, b)
	}
}

// TestBuiltinUnknownFields checks that built-in kinds drop unknown fields
// as kube's typed decoder does, warn about them by default, and reject
// them with fieldValidation=Strict.
func TestBuiltinUnknownFields(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, st := call(t, ts, "POST", cms+"?fieldValidation=Strict", mediaJSON, `{"metadata":{"name":"s"},"bogus":1}`)
	if code != http.StatusBadRequest || !strings.Contains(st["message"].(string), `unknown field "bogus"`) {
		t.Fatalf("Strict with an unknown field: %d %v", code, st)
	}
	code, obj := call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"w"},"data":{"k":"v"},"bogus":1}`)
	if code != http.StatusCreated || obj["bogus"] != nil || obj["data"] == nil {
		t.Fatalf("default validation: %d %v, want the object without bogus", code, obj)
	}
}

// TestDryRun checks dryRun=All: the answer is as for a real write, and the
// store does not change.
func TestDryRun(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	_, before := call(t, ts, "GET", cms, "", "")
	code, obj := call(t, ts, "POST", cms+"?dryRun=All", mediaJSON, `{"metadata":{"name":"dry"},"data":{"k":"v"}}`)
	if code != http.StatusCreated || obj.UID() == "" || obj.Name() != "dry" {
		t.Fatalf("dry-run create: %d %v", code, obj)
	}
	if code, _ := call(t, ts, "GET", cms+"/dry", "", ""); code != http.StatusNotFound {
		t.Fatalf("a dry-run create was stored: GET %d", code)
	}
	call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"real"},"data":{"k":"v"}}`)
	if code, obj := call(t, ts, "PATCH", cms+"/real?dryRun=All", "application/merge-patch+json", `{"data":{"k":"dry"}}`); code != 200 || obj["data"].(map[string]any)["k"] != "dry" {
		t.Fatalf("dry-run patch: %d %v", code, obj)
	}
	if code, _ := call(t, ts, "DELETE", cms+"/real?dryRun=All", "", ""); code != 200 {
		t.Fatalf("dry-run delete: %d", code)
	}
	_, got := call(t, ts, "GET", cms+"/real", "", "")
	if got["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("dry runs changed the object: %v", got)
	}
	if code, _ := call(t, ts, "POST", cms+"?dryRun=All", mediaJSON, `{"metadata":{"name":"real"}}`); code != http.StatusConflict {
		t.Errorf("dry-run create of an existing name: %d, want 409", code)
	}
	const unsupported = `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["All","Some"]: supported values: "All"`
	if code, st := call(t, ts, "POST", cms+"?dryRun=All&dryRun=Some", mediaJSON, `{"metadata":{"name":"x"}}`); code != http.StatusUnprocessableEntity || st["message"] != unsupported {
		t.Errorf("dryRun=Some: %d %v, want 422 %s", code, st["message"], unsupported)
	}
	_, after := call(t, ts, "GET", cms, "", "")
	if len(after["items"].([]any)) != len(before["items"].([]any))+1 {
		t.Errorf("items before %d, after %d: only the real create should count", len(before["items"].([]any)), len(after["items"].([]any)))
	}
}
