package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

const (
	cronsV1 = "/apis/example.com/v1/namespaces/default/crons"
	cronsV2 = "/apis/example.com/v2/namespaces/default/crons"
)

// converter is an HTTPS conversion webhook for crons: v1 has spec.size,
// an integer, v2 spec.replicas, a string. It counts the objects it
// converts to each version, and answers as mode says.
type converter struct {
	srv      *httptest.Server
	caBundle string
	// clientConfig is the definition's: by URL, unless a test changes it.
	clientConfig string
	mu           sync.Mutex
	mode         string         // "" converts; see serve for the others
	to           map[string]int // objects converted, by desired apiVersion
	// hung and freed are told (if they have room) of a call that "hang"
	// holds, and of its end when its caller gave up.
	hung, freed chan struct{}
}

func startConverter(t testing.TB) *converter {
	c := &converter{to: map[string]int{}, hung: make(chan struct{}, 8), freed: make(chan struct{}, 8)}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	c.caBundle = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw}))
	c.clientConfig = fmt.Sprintf(`{"url":%q,"caBundle":%q}`, c.srv.URL+"/convert", c.caBundle)
	return c
}

func (c *converter) set(mode string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mode = mode
}

func (c *converter) count(apiVersion string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.to[apiVersion]
}

func (c *converter) serve(w http.ResponseWriter, r *http.Request) {
	var rv struct {
		Request struct {
			UID               string       `json:"uid"`
			DesiredAPIVersion string       `json:"desiredAPIVersion"`
			Objects           []api.Object `json:"objects"`
		} `json:"request"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := rv.Request
	c.mu.Lock()
	mode := c.mode
	c.to[req.DesiredAPIVersion] += len(req.Objects)
	c.mu.Unlock()
	out := make([]api.Object, 0, len(req.Objects))
	for _, o := range req.Objects {
		spec, _ := o["spec"].(map[string]any)
		switch req.DesiredAPIVersion {
		case "example.com/v2":
			if n, ok := spec["size"].(float64); ok {
				spec["replicas"] = strconv.Itoa(int(n))
				delete(spec, "size")
			}
		case "example.com/v1":
			if s, ok := spec["replicas"].(string); ok {
				n, _ := strconv.Atoi(s)
				spec["size"] = n
				delete(spec, "replicas")
			}
		}
		o["apiVersion"] = req.DesiredAPIVersion
		if mode == "rename" {
			o.SetMeta("name", "other")
		}
		if mode == "relabel" {
			o.SetMeta("labels", map[string]any{"converted": "yes"})
			o.SetMeta("resourceVersion", "1") // not the webhook's to change: restored
		}
		out = append(out, o)
	}
	resp := map[string]any{"uid": req.UID, "result": map[string]any{"status": "Success"}, "convertedObjects": out}
	switch mode {
	case "hang":
		tell(c.hung)
		<-r.Context().Done()
		tell(c.freed)
		return
	case "down":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the connection drops with no answer
		}
		return
	case "fail":
		resp["result"] = map[string]any{"status": "Failure", "message": "the test says no"}
	case "uid":
		resp["uid"] = "not-yours"
	case "garbage":
		_, _ = w.Write([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":`))
		return
	case "none":
		resp["convertedObjects"] = []any{}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": resp})
}

// tell signals ch if it has room.
func tell(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// cronCRD defines crons, stored in v1 and served in v1 and v2, converted
// by c.
func (c *converter) cronCRD() string {
	schema := func(field, typ string) string {
		return fmt.Sprintf(`{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{%q:{"type":%q}}}}}}`, field, typ)
	}
	return fmt.Sprintf(`{"metadata":{"name":"crons.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"crons","kind":"Cron"},
	"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":%s}},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":%s},{"name":"v2","served":true,"storage":false,"schema":%s,
		"selectableFields":[{"jsonPath":".spec.replicas"}]}]}}`,
		c.clientConfig, schema("size", "integer"), schema("replicas", "string"))
}

// TestConversionWebhook: objects written and read in the version that is
// not stored go through the webhook, both ways, and a webhook that fails
// or answers wrongly fails the request with kube's message.
func TestConversionWebhook(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	runSteps(t, ts, []step{
		{name: "create in v2", method: "POST", path: cronsV2, body: `{"metadata":{"name":"a"},"spec":{"replicas":"3"}}`, code: 201,
			want: map[string]any{"apiVersion": "example.com/v2", "spec.replicas": "3", "spec.size": nil}},
		{name: "get in v1", method: "GET", path: cronsV1 + "/a", code: 200,
			want: map[string]any{"apiVersion": "example.com/v1", "spec.size": "3", "spec.replicas": nil}},
		{name: "get in v2", method: "GET", path: cronsV2 + "/a", code: 200,
			want: map[string]any{"apiVersion": "example.com/v2", "spec.replicas": "3"}},
		{name: "patch in v2", method: "PATCH", path: cronsV2 + "/a", body: `{"spec":{"replicas":"4"}}`, code: 200,
			want: map[string]any{"apiVersion": "example.com/v2", "spec.replicas": "4", "metadata.generation": "2"}},
		{name: "list in v2", method: "GET", path: cronsV2, code: 200,
			want: map[string]any{"apiVersion": "example.com/v2", "items.0.apiVersion": "example.com/v2", "items.0.spec.replicas": "4"}},
		{name: "list in v1", method: "GET", path: cronsV1, code: 200,
			want: map[string]any{"items.0.apiVersion": "example.com/v1", "items.0.spec.size": "4"}},
		{name: "select on the converted object", method: "GET", path: cronsV2 + "?fieldSelector=spec.replicas%3D4", code: 200,
			want: map[string]any{"items.0.metadata.name": "a"}},
		{name: "select on the converted object, no match", method: "GET", path: cronsV2 + "?fieldSelector=spec.replicas%3D3", code: 200,
			want: map[string]any{"items.0": nil}},
	})
	// A v1 create is stored as it is; v2's watch cache, started by the
	// list, converts the new object once.
	toV1, toV2 := c.count("example.com/v1"), c.count("example.com/v2")
	r := do(t, ts, "POST", cronsV1, "", `{"metadata":{"name":"b"},"spec":{"size":1}}`)
	if r.code != 201 {
		t.Fatalf("create in v1: %d %v", r.code, r.obj)
	}
	// A list from the cache at the create's revision waits for the cache to have it.
	if r := do(t, ts, "GET", cronsV2+"?resourceVersion="+r.obj.ResourceVersion(), "", ""); r.code != 200 || at(r.obj, "items.1.spec.replicas") != "1" {
		t.Fatalf("list in v2: %d %v", r.code, r.obj)
	}
	if got := [2]int{c.count("example.com/v1") - toV1, c.count("example.com/v2") - toV2}; got != [2]int{0, 1} {
		t.Errorf("a write in the storage version made %v conversions to v1 and v2, want [0 1]", got)
	}

	c.set("relabel")
	r = do(t, ts, "GET", cronsV2+"/a", "", "")
	if r.code != 200 || at(r.obj, "metadata.labels.converted") != "yes" || at(r.obj, "metadata.resourceVersion") == "1" {
		t.Errorf("labels are the webhook's to change, resourceVersion is not: %d %v", r.code, r.obj)
	}

	prefix := "Internal error occurred: conversion for example.com/v1, Kind=Cron "
	for _, tt := range []struct{ mode, message string }{
		{"down", `failed: conversion webhook for , Kind= failed: Post "` + c.srv.URL + `/convert?timeout=30s": EOF`},
		{"fail", "failed: conversion webhook for , Kind= failed: the test says no"},
		{"uid", `failed: conversion webhook for , Kind= failed: expected response.uid=`},
		{"garbage", "failed: conversion webhook for , Kind= failed: decoding the response: "},
		{"none", "failed: returned 0 objects, expected 1"},
		{"rename", "returned invalid converted object at index 1: must have the same name: a != other"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			c.set(tt.mode)
			r := do(t, ts, "GET", cronsV2+"/a", "", "")
			msg, _ := r.obj["message"].(string)
			if r.code != http.StatusInternalServerError || r.obj["reason"] != "InternalError" || !strings.HasPrefix(msg, prefix+tt.message) {
				t.Errorf("got %d %q, want 500 %q", r.code, msg, prefix+tt.message)
			}
			if r := do(t, ts, "POST", cronsV2, "", `{"metadata":{"name":"c"},"spec":{"replicas":"1"}}`); r.code != http.StatusInternalServerError {
				t.Errorf("create in v2: %d %v, want 500", r.code, r.obj)
			}
		})
	}
	c.set("")
	if r := do(t, ts, "GET", cronsV2+"/c", "", ""); r.code != http.StatusNotFound {
		t.Errorf("a create whose conversion failed stored something: %d %v", r.code, r.obj)
	}
	rec := httptest.NewRecorder()
	s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, series := range []string{
		`apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="crons.example.com",from_version="v1",succeeded="true",to_version="v2"} `,
		`apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="crons.example.com",from_version="v2",succeeded="true",to_version="v1"} `,
		`apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="crons.example.com",from_version="v1",succeeded="false",to_version="v2"} `,
		`apiserver_conversion_webhook_request_total{failure_type="",result="success"} `,
		`apiserver_conversion_webhook_request_total{failure_type="conversion_webhook_call_failure",result="failure"} `,
		`apiserver_conversion_webhook_duration_seconds_count{failure_type="",result="success"} `,
	} {
		if !strings.Contains(rec.Body.String(), series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}

// TestConversionWebhookWatchers: the watchers of the version that is not
// stored share one conversion per event, however many they are.
func TestConversionWebhookWatchers(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	const watchers = 20
	streams := make([]*stream, watchers)
	for i := range streams {
		streams[i] = openWatch(t, ts.Client(), ts.URL+cronsV2+"?watch=true")
	}
	v1 := openWatch(t, ts.Client(), ts.URL+cronsV1+"?watch=true")
	before := c.count("example.com/v2")
	if r := do(t, ts, "POST", cronsV1, "", `{"metadata":{"name":"w"},"spec":{"size":7}}`); r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	for i, s := range streams {
		ev := s.next(1, false)[0]
		if ev.Type != "ADDED" || at(ev.Object, "apiVersion") != "example.com/v2" || at(ev.Object, "spec.replicas") != "7" {
			t.Fatalf("watcher %d: %s %v", i, ev.Type, ev.Object)
		}
	}
	if ev := v1.next(1, false)[0]; at(ev.Object, "spec.size") != "7" {
		t.Errorf("v1 watcher: %v", ev.Object)
	}
	if got := c.count("example.com/v2") - before; got != 1 {
		t.Errorf("%d watchers of v2 made %d conversions of one event, want 1", watchers, got)
	}
	if diff := cmp.Diff(0, c.count("example.com/v1")); diff != "" {
		t.Errorf("conversions to the stored version (-want +got):\n%s", diff)
	}
}

// TestConversionValidation: spec.conversion is checked as kube checks it,
// with its causes at kube's internal paths.
func TestConversionValidation(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	def := func(conversion string) string {
		return `{"metadata":{"name":"crons.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"crons","kind":"Cron"},
		"conversion":` + conversion + `,"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`
	}
	runSteps(t, ts, []step{
		{name: "webhook missing", method: "POST", path: crdsPath, body: def(`{"strategy":"Webhook"}`), code: 422,
			check: wantCauses("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
				"spec.conversion.conversionReviewVersions: Required value")},
		{name: "bad strategy", method: "POST", path: crdsPath, body: def(`{"strategy":"Magic"}`), code: 422,
			check: wantCauses(`spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"`)},
		{name: "http, no known review", method: "POST", path: crdsPath, body: def(`{"strategy":"Webhook","webhook":{"clientConfig":{"url":"http://x"},"conversionReviewVersions":["v9","v9"]}}`), code: 422,
			check: wantCauses(`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
				`spec.conversion.conversionReviewVersions[1]: Invalid value: "v9": duplicate version`,
				`spec.conversion.conversionReviewVersions: Invalid value: ["v9","v9"]: must include at least one of v1, v1beta1`)},
		{name: "webhook under None", method: "POST", path: crdsPath, body: def(`{"strategy":"None","webhook":{"clientConfig":{"url":"https://x"},"conversionReviewVersions":["v1"]}}`), code: 422,
			check: wantCauses("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
				"spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook")},
	})
}

// TestConversionWebhookFailsWatch: a conversion that fails in the watch
// cache of a version not stored deletes nothing: that version's watchers
// end with the conversion's error, as kube's storage watch reports it (an
// ERROR event); its lists answer that error, not a list without the
// object, and its watches 429, as kube's cacher while it cannot
// initialize. Once the webhook answers again, a list and a watch from it
// see every object. The stored version's watchers go on.
func TestConversionWebhookFailsWatch(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	create := func(name string, size int) string {
		t.Helper()
		r := do(t, ts, "POST", cronsV1, "", fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"size":%d}}`, name, size))
		if r.code != http.StatusCreated {
			t.Fatalf("create %s in v1: %d %v", name, r.code, r.obj)
		}
		return r.obj.ResourceVersion()
	}
	create("a", 1)
	v2 := openWatch(t, ts.Client(), ts.URL+cronsV2+"?watch=true")
	if ev := v2.next(1, false)[0]; ev.Type != "ADDED" || at(ev.Object, "spec.replicas") != "1" {
		t.Fatalf("v2 watcher: %s %v", ev.Type, ev.Object)
	}
	v1 := openWatch(t, ts.Client(), ts.URL+cronsV1+"?watch=true")
	v1.next(1, false)

	c.set("fail")
	// Written as they come, in the stored version: only v2's cache converts.
	if r := do(t, ts, "PATCH", cronsV1+"/a", "", `{"spec":{"size":5}}`); r.code != http.StatusOK {
		t.Fatalf("patch a in v1: %d %v", r.code, r.obj)
	}
	rev := create("b", 2)
	const message = "Internal error occurred: conversion for example.com/v1, Kind=Cron failed: conversion webhook for , Kind= failed: the test says no"
	ev := v2.next(1, false)[0]
	if ev.Type != "ERROR" || at(ev.Object, "kind") != "Status" || at(ev.Object, "code") != "500" ||
		at(ev.Object, "reason") != "InternalError" || at(ev.Object, "message") != message {
		t.Fatalf("v2 watcher got %s %v, want an ERROR with kube's 500 %q", ev.Type, ev.Object, message)
	}
	if v2.lines.Scan() {
		t.Errorf("the v2 stream goes on after its ERROR: %s", v2.lines.Text())
	}
	if evs := v1.next(2, false); evs[0].Type != "MODIFIED" || evs[1].Type != "ADDED" || at(evs[1].Object, "metadata.name") != "b" {
		t.Errorf("v1 watcher: %v", evs)
	}
	for _, path := range []string{cronsV2, cronsV2 + "?resourceVersion=0"} {
		if r := do(t, ts, "GET", path, "", ""); r.code != http.StatusInternalServerError || at(r.obj, "message") != message {
			t.Errorf("list %s while the webhook fails: %d %v, want 500 %q", path, r.code, r.obj, message)
		}
	}
	if r := do(t, ts, "GET", cronsV2+"?watch=true", "", ""); r.code != http.StatusTooManyRequests {
		t.Errorf("watch while the webhook fails: %d %v, want 429", r.code, r.obj)
	}

	c.set("")
	res, _ := s.catalog.Get("example.com", "v2", "crons")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	n, _ := strconv.ParseInt(rev, 10, 64)
	if err := s.caches.get(res).WaitFresh(ctx, n); err != nil { // its retries reach b
		t.Fatalf("the v2 cache did not recover: %v", err)
	}
	r := do(t, ts, "GET", cronsV2, "", "")
	if r.code != http.StatusOK || at(r.obj, "items.0.spec.replicas") != "5" || at(r.obj, "items.1.spec.replicas") != "2" {
		t.Fatalf("list in v2 after the webhook recovered: %d %v", r.code, r.obj)
	}
	again := openWatch(t, ts.Client(), ts.URL+cronsV2+"?watch=true&resourceVersion="+r.obj.ResourceVersion())
	create("c", 3)
	if ev := again.next(1, false)[0]; ev.Type != "ADDED" || at(ev.Object, "metadata.name") != "c" || at(ev.Object, "spec.replicas") != "3" {
		t.Errorf("v2 watch from the list: %s %v", ev.Type, ev.Object)
	}
}

// TestConversionWebhookCancelled: a conversion call ends when the request
// that needs it does, not at the webhook's 30 s bound, and so does one a
// watch cache makes when the cache stops.
func TestConversionWebhookCancelled(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	if r := do(t, ts, "POST", cronsV1, "", `{"metadata":{"name":"a"},"spec":{"size":1}}`); r.code != http.StatusCreated {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	// A conversion ends well before ConversionTimeout if it ends with its caller.
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not within 10 s", what)
		}
	}

	c.set("hang")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+cronsV2+"/a", nil)
		if resp, err := ts.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	wait(c.hung, "the get's conversion")
	cancel()
	wait(c.freed, "the conversion of a get whose client left")
	<-done

	c.set("")
	openWatch(t, ts.Client(), ts.URL+cronsV2+"?watch=true").next(1, false) // v2's cache runs
	c.set("hang")
	if r := do(t, ts, "POST", cronsV1, "", `{"metadata":{"name":"b"},"spec":{"size":2}}`); r.code != http.StatusCreated {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	wait(c.hung, "the v2 cache's conversion")
	s.Close()
	wait(c.freed, "the conversion of a cache that stopped")
}

// TestConversionWebhookCalls counts the webhook's calls for each write in
// the version not stored, against kube's for the same request (its v2
// watch cache aside, which converts each event once here as there): a
// create encodes to the stored version and decodes what it wrote (2); an
// update or a patch also reads the current object (kube's
// GuaranteedUpdate encodes the cached one to compare) (3); a dry run
// round-trips its result through the codec as kube's DryRunnableStorage
// copyInto does, after reading the current object for an update.
func TestConversionWebhookCalls(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	calls := func() int { return c.count("example.com/v1") + c.count("example.com/v2") }
	for _, tt := range []struct {
		name, method, path, body string
		code, calls              int
	}{
		{"create", "POST", cronsV2, `{"metadata":{"name":"a"},"spec":{"replicas":"1"}}`, 201, 2},
		{"update", "PUT", cronsV2 + "/a", `{"apiVersion":"example.com/v2","kind":"Cron","metadata":{"name":"a"},"spec":{"replicas":"2"}}`, 200, 3},
		{"patch", "PATCH", cronsV2 + "/a", `{"spec":{"replicas":"3"}}`, 200, 3},
		{"dry-run create", "POST", cronsV2 + "?dryRun=All", `{"metadata":{"name":"b"},"spec":{"replicas":"1"}}`, 201, 2},
		{"dry-run patch", "PATCH", cronsV2 + "/a?dryRun=All", `{"spec":{"replicas":"4"}}`, 200, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := calls()
			r := do(t, ts, tt.method, tt.path, "", tt.body)
			if r.code != tt.code || at(r.obj, "apiVersion") != "example.com/v2" {
				t.Fatalf("%d %v", r.code, r.obj)
			}
			if got := calls() - before; got != tt.calls {
				t.Errorf("%d calls of the webhook, want kube's %d", got, tt.calls)
			}
		})
	}
}
