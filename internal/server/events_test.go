package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

const (
	coreEvents = "/api/v1/namespaces/default/events"
	v1Events   = "/apis/events.k8s.io/v1/namespaces/default/events"
)

// newEventV1 is what client-go's events.k8s.io recorder creates.
const newEventV1 = `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"w.1"},
	"eventTime":"2024-01-01T00:00:00.000001Z","reportingController":"example.com/widgets","reportingInstance":"widgets-0",
	"action":"Reconcile","reason":"Synced","note":"synced it","type":"Normal",
	"regarding":{"kind":"Widget","namespace":"default","name":"w","uid":"u-1"}}`

// TestEventsBothAPIs: one event store seen through core/v1 and
// events.k8s.io/v1, each write visible through the other API converted
// (kube's renames), watchers of each API seeing the other's writes, and
// field selectors by each API's names.
func TestEventsBothAPIs(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	coreWatch := openWatch(t, ts.Client(), ts.URL+coreEvents+"?watch=true&resourceVersion=0")
	v1Watch := openWatch(t, ts.Client(), ts.URL+v1Events+"?watch=true&resourceVersion=0&fieldSelector=regarding.name%3Dw")

	code, created := call(t, ts, "POST", v1Events, mediaJSON, newEventV1)
	if code != http.StatusCreated || created["note"] != "synced it" || at(created, "regarding.name") != "w" {
		t.Fatalf("create through events.k8s.io: %d %v", code, created)
	}
	code, core := call(t, ts, "GET", coreEvents+"/w.1", "", "")
	if code != http.StatusOK || core["apiVersion"] != "v1" || core["message"] != "synced it" || at(core, "involvedObject.kind") != "Widget" ||
		core["reportingComponent"] != "example.com/widgets" || core["note"] != nil || core["regarding"] != nil ||
		core.ResourceVersion() != created.ResourceVersion() {
		t.Fatalf("read through core: %d %v", code, core)
	}

	// The series update the recorder sends, then a core write of a legacy event.
	series := strings.Replace(newEventV1, `"type":"Normal"`, `"type":"Normal","series":{"count":2,"lastObservedTime":"2024-01-01T00:01:00.000000Z"}`, 1)
	if code, out := call(t, ts, "PUT", v1Events+"/w.1", mediaJSON, series); code != http.StatusOK || fmt.Sprint(at(out, "series.count")) != "2" {
		t.Fatalf("series update: %d %v", code, out)
	}
	code, _ = call(t, ts, "POST", coreEvents, mediaJSON, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"w.2"},
		"involvedObject":{"kind":"Widget","namespace":"default","name":"w"},"reason":"Old","message":"from core","count":3,
		"source":{"component":"kubelet"},"firstTimestamp":"2024-01-01T00:00:00Z","lastTimestamp":"2024-01-01T00:00:09Z","type":"Warning"}`)
	if code != http.StatusCreated {
		t.Fatalf("core create: %d", code)
	}
	code, v1 := call(t, ts, "GET", v1Events+"/w.2", "", "")
	if code != http.StatusOK || v1["apiVersion"] != "events.k8s.io/v1" || v1["note"] != "from core" || fmt.Sprint(at(v1, "deprecatedCount")) != "3" ||
		at(v1, "deprecatedSource.component") != "kubelet" || v1["deprecatedLastTimestamp"] != "2024-01-01T00:00:09Z" {
		t.Fatalf("read through events.k8s.io: %d %v", code, v1)
	}

	// kube's printer: a series' count and last observation; a legacy
	// event's count, source and lastTimestamp.
	r := exchange(t, ts, "GET", coreEvents, http.Header{"Accept": {tableAccept}}, "")
	var rows [][]any
	for _, row := range r.obj["rows"].([]any) {
		c := at(row, "cells").([]any)
		rows = append(rows, []any{c[0], c[5], c[8], c[9]})
	}
	since := func(s string) string {
		t, _ := time.Parse(time.RFC3339, s)
		return resource.HumanDuration(time.Since(t))
	}
	want := [][]any{
		{since("2024-01-01T00:01:00Z"), "example.com/widgets, widgets-0", json.Number("2"), "w.1"},
		{since("2024-01-01T00:00:09Z"), "kubelet", json.Number("3"), "w.2"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("core Table: last seen, source, count, name (-want +got):\n%s", diff)
	}

	for _, w := range []struct {
		watch            *stream
		apiVersion, text string
	}{{coreWatch, "v1", "message"}, {v1Watch, "events.k8s.io/v1", "note"}} {
		var got []string
		for _, e := range w.watch.next(3, false) {
			if e.Object["apiVersion"] != w.apiVersion {
				t.Errorf("%s watch: event of %v", w.apiVersion, e.Object)
			}
			got = append(got, e.Type+" "+e.Object.Name()+": "+fmt.Sprint(e.Object[w.text]))
		}
		want := []string{api.Added + " w.1: synced it", api.Modified + " w.1: synced it", api.Added + " w.2: from core"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s watch (-want +got):\n%s", w.apiVersion, diff)
		}
	}

	for _, tc := range []struct{ path, selector, want string }{
		{v1Events, "reportingController=example.com/widgets", "w.1"},
		{coreEvents, "source=example.com/widgets", "w.1"},
		{coreEvents, "reportingComponent=example.com/widgets", "w.1"},
		{coreEvents, "involvedObject.kind=Widget,type=Warning", "w.2"},
	} {
		for _, from := range []string{"", "&limit=10"} { // the watch cache, the store
			code, list := call(t, ts, "GET", tc.path+"?fieldSelector="+tc.selector+from, "", "")
			if items, _ := list["items"].([]any); code != http.StatusOK || len(items) != 1 || at(items[0], "metadata.name") != tc.want {
				t.Errorf("list %s?fieldSelector=%s%s: %d %v, want %s only", tc.path, tc.selector, from, code, list, tc.want)
			}
		}
	}
	for _, sel := range []string{"involvedObject.kind%3DWidget", "source%3Dkubelet"} { // core's only
		if code, _ := call(t, ts, "GET", v1Events+"?fieldSelector="+sel, "", ""); code != http.StatusBadRequest {
			t.Errorf("core's field %s through events.k8s.io: %d, want 400", sel, code)
		}
	}

	if code, _ := call(t, ts, "DELETE", coreEvents+"/w.1", "", ""); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := call(t, ts, "GET", v1Events+"/w.1", "", ""); code != http.StatusNotFound {
		t.Errorf("deleted through core, get through events.k8s.io: %d, want 404", code)
	}
	if e := v1Watch.next(1, false)[0]; e.Type != api.Deleted || e.Object.Name() != "w.1" || e.Object["note"] != "synced it" {
		t.Errorf("events.k8s.io watch of a core delete: %s %v", e.Type, e.Object)
	}

	// Server-side apply through events.k8s.io, then deletecollection.
	apply := strings.ReplaceAll(newEventV1, `"w.1"`, `"w.3"`)
	code, applied := call(t, ts, "PATCH", v1Events+"/w.3?fieldManager=widgets", mediaApplyYML, apply)
	if code != http.StatusCreated || applied["note"] != "synced it" || len(applied.Metadata()["managedFields"].([]any)) != 1 {
		t.Fatalf("apply: %d %v", code, applied)
	}
	if code, out := call(t, ts, "DELETE", v1Events, "", ""); code != http.StatusOK || len(out["items"].([]any)) != 2 || at(out, "items.0.apiVersion") != "events.k8s.io/v1" {
		t.Errorf("deletecollection: %d %v", code, out)
	}
	if code, list := call(t, ts, "GET", coreEvents, "", ""); code != http.StatusOK || len(list["items"].([]any)) != 0 {
		t.Errorf("core list after deletecollection: %d %v", code, list)
	}
}

// TestEventV1Validation: kube's ValidateEventCreate and ValidateEventUpdate
// for requests through events.k8s.io/v1, with kube's field names.
func TestEventV1Validation(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	edit := func(from, to string) string { return strings.Replace(newEventV1, from, to, 1) }
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"no eventTime", edit(`"eventTime":"2024-01-01T00:00:00.000001Z",`, ""), []string{"eventTime"}},
		{"no reportingController", edit(`"reportingController":"example.com/widgets",`, ""), []string{"reportingController", "reportingController", "reportingController"}}, // required, and IsQualifiedName's two
		{"bad reportingController", edit(`example.com/widgets`, `-bad-`), []string{"reportingController"}},
		{"no action, reason", edit(`"action":"Reconcile","reason":"Synced",`, ""), []string{"action", "reason"}},
		{"long note", edit(`synced it`, strings.Repeat("n", 1025)), []string{"message"}},
		{"long instance", edit(`widgets-0`, strings.Repeat("i", 129)), []string{"reportingInstance"}},
		{"bad type", edit(`"type":"Normal"`, `"type":"Odd"`), []string{"type"}},
		{"deprecated fields", edit(`"type":"Normal"`, `"type":"Normal","deprecatedCount":1,"deprecatedSource":{"host":"h"},"deprecatedLastTimestamp":"2024-01-01T00:00:00Z"`),
			[]string{"lastTimestamp", "count", "source"}},
		{"series", edit(`"type":"Normal"`, `"type":"Normal","series":{"count":1}`), []string{"series.count", "series.lastObservedTime"}},
		{"cluster object elsewhere", edit(`"namespace":"default","name":"w"`, `"name":"w"`), nil},
		{"name not a subdomain", edit(`"name":"w.1"`, `"name":"system:w.1"`), []string{"metadata.name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, st := call(t, ts, "POST", v1Events, mediaJSON, tc.body)
			if tc.fields == nil {
				if code != http.StatusCreated {
					t.Fatalf("%d %v, want 201", code, st)
				}
				call(t, ts, "DELETE", v1Events+"/w.1", "", "")
				return
			}
			var fields []string
			causes, _ := at(st, "details.causes").([]any)
			for _, c := range causes {
				fields = append(fields, at(c, "field").(string))
			}
			if diff := cmp.Diff(tc.fields, fields); code != http.StatusUnprocessableEntity || diff != "" {
				t.Errorf("%d, fields (-want +got):\n%s\n%v", code, diff, st)
			}
		})
	}

	if code, _ := call(t, ts, "POST", v1Events, mediaJSON, newEventV1); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	code, st := call(t, ts, "PUT", v1Events+"/w.1", mediaJSON, strings.Replace(newEventV1, "synced it", "changed", 1))
	if b, _ := json.Marshal(st); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"field":"message"`) ||
		!strings.Contains(string(b), "field is immutable") {
		t.Errorf("note changed: %d %s, want 422 on message", code, b)
	}
	// An event the legacy recorder wrote through core can be updated through
	// events.k8s.io/v1: only the rules of updates apply.
	call(t, ts, "POST", coreEvents, mediaJSON, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"old"},"involvedObject":{"namespace":"default"},"count":1}`)
	if code, out := call(t, ts, "PATCH", v1Events+"/old", mediaMergePatch, `{"metadata":{"labels":{"a":"b"}}}`); code != http.StatusOK {
		t.Errorf("label on a legacy event through events.k8s.io: %d %v", code, out)
	}
	code, _ = call(t, ts, "POST", coreEvents, mediaJSON, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"},"involvedObject":{"namespace":"other"}}`)
	if code != http.StatusUnprocessableEntity {
		t.Errorf("core event whose object is in another namespace: %d, want 422", code)
	}
	// The legacy recorder names an event after its object: a path segment.
	code, _ = call(t, ts, "POST", coreEvents, mediaJSON, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"system:controller.17a"},"involvedObject":{"namespace":"default"}}`)
	if code != http.StatusCreated {
		t.Errorf("core event named system:controller.17a: %d, want 201", code)
	}
}

// TestEventV1Discovery: discovery, Table (kube's event columns, read from
// the converted event) and OpenAPI of events.k8s.io/v1.
func TestEventV1Discovery(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	code, disc := call(t, ts, "GET", "/apis/events.k8s.io/v1", "", "")
	if b, _ := json.Marshal(disc); code != http.StatusOK || !strings.Contains(string(b), `{"kind":"Event","name":"events","namespaced":true,"shortNames":["ev"],"singularName":"event"`) {
		t.Errorf("discovery: %d %s", code, b)
	}
	call(t, ts, "POST", v1Events, mediaJSON, newEventV1)
	r := exchange(t, ts, "GET", v1Events, http.Header{"Accept": {tableAccept}}, "")
	var names []string
	for _, c := range r.obj["columnDefinitions"].([]any) {
		names = append(names, at(c, "name").(string))
	}
	want := []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Table columns, kube's event printer's (-want +got):\n%s", diff)
	}
	var cells []any
	if rows, _ := r.obj["rows"].([]any); len(rows) == 1 {
		cells, _ = at(rows[0], "cells").([]any)
	}
	// Last and first seen: eventTime's age (years and days, steady).
	seen := resource.HumanDuration(time.Since(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)))
	wantCells := []any{seen, "Normal", "Synced", "widget/w", "", "example.com/widgets, widgets-0", "synced it", seen, json.Number("1"), "w.1"}
	if diff := cmp.Diff(wantCells, cells); diff != "" {
		t.Errorf("Table row (-want +got):\n%s", diff)
	}
	_, doc := call(t, ts, "GET", "/openapi/v3/apis/events.k8s.io/v1", "", "")
	schemas, _ := at(doc, "components.schemas").(map[string]any)
	if _, ok := schemas["io.k8s.api.events.v1.EventSeries"]; !ok {
		t.Errorf("OpenAPI v3 lacks io.k8s.api.events.v1.EventSeries: %v", doc)
	}
	_, doc = call(t, ts, "GET", "/openapi/v2", "", "")
	defs, _ := doc["definitions"].(map[string]any)
	if _, ok := defs["io.k8s.api.events.v1.Event"]; !ok {
		t.Errorf("OpenAPI v2 (kubectl explain): no events.k8s.io Event among %d definitions", len(defs))
	}
}

// TestEventPutCreates: a PUT of an event that does not exist creates it,
// through either API, as kube's event strategy allows, and with the
// create's validation (events.k8s.io/v1 requires eventTime on create).
func TestEventPutCreates(t *testing.T) {
	ts := newTestServer(t)
	core := `{"metadata":{"name":"e1"},"involvedObject":{"kind":"ConfigMap","name":"c","namespace":"default"},"reason":"Seen","message":"m","type":"Normal"}`
	if code, obj := call(t, ts, "PUT", "/api/v1/namespaces/default/events/e1", mediaJSON, core); code != http.StatusCreated {
		t.Fatalf("PUT of a new core event: %d %v, want 201", code, obj)
	}
	const v1 = "/apis/events.k8s.io/v1/namespaces/default/events/"
	if code, obj := call(t, ts, "PUT", v1+"e2", mediaJSON, `{"metadata":{"name":"e2"},"reason":"Seen","type":"Normal"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("PUT of a new events.k8s.io event without eventTime: %d %v, want 422", code, obj)
	}
	if code, _ := call(t, ts, "GET", v1+"e2", "", ""); code != http.StatusNotFound {
		t.Errorf("the invalid event was stored: %d", code)
	}
}
