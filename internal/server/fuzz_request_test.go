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
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
)

// A request of FuzzRequestPath: its verb, path and media type, the kind
// it writes, and what of the stored spec it may change. The body is the
// fuzzer's document, wrapped and placed by shape.
type fuzzOp struct {
	method, path, mediaType string
	target                  *fuzzTarget
	create                  bool     // the object must not exist before
	spec                    []string // nil: not checked; else what may change
}

// fuzzOps are the requests of ConfigMaps, namespaces and reviews, then
// those of kinds with parts (fuzzKindOps).
var fuzzOps = append([]fuzzOp{
	{"POST", fuzzCMs, mediaJSON, fuzzCMTarget, true, nil},
	{"POST", fuzzCMs, mediaYAML, fuzzCMTarget, true, nil},
	{"PUT", fuzzCMs + "/f", mediaJSON, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/f", mediaMergePatch, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/f", mediaJSONPatch, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/f", mediaStrategicPatch, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/f?fieldManager=fuzz", mediaApplyPatchYAML, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/f?fieldManager=other&force=true", mediaApplyPatchYAML, fuzzCMTarget, false, nil},
	{"PATCH", fuzzCMs + "/g?fieldManager=fuzz", mediaApplyPatchYAML, fuzzCMTarget, true, nil},
	{"PATCH", "/api/v1/namespaces/fz", mediaMergePatch, fuzzNSTarget, false, nil},
	{"PATCH", "/api/v1/namespaces/fz", mediaStrategicPatch, fuzzNSTarget, false, nil},
	{"PATCH", "/api/v1/namespaces/fz?fieldManager=fuzz", mediaApplyPatchYAML, fuzzNSTarget, false, nil},
	{"DELETE", fuzzCMs + "/f", mediaJSON, fuzzCMTarget, false, nil},
	{"POST", fuzzCMs, mediaProtobuf, fuzzCMTarget, true, nil},
	{"GET", fuzzCMs, "", fuzzCMTarget, false, nil},
	{"GET", "/api/v1/configmaps", "", fuzzCMTarget, false, nil},
	{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", mediaJSON, fuzzCMTarget, false, nil},
	{"POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", mediaYAML, fuzzCMTarget, false, nil},
}, fuzzKindOps...)

const fuzzCMs = "/api/v1/namespaces/default/configmaps"

// fuzzShapes place the fuzzer's (wrapped) document in a request body of
// a kind without shapes of its own.
var fuzzShapes = []fuzzShape{
	fuzzText(func(doc string) string { return doc }),
	fuzzText(func(doc string) string { return `{"metadata":{"name":"f"},"x":` + doc + `}` }),
	fuzzText(func(doc string) string { return `{"metadata":{"name":"f"},"data":` + doc + `}` }),
	fuzzText(func(doc string) string { return `{"metadata":{"name":"f","labels":` + doc + `}}` }),
	fuzzText(func(doc string) string { return `{"metadata":{"name":"f","annotations":{"a":` + doc + `}}}` }),
	fuzzText(func(doc string) string { return `[{"op":"add","path":"/x","value":` + doc + `}]` }),
	fuzzText(func(doc string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f"},"x":` + doc + `}`
	}),
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
// documents, for ConfigMaps, namespaces, reviews and the kinds with parts:
// pods (status, resize, ephemeralcontainers, binding, the legacy
// bindings), Services, a Deployment's scale, CSRs (approval, status) and
// ClusterTrustBundles. Every answer must be a success, a 4xx Status or a
// 5xx kube answers too (kube5xx). After each request a part left the spec
// alone but for what it may write, Services hold their own cluster IPs
// and node ports, the resources still list, their watches still deliver,
// the objects can be deleted and the streaming engine runs no goroutine
// for a watch that ended.
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
	f.Add(uint8(17), uint8(1), `{}`, uint16(9_990), false)                                                             // a deep unknown field of a review
	f.Add(uint8(18), uint8(3), `{"requests":{"cpu":"1"}}`, uint16(0), false)                                           // a pod created
	f.Add(uint8(19), uint8(1), `[{"type":"Ready","status":"True"}]`, uint16(0), false)                                 // its status
	f.Add(uint8(19), uint8(0), `{"phase":"Running"}`, uint16(0), false)                                                // a status of its own
	f.Add(uint8(20), uint8(11), `{"spec":{"activeDeadlineSeconds":5},"status":{"phase":"Running"}}`, uint16(0), false) // a status patch writing the spec
	f.Add(uint8(25), uint8(11), `{"spec":{"containers":[{"name":"c","image":"evil"}]}}`, uint16(0), false)             // and an ephemeral containers patch
	f.Add(uint8(54), uint8(5), `["server auth"]`, uint16(0), false)                                                    // a CSR's usages changed
	f.Add(uint8(53), uint8(7), `[{"op":"replace","path":"/spec/usages","value":["server auth"]}]`, uint16(0), false)
	f.Add(uint8(22), uint8(3), `{"requests":{"cpu":"150m"},"limits":{"cpu":"200m"}}`, uint16(0), false) // a resize
	f.Add(uint8(24), uint8(2), `[{"name":"e","image":"busybox"}]`, uint16(0), false)                    // an ephemeral container
	f.Add(uint8(24), uint8(2), `[{"name":"e","image":"busybox","envFrom":[{"secretRef":{"name":"s"}}]}]`, uint16(0), false)
	f.Add(uint8(26), uint8(8), `"node-a"`, uint16(0), false)        // a binding
	f.Add(uint8(27), uint8(8), `"node-a"`, uint16(0), false)        // a legacy binding
	f.Add(uint8(27), uint8(9), `{"kind":"Node"}`, uint16(0), false) // one without its pod's name
	f.Add(uint8(33), uint8(0), "watch=1&fieldSelector=spec.nodeName%3D&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", uint16(0), false)
	f.Add(uint8(34), uint8(0), "resourceVersion=0&fieldSelector=status.phase%21%3DRunning", uint16(0), false)
	f.Add(uint8(35), uint8(5), `"`+fuzzSubst+`"`, uint16(0), false)         // a second Service claiming f's address
	f.Add(uint8(35), uint8(7), `30080`, uint16(0), false)                   // a node port
	f.Add(uint8(36), uint8(0), `"`+fuzzSubst+`"`, uint16(0), false)         // a clusterIP changed
	f.Add(uint8(37), uint8(8), `""`, uint16(0), false)                      // a clusterIP emptied
	f.Add(uint8(38), uint8(9), `["10.0.0.7","10.0.0.7"]`, uint16(0), false) // a JSON patch of clusterIPs
	f.Add(uint8(37), uint8(2), `"ExternalName"`, uint16(0), false)          // a type change
	f.Add(uint8(43), uint8(0), `7`, uint16(0), false)                       // a scale
	f.Add(uint8(44), uint8(1), `-1`, uint16(0), false)
	f.Add(uint8(45), uint8(2), `"x"`, uint16(0), false)
	f.Add(uint8(49), uint8(0), "-----BEGIN CERTIFICATE REQUEST-----", uint16(0), false) // PEM garbage
	f.Add(uint8(49), uint8(1), "\x30\x82", uint16(0), false)
	f.Add(uint8(50), uint8(2), `[{"type":"Approved","status":"True","reason":"R"}]`, uint16(0), false) // an approval
	f.Add(uint8(51), uint8(3), `"LS0tLS0="`, uint16(0), false)                                         // a certificate
	f.Add(uint8(57), uint8(0), "not a certificate", uint16(0), false)
	f.Add(uint8(59), uint8(2), `"example.com/s"`, uint16(0), false)                            // a bundle's signer changed
	f.Add(uint8(61), uint8(7), `30081`, uint16(0), false)                                      // a node port, dry run
	f.Add(uint8(62), uint8(0), `"10.0.0.9"`, uint16(0), false)                                 // a cluster IP changed, dry run
	f.Add(uint8(63), uint8(2), `"ExternalName"`, uint16(0), false)                             // a type change, dry run
	f.Add(uint8(64), uint8(10), `{"dryRun":["All"]}`, uint16(0), false)                        // a delete, dry run
	f.Add(uint8(65), uint8(10), `{"preconditions":{"resourceVersion":"1"}}`, uint16(0), false) // a delete, failed
	f.Add(uint8(66), uint8(11), `{"gracePeriodSeconds":30}`, uint16(0), false)
	f.Add(uint8(68), uint8(0), `0`, uint16(0), false) // a ReplicaSet scaled to zero
	f.Add(uint8(69), uint8(2), `3`, uint16(0), false)
	f.Add(uint8(70), uint8(5), "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: f}\nspec: {replicas: 4}\n", uint16(0), false)
	f.Add(uint8(71), uint8(0), `{"dryRun":["All"],"preconditions":{"uid":"u"}}`, uint16(0), false) // an eviction
	f.Add(uint8(71), uint8(1), `{"metadata":{"name":"g"}}`, uint16(0), false)
	f.Fuzz(func(t *testing.T, op, shape uint8, doc string, nest uint16, arrays bool) {
		o := fuzzOps[int(op)%len(fuzzOps)]
		h.reset(t, o.target)
		if !o.create && o.target.seed != "" {
			h.must(t, "POST", o.target.collection, o.target.seed, http.StatusCreated)
		}
		if o.target == fuzzService && !o.create {
			doc = strings.ReplaceAll(doc, fuzzSubst, h.clusterIP(t))
		}
		path, body, watch := o.path, "", false
		if o.method == "GET" { // the document is the query
			q, err := url.ParseQuery(doc)
			if err != nil {
				return
			}
			watch = q.Has("watch") || strings.Contains(path, "/watch/")
			path += "?" + q.Encode()
		} else {
			body = h.body(t, o, shape, fuzzWrap(doc, int(nest)%fuzzMaxNest, arrays))
		}
		before := h.specOf(t, o)
		h.check(t, o.method, path, o.mediaType, body, watch)
		h.keepsSpec(t, o, before)
		if o.target == fuzzService {
			h.servicesHoldTheirIPs(t)
		}
		h.live(t)
		h.reset(t, o.target)
		if o.target == fuzzService {
			h.servicesHoldTheirIPs(t) // none left
		}
		h.idle(t)
	})
}

// reset deletes target's fuzzed objects, which must be possible whatever
// was stored in them, finalizers included.
func (h *fuzzHarness) reset(t *testing.T, target *fuzzTarget) {
	t.Helper()
	if target.seed == "" {
		return
	}
	for _, name := range []string{"/f", "/g"} {
		path := target.collection + name
		code, b := h.do(t, "PATCH", path, mediaMergePatch, `{"metadata":{"finalizers":null}}`)
		if code != http.StatusOK && code != http.StatusNotFound {
			t.Fatalf("PATCH %s: %d %.2000s", path, code, b)
		}
		h.must(t, "DELETE", path, "", http.StatusOK, http.StatusNotFound)
		h.must(t, "GET", path, "", http.StatusNotFound)
	}
}

// clusterIP is the Service f's clusterIP.
func (h *fuzzHarness) clusterIP(t *testing.T) string {
	t.Helper()
	code, b := h.do(t, "GET", fuzzServices+"/f", "", "")
	obj, err := api.ParseObject(b)
	if code != http.StatusOK || err != nil {
		t.Fatalf("GET %s/f: %d %.2000s", fuzzServices, code, b)
	}
	ip, _ := resource.Path(obj, "spec", "clusterIP").(string)
	return ip
}

// idle checks that every watch the iteration started has ended, and with
// it the goroutines the streaming engine ran for it.
func (h *fuzzHarness) idle(t *testing.T) {
	t.Helper()
	testwait.Until(t, 10*time.Second, "the streaming engine idle", func() bool {
		return h.s.streams.Watches() == 0 && h.s.streams.Goroutines() <= senders()
	})
}

// fuzzHarness is one server, and for each fuzzed resource a canary
// object whose writes must keep reaching watches.
type fuzzHarness struct {
	s       *Server
	ts      *httptest.Server
	canary  map[string]string // path -> resourceVersion of its last write
	written int
}

func newFuzzHarness(f *testing.F) *fuzzHarness {
	fuzzSeedKinds(f)
	store := memory.New()
	s, err := New(f.Context(), Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	h := &fuzzHarness{s: s, ts: httptest.NewServer(s.Handler()), canary: map[string]string{}}
	f.Cleanup(func() { h.ts.Close(); s.Close(); store.Close() })
	h.must(f, "POST", "/api/v1/namespaces", `{"metadata":{"name":"fz"}}`, http.StatusCreated)
	for _, path := range []string{fuzzCMs + "/canary", "/api/v1/namespaces/canary"} {
		collection, _, _ := strings.Cut(path, "/canary")
		h.must(f, "POST", collection, `{"metadata":{"name":"canary"}}`, http.StatusCreated)
		h.canary[path] = h.writeCanary(f, path)
	}
	testwait.Until(f, 10*time.Second, "the default ServiceAccount, which pods need", func() bool {
		code, _ := h.do(f, "GET", "/api/v1/namespaces/default/serviceaccounts/default", "", "")
		return code == http.StatusOK
	})
	return h
}

// do sends one request and returns its code and body.
func (h *fuzzHarness) do(tb testing.TB, method, path, mediaType, body string) (int, []byte) {
	tb.Helper()
	return h.send(tb, method, path, mediaType, body, false)
}

// send is do; of a stream (a watch) answered 200 it reads nothing, and
// its close ends the watch as a client's does.
func (h *fuzzHarness) send(tb testing.TB, method, path, mediaType, body string, stream bool) (int, []byte) {
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
	if stream && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, nil
	}
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

// kube5xx says whether st is a 5xx that kube-apiserver answers too, for
// a request of this harness:
//   - 504 Timeout, for a request past the timeout it asked for
//     (api-conventions.md, "HTTP Status codes");
//   - 500 with no reason to a pod's binding that fails validation: kube's
//     BindingREST returns ValidatePodBinding's aggregate error, which its
//     handler does not convert (pkg/registry/core/pod/storage/storage.go).
//
// Any other 500 is a fault, and no 503 is right here: no webhook is
// configured and the store is up.
func kube5xx(method, path string, st api.Status) bool {
	switch {
	case st.Code == http.StatusGatewayTimeout:
		return st.Reason == api.StatusReasonTimeout && strings.Contains(path, "timeout=")
	case st.Code == http.StatusInternalServerError && st.Reason == "":
		return method == "POST" && (strings.HasSuffix(path, "/binding") || strings.HasSuffix(path, "/bindings"))
	}
	return false
}

// check sends the fuzzed request: its answer must be a success, or a
// Status with a 4xx code or a 5xx that kube answers too (kube5xx). Any
// answer but a list or a watch is no larger than maxAnswer; a watch
// answered 200 is closed unread.
func (h *fuzzHarness) check(t *testing.T, method, path, mediaType, body string, watch bool) {
	t.Helper()
	code, b := h.send(t, method, path, mediaType, body, watch)
	if len(b) > maxAnswer && (method != "GET" || code >= 300) { // a list or watch holds what was written
		t.Fatalf("%s %s: a %d answer of %d bytes", method, path, code, len(b))
	}
	if code < 300 {
		return
	}
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != code || st.Message == "" {
		t.Fatalf("%s %s: %d answered %.2000s, not a Status (%v)", method, path, code, b, err)
	}
	if code >= 500 && !kube5xx(method, path, st) {
		t.Fatalf("%s %s %.2000s: %d %.2000s", method, path, body, code, b)
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
