package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestWriteNamesTheObject: an update whose object has no name, or
// another than the URL's, is refused first with kube's checkName
// messages, whatever the subresource (a nameless resize once panicked).
func TestWriteNamesTheObject(t *testing.T) {
	store := memory.New()
	defer store.Close()
	h := quotaTestServer(t, store).h
	send := func(method, path, contentType, body string) (int, api.Object) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		h.ServeHTTP(rec, req)
		obj, _ := api.ParseObject(rec.Body.Bytes())
		return rec.Code, obj
	}
	const pods = "/api/v1/namespaces/default/pods"
	if code, obj := send("POST", pods, mediaJSON, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	const nameless = `the name of the object (p based on URL) was undeterminable: name must be provided`
	for _, tc := range []struct{ method, path, contentType, body, want string }{
		{"PUT", pods + "/p", mediaJSON, `{"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, nameless},
		{"PUT", pods + "/p/status", mediaJSON, `{"status":{"phase":"Running"}}`, nameless},
		{"PUT", pods + "/p/resize", mediaJSON, `{"spec":{"containers":[{"name":"c"}]}}`, nameless},
		{"PUT", pods + "/p/ephemeralcontainers", mediaJSON, `{"spec":{"ephemeralContainers":[]}}`, nameless},
		{"PUT", pods + "/p/resize", mediaJSON, `{"metadata":{"name":"q"},"spec":{"containers":[{"name":"c"}]}}`,
			`the name of the object (q) does not match the name on the URL (p)`},
		{"PATCH", pods + "/p/resize", mediaMergePatch, `{"metadata":{"name":null}}`, nameless},
	} {
		code, obj := send(tc.method, tc.path, tc.contentType, tc.body)
		if code != http.StatusBadRequest || obj["message"] != tc.want {
			t.Errorf("%s %s %s: %d %v, want 400 %q", tc.method, tc.path, tc.body, code, obj["message"], tc.want)
		}
	}
}
