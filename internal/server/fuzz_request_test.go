package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

// A request of FuzzRequestPath: its verb, path and media type. The body
// is the fuzzer's document, wrapped and placed by shape.
var fuzzOps = []struct {
	method, path, mediaType string
	create                  bool // the object must not exist before
}{
	{"POST", fuzzCMs, mediaJSON, true},
	{"POST", fuzzCMs, mediaYAML, true},
	{"PUT", fuzzCMs + "/f", mediaJSON, false},
	{"PATCH", fuzzCMs + "/f", mediaMergePatch, false},
	{"PATCH", fuzzCMs + "/f", mediaJSONPatch, false},
	{"PATCH", fuzzCMs + "/f", mediaStrategicPatch, false},
	{"PATCH", fuzzCMs + "/f?fieldManager=fuzz", mediaApplyPatchYAML, false},
	{"PATCH", fuzzCMs + "/f?fieldManager=other&force=true", mediaApplyPatchYAML, false},
	{"PATCH", fuzzCMs + "/g?fieldManager=fuzz", mediaApplyPatchYAML, true},
	{"PATCH", "/api/v1/namespaces/fz", mediaMergePatch, false},
	{"PATCH", "/api/v1/namespaces/fz", mediaStrategicPatch, false},
	{"PATCH", "/api/v1/namespaces/fz?fieldManager=fuzz", mediaApplyPatchYAML, false},
	{"DELETE", fuzzCMs + "/f", mediaJSON, false},
	{"POST", fuzzCMs, mediaProtobuf, true},
	{"GET", fuzzCMs, "", false}, // the document is the query
	{"GET", "/api/v1/configmaps", "", false},
	{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", mediaJSON, false},
	{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", mediaYAML, false},
	{"POST", "/api/v1/namespaces/default/pods/f/eviction", mediaJSON, false}, // decoded and checked; no such pod
}

const fuzzCMs = "/api/v1/namespaces/default/configmaps"

// fuzzShapes place the fuzzer's (wrapped) document in a request body.
var fuzzShapes = []func(doc string) string{
	func(doc string) string { return doc },
	func(doc string) string { return `{"metadata":{"name":"f"},"x":` + doc + `}` },
	func(doc string) string { return `{"metadata":{"name":"f"},"data":` + doc + `}` },
	func(doc string) string { return `{"metadata":{"name":"f","labels":` + doc + `}}` },
	func(doc string) string { return `{"metadata":{"name":"f","annotations":{"a":` + doc + `}}}` },
	func(doc string) string { return `[{"op":"add","path":"/x","value":` + doc + `}]` },
	func(doc string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f"},"x":` + doc + `}`
	},
}

// fuzzWrap nests doc in n levels of objects, or of arrays if arrays.
func fuzzWrap(doc string, n int, arrays bool) string {
	open, end := `{"a":`, `}`
	if arrays {
		open, end = `[`, `]`
	}
	return strings.Repeat(open, n) + doc + strings.Repeat(end, n)
}

// fuzzMaxNest is beyond every decoder's depth limit, so that the fuzzer
// reaches both sides of it.
const fuzzMaxNest = 12_000

// FuzzRequestPath drives the whole request path (decode, validate, patch,
// apply, store, list, watch, delete) with deep, wide and malformed
// documents. Every answer must be a success or a 4xx Status, and after
// each request the resources still list, their watches still deliver, and
// the object can be deleted.
func FuzzRequestPath(f *testing.F) {
	h := newFuzzHarness(f)
	f.Add(uint8(0), uint8(1), `{}`, uint16(9_996), false)      // a deep unknown field
	f.Add(uint8(9), uint8(1), `{}`, uint16(9_990), false)      // a deep merge patch of a namespace
	f.Add(uint8(6), uint8(6), `{"b":1}`, uint16(9_990), false) // a deep apply
	f.Add(uint8(7), uint8(6), `{"b":2}`, uint16(9_990), false) // its conflict, forced
	f.Add(uint8(6), uint8(6), `{"b":2}`, uint16(2_000), true)  // deep arrays
	f.Add(uint8(3), uint8(3), `{"k":"v"}`, uint16(0), false)   // labels
	f.Add(uint8(4), uint8(5), `"v"`, uint16(100), false)       // a JSON patch
	f.Add(uint8(5), uint8(2), `{"k":null}`, uint16(0), false)  // a strategic patch
	f.Add(uint8(1), uint8(0), "metadata:\n  name: f\n", uint16(0), false)
	f.Add(uint8(2), uint8(2), `{"k":1e999}`, uint16(0), false)
	f.Add(uint8(12), uint8(0), `{"preconditions":{"uid":"x"}}`, uint16(0), false)
	f.Add(uint8(13), uint8(0), "\n\x03\x0a\x01f", uint16(0), false) // protobuf
	f.Add(uint8(14), uint8(0), "labelSelector=a+in+(b,c)&limit=1&resourceVersion=0", uint16(0), false)
	f.Add(uint8(15), uint8(0), "watch=1&resourceVersion=1&allowWatchBookmarks=true", uint16(0), false)
	f.Add(uint8(16), uint8(0), `{"spec":{"user":"u","extra":{"k":["v"]},"resourceAttributes":{"verb":"get"}}}`, uint16(0), false)
	f.Add(uint8(17), uint8(1), `{}`, uint16(9_990), false) // a deep unknown field of a review
	f.Add(uint8(18), uint8(0), `{"metadata":{"name":"f"},"deleteOptions":{"dryRun":["All"],"preconditions":{"uid":"u"}}}`, uint16(0), false)
	f.Fuzz(func(t *testing.T, op, shape uint8, doc string, nest uint16, arrays bool) {
		o := fuzzOps[int(op)%len(fuzzOps)]
		body := fuzzShapes[int(shape)%len(fuzzShapes)](fuzzWrap(doc, int(nest)%fuzzMaxNest, arrays))
		h.reset(t)
		if !o.create {
			h.must(t, "POST", fuzzCMs, `{"metadata":{"name":"f"},"data":{"k":"v"}}`, http.StatusCreated)
		}
		path := o.path
		if o.method == "GET" {
			q, err := url.ParseQuery(doc)
			if err != nil {
				return
			}
			if q.Has("watch") {
				q.Set("timeoutSeconds", "1") // a watch ends, to be answered
			}
			path, body = path+"?"+q.Encode(), ""
		}
		h.check(t, o.method, path, o.mediaType, body)
		h.live(t)
		h.reset(t)
		h.must(t, "GET", fuzzCMs+"/f", "", http.StatusNotFound)
	})
}

// reset deletes the fuzzed objects, which must be possible whatever was
// stored in them.
func (h *fuzzHarness) reset(t *testing.T) {
	t.Helper()
	h.must(t, "DELETE", fuzzCMs+"/f", "", http.StatusOK, http.StatusNotFound)
	h.must(t, "DELETE", fuzzCMs+"/g", "", http.StatusOK, http.StatusNotFound)
}

// fuzzHarness is one server, and for each fuzzed resource a canary
// object whose writes must keep reaching watches.
type fuzzHarness struct {
	ts      *httptest.Server
	canary  map[string]string // path -> resourceVersion of its last write
	written int
}

func newFuzzHarness(f *testing.F) *fuzzHarness {
	store := memory.New()
	s, err := New(f.Context(), Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	h := &fuzzHarness{ts: httptest.NewServer(s.Handler()), canary: map[string]string{}}
	f.Cleanup(func() { h.ts.Close(); s.Close(); store.Close() })
	h.must(f, "POST", "/api/v1/namespaces", `{"metadata":{"name":"fz"}}`, http.StatusCreated)
	for _, path := range []string{fuzzCMs + "/canary", "/api/v1/namespaces/canary"} {
		collection, _, _ := strings.Cut(path, "/canary")
		h.must(f, "POST", collection, `{"metadata":{"name":"canary"}}`, http.StatusCreated)
		h.canary[path] = h.writeCanary(f, path)
	}
	return h
}

// do sends one request and returns its code and body.
func (h *fuzzHarness) do(tb testing.TB, method, path, mediaType, body string) (int, []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.ts.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", mediaType)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		tb.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// must sends a request whose answer must have one of codes.
func (h *fuzzHarness) must(tb testing.TB, method, path, body string, codes ...int) {
	tb.Helper()
	code, b := h.do(tb, method, path, mediaJSON, body)
	for _, c := range codes {
		if code == c {
			return
		}
	}
	tb.Fatalf("%s %s: %d %.2000s, want one of %v", method, path, code, b, codes)
}

// maxAnswer bounds any answer to a fuzzed request: the largest body
// accepted (3 MiB) with what the server adds to it.
const maxAnswer = 4 << 20

// check sends the fuzzed request: its answer must be a success, or a
// Status with a 4xx code; any answer but a list or a watch is no larger than
// maxAnswer.
func (h *fuzzHarness) check(t *testing.T, method, path, mediaType, body string) {
	t.Helper()
	code, b := h.do(t, method, path, mediaType, body)
	if len(b) > maxAnswer && (method != "GET" || code >= 300) { // a list or watch holds what was written
		t.Fatalf("%s %s: a %d answer of %d bytes", method, path, code, len(b))
	}
	if code < 300 {
		return
	}
	if code >= 500 {
		t.Fatalf("%s %s: %d %.2000s", method, path, code, b)
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != code || st.Message == "" {
		t.Fatalf("%s %s: %d answered %.2000s, not a Status (%v)", method, path, code, b, err)
	}
}

// writeCanary changes the canary at path and returns its resourceVersion.
func (h *fuzzHarness) writeCanary(tb testing.TB, path string) string {
	tb.Helper()
	h.written++
	body := fmt.Sprintf(`{"metadata":{"name":"canary","labels":{"n":"%d"}}}`, h.written)
	code, b := h.do(tb, "PUT", path, mediaJSON, body)
	var obj api.Object
	if err := json.Unmarshal(b, &obj); err != nil || code != http.StatusOK {
		tb.Fatalf("PUT %s: %d %.2000s", path, code, b)
	}
	return obj.ResourceVersion()
}

// live checks that the fuzzed resources list, and that a write to each
// canary reaches a watch from its previous write.
func (h *fuzzHarness) live(t *testing.T) {
	t.Helper()
	for _, path := range []string{fuzzCMs, "/api/v1/configmaps", "/api/v1/namespaces"} {
		h.must(t, "GET", path, "", http.StatusOK)
	}
	for path, from := range h.canary {
		collection, _, _ := strings.Cut(path, "/canary")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		url := h.ts.URL + collection + "?watch=true&fieldSelector=metadata.name%3Dcanary&resourceVersion=" + from
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := h.ts.Client().Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %s: %v %v", url, resp, err)
		}
		rv := h.writeCanary(t, path)
		h.awaitEvent(t, path, bufio.NewReader(resp.Body), rv)
		resp.Body.Close()
		cancel()
		h.canary[path] = rv
	}
}

// awaitEvent reads watch until the event at rv; a stalled watch fails at
// the request's deadline.
func (h *fuzzHarness) awaitEvent(t *testing.T, canary string, watch *bufio.Reader, rv string) {
	t.Helper()
	for {
		line, err := watch.ReadBytes('\n')
		if err != nil {
			t.Fatalf("watch of %s ended before resourceVersion %s: %v", canary, rv, err)
		}
		var ev api.WatchEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("watch of %s: %v: %.2000s", canary, err, line)
		}
		obj, err := api.ParseObject(ev.Object)
		if err != nil {
			t.Fatalf("watch of %s: %v", canary, err)
		}
		if obj.ResourceVersion() == rv {
			return
		}
	}
}
