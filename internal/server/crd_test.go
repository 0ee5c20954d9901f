package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

const (
	crdsPath    = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	widgets     = "/apis/example.com/v1/namespaces/default/widgets"
	widgetsBeta = "/apis/example.com/v1beta1/namespaces/default/widgets"
	gadgets     = "/apis/example.com/v1/gadgets"
	tableAccept = "application/json;as=Table;g=meta.k8s.io;v=v1"
)

// widgetSchema exercises every schema keyword the validator knows.
const widgetSchema = `{"type":"object","properties":{
	"spec":{"type":"object","required":["replicas"],"properties":{
		"replicas":{"type":"integer","minimum":1,"maximum":10},
		"color":{"type":"string","enum":["red","blue"]},
		"size":{"type":"string","default":"M"},
		"name":{"type":"string","maxLength":5,"pattern":"^[a-z]+$"},
		"ratio":{"type":"number","exclusiveMaximum":true,"maximum":1},
		"port":{"x-kubernetes-int-or-string":true},
		"when":{"type":"string","format":"date-time"},
		"tags":{"type":"array","maxItems":2,"items":{"type":"string"}},
		"labels":{"type":"object","additionalProperties":{"type":"string"}},
		"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true},
		"template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}},
		"note":{"type":"string","nullable":true}}},
	"status":{"type":"object","properties":{"conditions":{"type":"array","items":{"type":"object","properties":{
		"type":{"type":"string"},"status":{"type":"string"}}}}}}}}`

// widgetCRD defines widgets: namespaced, served in v1 (storage) and
// v1beta1, with a status subresource and printer columns.
func widgetCRD(extraVersions string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
	"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget","shortNames":["wd"],"categories":["all"]},
	"versions":[
		{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + widgetSchema + `},"subresources":{"status":{}},
		 "additionalPrinterColumns":[
			{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},
			{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"},
			{"name":"First-Tag","type":"string","jsonPath":".spec.tags[0]","priority":1},
			{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]},
		{"name":"v1beta1","served":true,"storage":false,"schema":{"openAPIV3Schema":` + widgetSchema + `}}` + extraVersions + `]}}`
}

// gadgetCRD defines gadgets: cluster-scoped, one version, no columns.
const gadgetCRD = `{"metadata":{"name":"gadgets.example.com"},"spec":{"group":"example.com","scope":"Cluster",
	"names":{"plural":"gadgets","kind":"Gadget"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// newCRDServer starts a Server on store behind a real socket, closed at cleanup.
func newCRDServer(t *testing.T, store storage.Interface) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts
}

func newMemoryStore(t *testing.T) storage.Interface {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	return store
}

// response is what one request got back.
type response struct {
	code   int
	obj    api.Object
	header http.Header
}

// exchange makes one request with the non-empty headers of header and
// decodes the response body.
func exchange(t *testing.T, ts *httptest.Server, method, path string, header http.Header, body string) response {
	t.Helper()
	return exchangeWith(t, ts.Client(), method, ts.URL+path, header, body)
}

// exchangeWith is exchange by client to url; a Host header sets the
// request's Host.
func exchangeWith(t *testing.T, client *http.Client, method, url string, header http.Header, body string) response {
	t.Helper()
	resp, b := roundTrip(t, client, method, url, header, body)
	obj, err := api.ParseObject(b)
	if err != nil {
		t.Fatalf("%s %s: response is not a JSON object: %v: %s", method, url, err, b)
	}
	return response{resp.StatusCode, obj, resp.Header}
}

// roundTrip makes one request, with each of header's values that is not
// empty (Host as the request's host), and reads the whole answer.
func roundTrip(tb testing.TB, client *http.Client, method, url string, header http.Header, body string) (*http.Response, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, vs := range header {
		if len(vs) > 0 && vs[0] != "" {
			req.Header[k] = vs
		}
	}
	if host := header.Get("Host"); host != "" {
		req.Host = host
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return resp, b
}

// do makes one request with an optional Accept header; bodies are JSON,
// merge patches for PATCH.
func do(t *testing.T, ts *httptest.Server, method, path, accept, body string) response {
	t.Helper()
	contentType := mediaJSON
	if method == http.MethodPatch {
		contentType = mediaMergePatch
	}
	return exchange(t, ts, method, path, http.Header{"Content-Type": {contentType}, "Accept": {accept}}, body)
}

// at reads a value from an object by a dotted path; numbers index arrays.
func at(v any, path string) any {
	for p := range strings.SplitSeq(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case api.Object:
			v = c[p]
		case []any:
			i := 0
			for _, d := range p {
				i = i*10 + int(d-'0')
			}
			if i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return v
}

// causes returns a Status's causes as "field: message".
func causes(status api.Object) []string {
	var out []string
	list, _ := at(status, "details.causes").([]any)
	for _, c := range list {
		out = append(out, at(c, "field").(string)+": "+at(c, "message").(string))
	}
	slices.Sort(out)
	return out
}

// step is one request of a scenario and what it must get back.
type step struct {
	name, method, path, accept, body string
	code                             int
	want                             map[string]any // dotted path -> value in the response
	check                            func(t *testing.T, r response)
}

func runSteps(t *testing.T, ts *httptest.Server, steps []step) {
	t.Helper()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r := do(t, ts, st.method, st.path, st.accept, st.body)
			if r.code != st.code {
				t.Fatalf("got %d, want %d: %v", r.code, st.code, r.obj)
			}
			for path, want := range st.want {
				if got := at(r.obj, path); !cmp.Equal(want, got) {
					t.Errorf("%s: got %v, want %v", path, got, want)
				}
			}
			if st.check != nil {
				st.check(t, r)
			}
		})
	}
}

func wantCauses(want ...string) func(*testing.T, response) {
	return func(t *testing.T, r response) {
		t.Helper()
		slices.Sort(want)
		if diff := cmp.Diff(want, causes(r.obj)); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	}
}

func wantHeader(name string, want ...string) func(*testing.T, response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if diff := cmp.Diff(want, r.header.Values(name)); diff != "" {
			t.Errorf("%s headers (-want +got):\n%s", name, diff)
		}
	}
}

func TestCustomResources(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	runSteps(t, ts, []step{
		{name: "create definition", method: "POST", path: crdsPath, body: widgetCRD(""), code: 201, want: map[string]any{
			"status.conditions.0.type": "NamesAccepted", "status.conditions.0.status": "True", "status.conditions.0.reason": "NoConflicts",
			"status.conditions.1.type": "Established", "status.conditions.1.status": "True", "status.conditions.1.reason": "InitialNamesAccepted",
			"status.acceptedNames.listKind": "WidgetList", "status.acceptedNames.singular": "widget", "status.storedVersions": []any{"v1"},
			"spec.names.listKind": "WidgetList", "spec.conversion.strategy": "None",
		}},
		{name: "create cluster-scoped definition", method: "POST", path: crdsPath, body: gadgetCRD, code: 201},
		{name: "legacy discovery of the group", method: "GET", path: "/apis/example.com", code: 200, want: map[string]any{
			"preferredVersion.version": "v1", "versions.0.version": "v1", "versions.1.version": "v1beta1",
		}},
		{name: "legacy discovery of the version", method: "GET", path: "/apis/example.com/v1", code: 200, check: func(t *testing.T, r response) {
			b, _ := json.Marshal(r.obj)
			for _, s := range []string{`"name":"widgets"`, `"name":"widgets/status"`, `"shortNames":["wd"]`, `"kind":"Widget"`, `"name":"gadgets"`, `"namespaced":false`} {
				if !strings.Contains(string(b), s) {
					t.Errorf("no %s in %s", s, b)
				}
			}
		}},
		{name: "a served version names the stored one's hash", method: "GET", path: "/apis/example.com/v1beta1", code: 200, check: func(t *testing.T, r response) {
			b, _ := json.Marshal(r.obj)
			if want := `"storageVersionHash":"` + resource.StorageVersionHash("example.com", "v1", "Widget") + `"`; !strings.Contains(string(b), want) {
				t.Errorf("no %s in %s", want, b)
			}
		}},
		{name: "aggregated discovery", method: "GET", path: "/apis", accept: mediaDiscoveryV2, code: 200, check: func(t *testing.T, r response) {
			b, _ := json.Marshal(r.obj)
			if !strings.Contains(string(b), `"name":"example.com"`) || !strings.Contains(string(b), `"resource":"widgets"`) {
				t.Errorf("example.com missing: %s", b)
			}
		}},
		{name: "schema in the OpenAPI document", method: "GET", path: "/openapi/v3/apis/example.com/v1", code: 200, check: func(t *testing.T, r response) {
			b, _ := json.Marshal(r.obj)
			if !strings.Contains(string(b), `"x-kubernetes-int-or-string":true`) {
				t.Errorf("the widget schema is not in the document: %.300s", b)
			}
		}},
		{name: "create in v1 applies defaults", method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":3,"tags":["x"],"note":null}}`, code: 201,
			want: map[string]any{"spec.size": "M", "spec.replicas": "3", "apiVersion": "example.com/v1", "metadata.generation": "1"}},
		{name: "get in v1beta1", method: "GET", path: widgetsBeta + "/a", code: 200, want: map[string]any{"apiVersion": "example.com/v1beta1", "spec.replicas": "3"}},
		{name: "create in v1beta1", method: "POST", path: widgetsBeta, body: `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"b"},"spec":{"replicas":1}}`, code: 201,
			want: map[string]any{"apiVersion": "example.com/v1beta1"}},
		{name: "list in v1", method: "GET", path: widgets, code: 200, want: map[string]any{
			"kind": "WidgetList", "items.0.apiVersion": "example.com/v1", "items.1.apiVersion": "example.com/v1", "items.1.metadata.name": "b",
		}},
		{name: "update in v1beta1", method: "PUT", path: widgetsBeta + "/b", body: `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"b"},"spec":{"replicas":2}}`, code: 200,
			want: map[string]any{"spec.replicas": "2", "metadata.generation": "2"}},
		{name: "merge patch in v1beta1", method: "PATCH", path: widgetsBeta + "/b", body: `{"spec":{"color":"red"}}`, code: 200, want: map[string]any{"apiVersion": "example.com/v1beta1", "spec.color": "red"}},
		{name: "status is a subresource", method: "PUT", path: widgets + "/a", body: `{"metadata":{"name":"a"},"spec":{"replicas":4,"tags":["x"]},"status":{"conditions":[{"type":"Ready","status":"False"}]}}`, code: 200,
			want: map[string]any{"status": nil, "spec.replicas": "4"}},
		{name: "status update", method: "PUT", path: widgets + "/a/status", body: `{"metadata":{"name":"a"},"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}`, code: 200,
			want: map[string]any{"status.conditions.1.status": "True", "spec.replicas": "4"}},
		{name: "schema violations", method: "POST", path: widgets, code: 422,
			body: `{"metadata":{"name":"bad"},"spec":{"replicas":"three","color":"green","name":"TooLong","ratio":1,"port":true,"when":"yesterday","tags":["a","b","c"],"labels":{"k":1},"template":{"spec":{"a":1}}}}`,
			want: map[string]any{"reason": "Invalid", "details.kind": "Widget", "details.group": "example.com"},
			check: wantCauses(
				`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
				`spec.color: Unsupported value: "green": supported values: "red", "blue"`,
				`spec.name: Too long: may not be more than 5 bytes`, // and no pattern cause: kube reports the first
				`spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1`,
				`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`,
				`spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"`,
				`spec.tags: Too many: 3: must have at most 2 items`,
				`spec.labels.k: Invalid value: "integer": spec.labels.k in body must be of type string: "integer"`,
				`spec.template.apiVersion: Required value: must not be empty`,
				`spec.template.kind: Required value: must not be empty`,
				`spec.template.spec.a: Invalid value: "integer": spec.template.spec.a in body must be of type string: "integer"`,
			)},
		{name: "required and bounds", method: "POST", path: widgets, body: `{"metadata":{"name":"bad"},"spec":{"color":null}}`, code: 422,
			check: wantCauses(`spec.replicas: Required value`)},
		{name: "maximum", method: "PATCH", path: widgets + "/a", body: `{"spec":{"replicas":11}}`, code: 422,
			check: wantCauses(`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`)},
		{name: "unknown fields are pruned with a warning by default", method: "POST", path: widgets, code: 201,
			body:  `{"metadata":{"name":"p","junk":1},"spec":{"replicas":1,"foo":1,"extra":{"any":{"thing":1}},"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"bar":2}},"top":true}`,
			want:  map[string]any{"spec.foo": nil, "top": nil, "metadata.junk": nil, "spec.extra.any.thing": "1", "spec.template.kind": "Pod", "spec.template.metadata.name": "x", "spec.template.bar": nil},
			check: wantHeader("Warning", `299 - "unknown field \"metadata.junk\""`, `299 - "unknown field \"spec.foo\""`, `299 - "unknown field \"spec.template.bar\""`, `299 - "unknown field \"top\""`)},
		{name: "fieldValidation=Strict rejects unknown fields", method: "POST", path: widgets + "?fieldValidation=Strict", code: 400,
			body: `{"metadata":{"name":"s"},"spec":{"replicas":1,"foo":1,"tags":[],"list":[{"x":1}]}}`,
			want: map[string]any{"reason": "BadRequest", "message": `strict decoding error: unknown field "spec.foo", unknown field "spec.list"`}},
		{name: "fieldValidation=Strict on a patch", method: "PATCH", path: widgets + "/a?fieldValidation=Strict", body: `{"spec":{"foo":1}}`, code: 400,
			want: map[string]any{"message": `strict decoding error: unknown field "spec.foo"`}},
		{name: "fieldValidation=Warn", method: "PUT", path: widgets + "/p?fieldValidation=Warn", code: 200,
			body:  `{"metadata":{"name":"p"},"spec":{"replicas":1,"foo":1}}`,
			check: wantHeader("Warning", `299 - "unknown field \"spec.foo\""`)},
		{name: "fieldValidation=Ignore", method: "PUT", path: widgets + "/p?fieldValidation=Ignore", code: 200,
			body: `{"metadata":{"name":"p"},"spec":{"replicas":2,"foo":1}}`, want: map[string]any{"spec.foo": nil}, check: wantHeader("Warning")},
		{name: "fieldValidation=Bogus", method: "POST", path: widgets + "?fieldValidation=Bogus", body: `{}`, code: 400},
		{name: "printer columns", method: "GET", path: widgets, accept: tableAccept, code: 200, check: func(t *testing.T, r response) {
			var names, types []string
			for _, c := range r.obj["columnDefinitions"].([]any) {
				names, types = append(names, at(c, "name").(string)), append(types, at(c, "type").(string))
			}
			if diff := cmp.Diff([]string{"Name", "Replicas", "Ready", "First-Tag", "Age"}, names); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if types[4] != "date" || at(r.obj, "columnDefinitions.3.priority") != "1" {
				t.Errorf("column types %v, priority %v", types, at(r.obj, "columnDefinitions.3.priority"))
			}
			row := r.obj["rows"].([]any)[0]
			if got := at(row, "cells"); len(got.([]any)) != 5 || at(row, "cells.0") != "a" || at(row, "cells.1") != "4" || at(row, "cells.2") != "True" || at(row, "cells.3") != "x" {
				t.Errorf("row cells %v", got)
			}
			if age, _ := at(row, "cells.4").(string); !regexp.MustCompile(`^[0-9]+s$`).MatchString(age) {
				t.Errorf("date cell %v, want the age in seconds", at(row, "cells.4"))
			}
			if at(r.obj, "rows.1.cells.2") != nil {
				t.Errorf("Ready of an object without conditions: %v, want null", at(r.obj, "rows.1.cells.2"))
			}
		}},
		{name: "cluster-scoped create", method: "POST", path: gadgets, body: `{"metadata":{"name":"g","namespace":"ignored"},"anything":{"goes":1}}`, code: 201,
			want: map[string]any{"metadata.namespace": nil, "anything.goes": "1", "kind": "Gadget"}},
		{name: "cluster-scoped object is not in a namespace", method: "GET", path: "/apis/example.com/v1/namespaces/default/gadgets/g", code: 404},
		{name: "cluster-scoped default columns", method: "GET", path: gadgets, accept: tableAccept, code: 200, want: map[string]any{
			"columnDefinitions.1.name": "Age", "columnDefinitions.1.type": "date", "columnDefinitions.2": nil, "rows.0.cells.0": "g",
		}},
		{name: "cluster-scoped delete", method: "DELETE", path: gadgets + "/g", code: 200},
		{name: "update definition adds a version", method: "PUT", path: crdsPath + "/widgets.example.com", code: 200,
			body: widgetCRD(`,{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`),
			want: map[string]any{"status.storedVersions": []any{"v1"}, "status.conditions.1.status": "True"}},
		{name: "new version serves stored objects", method: "GET", path: "/apis/example.com/v2/namespaces/default/widgets/a", code: 200,
			want: map[string]any{"apiVersion": "example.com/v2", "spec.replicas": "4"}},
		{name: "new version in discovery", method: "GET", path: "/apis/example.com/v2", code: 200, want: map[string]any{"resources.0.name": "widgets"}},
		{name: "delete definition", method: "DELETE", path: crdsPath + "/widgets.example.com", code: 200},
		{name: "resource is gone", method: "GET", path: widgets + "/a", code: 404},
		{name: "version is gone from discovery", method: "GET", path: "/apis/example.com/v2", code: 404},
		{name: "other definition of the group stays", method: "GET", path: gadgets, code: 200},
		{name: "recreate definition", method: "POST", path: crdsPath, body: widgetCRD(""), code: 201},
		{name: "objects of the deleted definition are gone", method: "GET", path: widgets, code: 200, want: map[string]any{"items": []any{}}},
	})
}

func TestInvalidDefinitions(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", crdsPath, "", gadgetCRD); r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	schema := `"schema":{"openAPIV3Schema":{"type":"object"}}`
	def := func(name, group, scope, names, versions string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"group":"` + group + `","scope":"` + scope + `","names":` + names + `,"versions":` + versions + `}}`
	}
	okNames, okVersions := `{"plural":"things","kind":"Thing"}`, `[{"name":"v1","served":true,"storage":true,`+schema+`}]`
	tests := []struct {
		name, body string
		causes     []string
	}{
		{"name is not plural.group", def("things.other.com", "example.com", "Namespaced", okNames, okVersions),
			[]string{`metadata.name: Invalid value: "things.other.com": must be spec.names.plural+"."+spec.group`}},
		{"group without a dot", def("things.example", "example", "Namespaced", okNames, okVersions),
			[]string{`spec.group: Invalid value: "example": should be a domain with at least one dot`}},
		{"bad scope", def("things.example.com", "example.com", "Global", okNames, okVersions),
			[]string{`spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"`}},
		{"uppercase plural and no kind", def("Things.example.com", "example.com", "Cluster", `{"plural":"Things"}`, okVersions),
			[]string{
				`metadata.name: Invalid value: "Things.example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
				`spec.names.kind: Required value`, `spec.names.listKind: Required value`, `spec.names.singular: Required value`,
				`spec.names.plural: Invalid value: "Things": ` + dns1035,
			}},
		{"no versions", def("things.example.com", "example.com", "Cluster", okNames, `[]`),
			[]string{`spec.versions: Required value: must have exactly one version marked as storage version`}},
		{"two storage versions", def("things.example.com", "example.com", "Cluster", okNames,
			`[{"name":"v1","served":true,"storage":true,`+schema+`},{"name":"v2","served":true,"storage":true,`+schema+`}]`),
			[]string{`spec.versions: Invalid value: 2 storage versions: must have exactly one version marked as storage version`}},
		{"no schema and a bad column", def("things.example.com", "example.com", "Cluster", okNames,
			`[{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[{"name":"X","type":"text","jsonPath":"spec..x"}]}]`),
			[]string{
				`spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required`,
				`spec.additionalPrinterColumns[0].type: Invalid value: "text": must be one of boolean,date,integer,number,string`,
				`spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec..x": must be a simple json path starting with .`,
			}},
		{"non-structural schema", def("things.example.com", "example.com", "Cluster", okNames,
			`[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"properties":{"a":{"type":"list"}}}}}}}]`),
			[]string{
				`spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`,
				`spec.validation.openAPIV3Schema.properties[spec].properties[a].type: Unsupported value: "list": supported values: "array", "boolean", "integer", "number", "object", "string"`,
			}},
		{"names taken in the group", def("gizmos.example.com", "example.com", "Cluster", `{"plural":"gizmos","kind":"Gadget","shortNames":["gadgets"]}`, okVersions),
			[]string{
				`spec.names.kind: Invalid value: "Gadget": is already in use`, `spec.names.listKind: Invalid value: "GadgetList": is already in use`,
				`spec.names.singular: Invalid value: "gadget": is already in use`, `spec.names.shortNames[0]: Invalid value: "gadgets": is already in use`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, ts, "POST", crdsPath, "", tt.body)
			if r.code != 422 || r.obj["reason"] != "Invalid" {
				t.Fatalf("got %d %v, want 422 Invalid", r.code, r.obj)
			}
			wantCauses(tt.causes...)(t, r)
		})
	}
	if r := do(t, ts, "GET", crdsPath, "", ""); len(r.obj["items"].([]any)) != 1 {
		t.Errorf("rejected definitions were stored: %v", r.obj["items"])
	}
}

// TestDefinitionImmutableFields checks kube's rule for an established
// definition: its scope and kind cannot change (422 Invalid, "field is
// immutable" at the field's path), while the rest of its spec can.
func TestDefinitionImmutableFields(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", crdsPath, "", gadgetCRD); r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	const gadgetsCRD = crdsPath + "/gadgets.example.com"
	tests := []struct {
		name, method, body string
		causes             []string
	}{
		{"scope by merge patch", "PATCH", `{"spec":{"scope":"Namespaced"}}`,
			[]string{`spec.scope: Invalid value: "Namespaced": field is immutable`}},
		{"scope by update", "PUT", strings.Replace(gadgetCRD, `"scope":"Cluster"`, `"scope":"Namespaced"`, 1),
			[]string{`spec.scope: Invalid value: "Namespaced": field is immutable`}},
		{"kind", "PATCH", `{"spec":{"names":{"kind":"Gizmo","listKind":"GizmoList","singular":"gizmo"}}}`,
			[]string{`spec.names.kind: Invalid value: "Gizmo": field is immutable`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, ts, tt.method, gadgetsCRD, "", tt.body)
			if r.code != 422 || r.obj["reason"] != "Invalid" {
				t.Fatalf("got %d %v, want 422 Invalid", r.code, r.obj)
			}
			wantCauses(tt.causes...)(t, r)
		})
	}
	if r := do(t, ts, "PATCH", gadgetsCRD, "", `{"spec":{"names":{"shortNames":["gd"]}}}`); r.code != 200 {
		t.Fatalf("changing shortNames: %d %v", r.code, r.obj)
	}
	if r := do(t, ts, "GET", gadgetsCRD, "", ""); at(r.obj, "spec.scope") != "Cluster" || at(r.obj, "spec.names.kind") != "Gadget" {
		t.Errorf("stored definition changed: %v", r.obj["spec"])
	}
}

const dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

func TestDefinitionsSurviveRestart(t *testing.T) {
	store := newMemoryStore(t)
	first, ts := newCRDServer(t, store)
	do(t, ts, "POST", crdsPath, "", widgetCRD(""))
	if r := do(t, ts, "POST", widgets, "", `{"metadata":{"name":"a"},"spec":{"replicas":1}}`); r.code != 201 {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	ts.Close()
	first.Close()
	_, ts = newCRDServer(t, store)
	if r := do(t, ts, "GET", widgetsBeta+"/a", "", ""); r.code != 200 || r.obj["apiVersion"] != "example.com/v1beta1" {
		t.Fatalf("after restart: %d %v", r.code, r.obj)
	}
}

// TestDefinitionsFromAnotherServer checks that a server follows the
// definitions another server writes to the same store.
func TestDefinitionsFromAnotherServer(t *testing.T) {
	store := newMemoryStore(t)
	_, writer := newCRDServer(t, store)
	follower, reader := newCRDServer(t, store)
	served := func() bool { _, ok := follower.catalog.Get("example.com", "v1beta1", "widgets"); return ok }

	do(t, writer, "POST", crdsPath, "", widgetCRD(""))
	waitFor(t, follower, served)
	if r := do(t, reader, "POST", widgetsBeta, "", `{"metadata":{"name":"a"},"spec":{"replicas":1}}`); r.code != 201 {
		t.Fatalf("create through the follower: %d %v", r.code, r.obj)
	}
	do(t, writer, "DELETE", crdsPath+"/widgets.example.com", "", "")
	waitFor(t, follower, func() bool { return !served() })
}

// waitFor waits until cond holds, checking at every change of s's catalogue.
func waitFor(t testing.TB, s *Server, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		_, changed := s.catalog.Generation()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("condition not met within 10s")
		}
	}
}

// TestDeletedDefinitionStopsItsCache checks that deleting a definition
// stops the watch cache its resource had, instead of leaving its upstream
// watch running.
func TestDeletedDefinitionStopsItsCache(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	if code, _ := call(t, ts, "POST", crdsPath, mediaJSON, gadgetCRD); code != 201 {
		t.Fatalf("create definition: %d", code)
	}
	if code, _ := call(t, ts, "GET", "/apis/example.com/v1/gadgets?resourceVersion=0", "", ""); code != 200 {
		t.Fatalf("list from the cache: %d", code)
	}
	gvr := resource.GVR{Group: "example.com", Version: "v1", Plural: "gadgets"}
	cached := func() bool {
		s.caches.mu.Lock()
		defer s.caches.mu.Unlock()
		_, ok := s.caches.byGVR[gvr]
		return ok
	}
	if !cached() {
		t.Fatal("listing did not start a cache")
	}
	if code, _ := call(t, ts, "DELETE", crdsPath+"/gadgets.example.com", "", ""); code != 200 {
		t.Fatalf("delete definition: %d", code)
	}
	if cached() {
		t.Error("the deleted definition's cache is still running")
	}
}

// TestDeletedDefinitionLeavesNoSeries: deleting a definition drops every
// metric series of its resource (27 of them stayed),
// and leaves those of the resources still served.
func TestDeletedDefinitionLeavesNoSeries(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	const gadgets = "/apis/example.com/v1/gadgets"
	for _, r := range []struct{ method, path, body string }{
		{"POST", crdsPath, gadgetCRD},
		{"POST", gadgets, `{"metadata":{"name":"g"}}`},
		{"GET", gadgets + "?resourceVersion=0", ""},
		{"GET", gadgets + "/g", ""},
		// Before the update: a watch from any version may send the update
		// as a second event, and call reads one object.
		{"GET", gadgets + "?resourceVersion=0&watch=true&timeoutSeconds=1", ""},
		{"PUT", gadgets + "/g", `{"metadata":{"name":"g"},"spec":{"x":1}}`},
		{"GET", "/api/v1/namespaces/default/configmaps?resourceVersion=0", ""},
	} {
		if code, _ := call(t, ts, r.method, r.path, mediaJSON, r.body); code >= 300 {
			t.Fatalf("%s %s: %d", r.method, r.path, code)
		}
	}
	series := func(name string) []string {
		var out []string
		for s := range scrape(t, s) {
			if strings.Contains(s, `"`+name+`"`) || strings.Contains(s, `"`+name+`.example.com"`) || strings.Contains(s, `"Gadget"`) {
				out = append(out, s)
			}
		}
		return out
	}
	if n := len(series("gadgets")); n < 20 {
		t.Fatalf("%d series of gadgets before deletion, want many: %v", n, series("gadgets"))
	}
	if code, _ := call(t, ts, "DELETE", crdsPath+"/gadgets.example.com", "", ""); code != 200 {
		t.Fatalf("delete definition: %d", code)
	}
	if left := series("gadgets"); len(left) != 0 {
		t.Errorf("series of the deleted gadgets: %v", left)
	}
	if len(series("configmaps")) == 0 {
		t.Error("the series of configmaps went too")
	}
}
