package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

// benchServer is a Server on a memory store whose access log is formatted
// but discarded, so that a benchmark counts the server's work, not a disk's.
func benchServer(b *testing.B) http.Handler {
	b.Helper()
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(b.Context(), Config{Storage: store, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s.Handler()
}

// benchConfigMap is a ConfigMap of about 1 KiB, as `listwatch bench crud` sends.
func benchConfigMap(name string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name +
		`","namespace":"default"},"data":{"ts":"1763794353000000000","pad":"` + strings.Repeat("x", 900) + `"}}`
}

const benchConfigMaps = "/api/v1/namespaces/default/configmaps"

// serveBench serves one request and fails unless it answers code.
func serveBench(b *testing.B, h http.Handler, method, path, body string, code int) {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", mediaJSON)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != code {
		b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
}

func BenchmarkCreate(b *testing.B) { benchCreate(b, benchServer(b)) }

// benchCreate creates 1 KiB ConfigMaps through h.
func benchCreate(b *testing.B, h http.Handler) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap(fmt.Sprint("c", i)), http.StatusCreated)
		i++
	}
}

// BenchmarkUpdate replaces a 1 KiB ConfigMap with one whose data value
// changed, as `listwatch bench fanout` does: a PUT without resourceVersion
// or managedFields.
func BenchmarkUpdate(b *testing.B) {
	h := benchServer(b)
	serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap("a"), http.StatusCreated)
	body := benchConfigMap("a")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// The same length every time: ts changes, not the object's size.
		ts := fmt.Sprintf("%019d", i)
		serveBench(b, h, http.MethodPut, benchConfigMaps+"/a", strings.Replace(body, "1763794353000000000", ts, 1), http.StatusOK)
		i++
	}
}

func BenchmarkGet(b *testing.B) {
	h := benchServer(b)
	serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap("a"), http.StatusCreated)
	b.ReportAllocs()
	for b.Loop() {
		serveBench(b, h, http.MethodGet, benchConfigMaps+"/a", "", http.StatusOK)
	}
}

// BenchmarkList lists 100 ConfigMaps of 1 KiB from the watch cache.
func BenchmarkList(b *testing.B) { benchList(b, benchServer(b)) }

// benchList lists 100 ConfigMaps of 1 KiB through h.
func benchList(b *testing.B, h http.Handler) {
	for i := range 100 {
		serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap(fmt.Sprint("c", i)), http.StatusCreated)
	}
	b.ReportAllocs()
	for b.Loop() {
		serveBench(b, h, http.MethodGet, benchConfigMaps, "", http.StatusOK)
	}
}

// TestStoredJSON checks that the responses written from stored bytes (get,
// create, update) are what encoding the decoded object gives: canonical
// JSON (sorted keys) ending with a newline, with the write's
// resourceVersion; and that the forms that need the decoded object still
// get it.
func TestStoredJSON(t *testing.T) {
	ts := newTestServer(t)
	created := rawCall(t, ts, http.MethodPost, benchConfigMaps, mediaJSON, benchConfigMap("a"), http.StatusCreated)
	got := rawCall(t, ts, http.MethodGet, benchConfigMaps+"/a", mediaJSON, "", http.StatusOK)
	updated := rawCall(t, ts, http.MethodPut, benchConfigMaps+"/a", mediaJSON, `{"metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`, http.StatusOK)
	gotUpdated := rawCall(t, ts, http.MethodGet, benchConfigMaps+"/a", mediaJSON, "", http.StatusOK)
	for _, b := range [][]byte{created, got, updated, gotUpdated} {
		obj, err := api.ParseObject(b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(obj)
		if string(b) != string(want)+"\n" {
			t.Fatalf("not canonical:\ngot  %s\nwant %s", b, want)
		}
		if obj.ResourceVersion() == "" || obj.UID() == "" || obj.APIVersion() != "v1" {
			t.Fatalf("missing fields: %s", b)
		}
	}
	for _, pair := range [][2][]byte{{created, got}, {updated, gotUpdated}} {
		if string(pair[0]) != string(pair[1]) {
			t.Fatalf("the write answered\n%s\nget answered\n%s", pair[0], pair[1])
		}
	}
	if string(created) == string(updated) {
		t.Fatalf("the update answered what the create did: %s", updated)
	}
	yml := rawCall(t, ts, http.MethodGet, benchConfigMaps+"/a", mediaYAML, "", http.StatusOK)
	if !strings.Contains(string(yml), "resourceVersion: \"") {
		t.Fatalf("YAML: %s", yml)
	}
}

// rawCall makes one request accepting accept and returns the body, which
// must come with code.
func rawCall(t *testing.T, ts *httptest.Server, method, path, accept, body string, code int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mediaJSON)
	req.Header.Set("Accept", accept)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != code {
		t.Fatalf("%s %s: %d %v %s", method, path, resp.StatusCode, err, b)
	}
	return b
}
