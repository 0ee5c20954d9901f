package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage/memory"
)

const (
	cmPath        = "/api/v1/namespaces/default/configmaps"
	mediaJSONP    = "application/json-patch+json"
	mediaSMP      = "application/strategic-merge-patch+json"
	mediaApplyYML = "application/apply-patch+yaml"
)

// newPatchServer serves built-ins and a custom kind "things.example.com"
// (no strategic merge) on a memory store.
func newPatchServer(t *testing.T) *httptest.Server {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	ts, stop := startOn(t, store)
	t.Cleanup(stop)
	return ts
}

// send makes one request with a Content-Type and User-Agent (each if not
// empty) and returns the status code and decoded body.
func send(t *testing.T, ts *httptest.Server, method, path, contentType, userAgent, body string) (int, api.Object) {
	t.Helper()
	r := exchange(t, ts, method, path, http.Header{"Content-Type": {contentType}, "User-Agent": {userAgent}}, body)
	return r.code, r.obj
}

// managers returns "manager/operation" -> fieldsV1 of obj's managedFields.
func managers(obj api.Object) map[string]any {
	out := map[string]any{}
	entries, _ := obj.Metadata()["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		out[m["manager"].(string)+"/"+m["operation"].(string)] = m["fieldsV1"]
	}
	return out
}

func parse(t *testing.T, s string) any {
	t.Helper()
	obj, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any(obj)
}

func TestPatch(t *testing.T) {
	ts := newPatchServer(t)
	code, created := send(t, ts, "POST", cmPath, mediaJSON, "kubectl/v1.34.0 (linux/amd64)",
		`{"metadata":{"name":"p","finalizers":["a"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u1"}]},"data":{"k":"v"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, created)
	}
	rv := created.ResourceVersion()
	tests := []struct {
		name, contentType, query, body string
		code                           int
		want                           string // data and metadata.finalizers/ownerReferences after, when 200
	}{
		{"JSON Patch", mediaJSONP, "", `[{"op":"add","path":"/data/j","value":"1"}]`, 200,
			`{"data":{"k":"v","j":"1"},"finalizers":["a"],"owners":["u1"]}`},
		{"merge patch replaces lists", mediaMergePatch, "", `{"data":{"j":null},"metadata":{"finalizers":["b"]}}`, 200,
			`{"data":{"k":"v"},"finalizers":["b"],"owners":["u1"]}`},
		{"strategic merges finalizers and ownerReferences", mediaSMP, "", `{"metadata":{"finalizers":["a"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o2","uid":"u2"}]}}`, 200,
			`{"data":{"k":"v"},"finalizers":["a","b"],"owners":["u2","u1"]}`},
		{"strategic with kubectl's directives", mediaSMP, "", `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"$setElementOrder/ownerReferences":[{"uid":"u2"}],"ownerReferences":[{"$patch":"delete","uid":"u1"}]}}`, 200,
			`{"data":{"k":"v"},"finalizers":["b"],"owners":["u2"]}`},
		{"stale resourceVersion in JSON Patch", mediaJSONP, "", `[{"op":"replace","path":"/metadata/resourceVersion","value":"` + rv + `"}]`, 409, ""},
		{"JSON Patch testing the resourceVersion", mediaJSONP, "", `[{"op":"test","path":"/metadata/resourceVersion","value":"` + rv + `"}]`, 422, ""},
		{"stale resourceVersion in merge patch", mediaMergePatch, "", `{"metadata":{"resourceVersion":"` + rv + `"}}`, 409, ""},
		{"stale resourceVersion in strategic", mediaSMP, "", `{"metadata":{"resourceVersion":"` + rv + `"}}`, 409, ""},
		{"malformed strategic", mediaSMP, "", `{"data":`, 400, ""},
		{"strategic with a bad directive", mediaSMP, "", `{"data":{"$patch":"explode"}}`, 400, ""},
		{"strategic outside $retainKeys", mediaSMP, "", `{"data":{"$retainKeys":["a"],"b":"1"}}`, 422, ""},
		{"JSON Patch test fails", mediaJSONP, "", `[{"op":"test","path":"/data/k","value":"nope"}]`, 422, ""},
		{"force on a non-apply patch", mediaMergePatch, "?force=true", `{}`, 422, ""},
		{"field manager too long", mediaMergePatch, "?fieldManager=" + strings.Repeat("m", 129), `{}`, 422, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got := send(t, ts, "PATCH", cmPath+"/p"+tt.query, tt.contentType, "curl/8.0", tt.body)
			if code != tt.code {
				t.Fatalf("got %d %v, want %d", code, got, tt.code)
			}
			if tt.want == "" {
				if got["kind"] != "Status" || got["message"] == "" {
					t.Errorf("error without a Status: %v", got)
				}
				return
			}
			var owners []any
			refs, _ := got.Metadata()["ownerReferences"].([]any)
			for _, r := range refs {
				owners = append(owners, r.(map[string]any)["uid"])
			}
			summary := map[string]any{"data": got["data"], "finalizers": got.Metadata()["finalizers"], "owners": owners}
			if diff := cmp.Diff(parse(t, tt.want), summary); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	code, got := send(t, ts, "PATCH", cmPath+"/p", mediaMergePatch, "curl/8.0", `{"metadata":{"resourceVersion":"`+latestRV(t, ts)+`"},"data":{"z":"1"}}`)
	if code != http.StatusOK || got["data"].(map[string]any)["z"] != "1" {
		t.Errorf("patch with the current resourceVersion: %d %v", code, got)
	}
	if _, ok := managers(got)["curl/Update"]; !ok {
		t.Errorf("patches by curl are not in managedFields: %v", managers(got))
	}
	if _, ok := managers(got)["kubectl/Update"]; !ok {
		t.Errorf("the create by kubectl is not in managedFields: %v", managers(got))
	}
}

func latestRV(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	_, obj := send(t, ts, "GET", cmPath+"/p", "", "curl/8.0", "")
	return obj.ResourceVersion()
}

func TestPatchStrategicOnCustomResource(t *testing.T) {
	ts := newPatchServer(t)
	const things = "/apis/example.com/v1/namespaces/default/things"
	if code, obj := send(t, ts, "POST", things, mediaJSON, "t", `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"x"},"spec":{"l":[1,2]}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	code, status := send(t, ts, "PATCH", things+"/x", mediaSMP, "t", `{"spec":{"a":1}}`)
	if code != http.StatusUnsupportedMediaType || status["reason"] != "UnsupportedMediaType" {
		t.Errorf("strategic merge on a custom resource: %d %v, want 415", code, status)
	}
	code, obj := send(t, ts, "PATCH", things+"/x?fieldManager=m&force=true", mediaApplyYML, "t", "apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  l: [3]\n")
	if code != http.StatusOK || !cmp.Equal(obj["spec"], parse(t, `{"l":[3]}`)) {
		t.Errorf("apply to a custom resource: %d %v", code, obj)
	}
}

func TestServerSideApply(t *testing.T) {
	ts := newPatchServer(t)
	cfg := func(data string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":` + data + `}`
	}
	applyAs := func(query, data string) (int, api.Object) {
		return send(t, ts, "PATCH", cmPath+"/s"+query, mediaApplyYML, "kubectl/v1.34", cfg(data))
	}
	code, obj := applyAs("?fieldManager=tool", `{"a":"1","b":"2"}`)
	if code != http.StatusCreated || !cmp.Equal(managers(obj), map[string]any{"tool/Apply": parse(t, `{"f:data":{"f:a":{},"f:b":{}}}`)}) {
		t.Fatalf("apply create: %d %v", code, obj)
	}
	code, obj = applyAs("?fieldManager=tool", `{"a":"1"}`)
	if code != http.StatusOK || !cmp.Equal(obj["data"], parse(t, `{"a":"1"}`)) {
		t.Fatalf("re-apply without b: %d %v", code, obj)
	}
	code, obj = send(t, ts, "PATCH", cmPath+"/s?fieldManager=kubectl-edit", mediaSMP, "kubectl/v1.34", `{"data":{"a":"edited"}}`)
	if code != http.StatusOK {
		t.Fatalf("edit: %d %v", code, obj)
	}
	code, status := applyAs("?fieldManager=tool", `{"a":"1"}`)
	if code != http.StatusConflict || status["reason"] != "Conflict" ||
		status["message"] != `Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a` {
		t.Fatalf("conflicting apply: %d %v", code, status)
	}
	wantCause := parse(t, `{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"kubectl-edit\" using v1","field":".data.a"}]}`)
	if diff := cmp.Diff(wantCause, status["details"]); diff != "" {
		t.Errorf("conflict details (-want +got)\n%s", diff)
	}
	code, obj = applyAs("?fieldManager=tool&force=true", `{"a":"1"}`)
	if code != http.StatusOK || obj["data"].(map[string]any)["a"] != "1" || managers(obj)["kubectl-edit/Update"] != nil {
		t.Fatalf("forced apply: %d %v", code, obj)
	}
	for name, tc := range map[string]struct {
		query, body string
		code        int
	}{
		"no fieldManager":   {"", cfg(`{}`), 422},
		"wrong apiVersion":  {"?fieldManager=tool", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"s"}}`, 400},
		"wrong kind":        {"?fieldManager=tool", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`, 400},
		"malformed YAML":    {"?fieldManager=tool", "a: [", 400},
		"managedFields set": {"?fieldManager=tool", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s","managedFields":[]}}`, 400},
		"name mismatch":     {"?fieldManager=tool", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`, 400},
	} {
		t.Run(name, func(t *testing.T) {
			if code, status := send(t, ts, "PATCH", cmPath+"/s"+tc.query, mediaApplyYML, "t", tc.body); code != tc.code || status["kind"] != "Status" {
				t.Errorf("got %d %v, want %d", code, status, tc.code)
			}
		})
	}
}

// TestServerSideApplyAfterClientSideApply replays what kubectl (1.26 and
// later) sends for `kubectl apply -f` then `kubectl apply --server-side -f`
// of the same ConfigMap: the create, the apply, the apply of the
// last-applied annotation, the JSON Patch that moves the client-side
// manager's fields to the "kubectl" Apply entry, and the apply again. The
// last apply used to remove data and every managedFields entry: the moved
// entry has "data" itself as a member, which the new apply owns only
// through data.a.
func TestServerSideApplyAfterClientSideApply(t *testing.T) {
	ts := newPatchServer(t)
	const (
		ua          = "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef"
		lastApplied = `{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"u\",\"namespace\":\"default\"}}\n`
		annotations = `{"kubectl.kubernetes.io/last-applied-configuration":"` + lastApplied + `"}`
		config      = `{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"u","namespace":"default"}}`
		dataFields  = `{"f:data":{"f:a":{}}}`
		annotFields = `{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`
	)
	step := func(name, method, query, contentType, body string, want int) api.Object {
		t.Helper()
		path := cmPath
		if method != "POST" {
			path += "/u"
		}
		code, obj := send(t, ts, method, path+query, contentType, ua, body)
		if code != want {
			t.Fatalf("%s: %d %v", name, code, obj)
		}
		return obj
	}
	step("client-side apply", "POST", "?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", mediaJSON,
		`{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"annotations":`+annotations+`,"name":"u","namespace":"default"}}`, http.StatusCreated)
	step("server-side apply", "PATCH", "?fieldManager=kubectl&fieldValidation=Strict&force=false", mediaApplyYML, config, http.StatusOK)
	obj := step("apply of the annotation", "PATCH", "?fieldManager=kubectl-last-applied&fieldValidation=Strict", mediaApplyYML,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":`+annotations+`,"name":"u","namespace":"default"}}`, http.StatusOK)
	if _, ok := managers(obj)["kubectl-client-side-apply/Update"]; !ok {
		t.Fatalf("the client-side manager is not there to upgrade: %v", managers(obj))
	}
	upgraded := `[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2026-11-26T20:19:18Z","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:data":{".":{},"f:a":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}},` +
		`{"manager":"kubectl-last-applied","operation":"Apply","apiVersion":"v1","time":"2026-11-26T20:19:18Z","fieldsType":"FieldsV1","fieldsV1":` + annotFields + `}]`
	step("upgrade of the managed fields", "PATCH", "?fieldManager=kubectl&fieldValidation=Strict", mediaJSONP,
		`[{"op":"replace","path":"/metadata/managedFields","value":`+upgraded+`},{"op":"replace","path":"/metadata/resourceVersion","value":"`+obj.ResourceVersion()+`"}]`, http.StatusOK)
	obj = step("server-side apply again", "PATCH", "?fieldManager=kubectl&fieldValidation=Strict&force=false", mediaApplyYML, config, http.StatusOK)
	if diff := cmp.Diff(parse(t, `{"a":"1"}`), obj["data"]); diff != "" {
		t.Errorf("data (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(parse(t, annotations), obj.Metadata()["annotations"]); diff != "" {
		t.Errorf("annotations (-want +got)\n%s", diff)
	}
	want := map[string]any{"kubectl/Apply": parse(t, dataFields), "kubectl-last-applied/Apply": parse(t, annotFields)}
	if diff := cmp.Diff(want, managers(obj)); diff != "" {
		t.Errorf("managedFields (-want +got)\n%s", diff)
	}
	if _, stored := send(t, ts, "GET", cmPath+"/u", "", ua, ""); !cmp.Equal(stored, obj) {
		t.Errorf("stored object differs from the apply's answer:\n%v\n%v", stored, obj)
	}
}

// TestPatchManagedFields: a JSON Patch of metadata.managedFields is taken
// as given when the entries decode, leaves them as they were when not (kube
// answers 200 and keeps the live ones), and clears them with [{}].
func TestPatchManagedFields(t *testing.T) {
	ts := newPatchServer(t)
	const ua = "kubectl/v1.34.0 (linux/amd64)"
	if code, obj := send(t, ts, "POST", cmPath, mediaJSON, ua, `{"metadata":{"name":"m"},"data":{"k":"v"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	replace := func(managedFields string) api.Object {
		t.Helper()
		code, obj := send(t, ts, "PATCH", cmPath+"/m", mediaJSONP, ua, `[{"op":"replace","path":"/metadata/managedFields","value":`+managedFields+`}]`)
		if code != http.StatusOK {
			t.Fatalf("patch of managedFields %s: %d %v", managedFields, code, obj)
		}
		return obj
	}
	given := map[string]any{"tool/Apply": parse(t, `{"f:data":{"f:k":{}}}`)}
	if got := managers(replace(`[{"manager":"tool","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]`)); !cmp.Equal(got, given) {
		t.Errorf("valid managedFields: got %v, want %v", got, given)
	}
	for _, invalid := range []string{`[{"manager":"x","operation":"Nope","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{}}]`, `[{"operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"bad":{}}}]`, `[{},{}]`} {
		if got := managers(replace(invalid)); !cmp.Equal(got, given) {
			t.Errorf("invalid managedFields %s: got %v, want the live ones %v", invalid, got, given)
		}
	}
	if obj := replace(`[{}]`); obj.Metadata()["managedFields"] != nil || obj["data"] == nil {
		t.Errorf("[{}] did not clear managedFields: %v", obj)
	}
}

// TestJSONPatchOperationLimit: kube's 10,000 operations pass; one more is
// its 413 with its message, not a body size.
func TestJSONPatchOperationLimit(t *testing.T) {
	ts := newTestServer(t)
	const cm = "/api/v1/namespaces/default/configmaps/a"
	if code, _ := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"a"},"data":{"k":"v"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	ops := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/data/k","value":"v"},`, n), ",") + "]"
	}
	if code, got := call(t, ts, "PATCH", cm, mediaJSONP, ops(10000)); code != http.StatusOK {
		t.Errorf("10,000 operations: %d %v, want 200", code, got)
	}
	code, status := call(t, ts, "PATCH", cm, mediaJSONP, ops(10001))
	const want = "The allowed maximum operations in a JSON patch is 10000, got 10001"
	if code != http.StatusRequestEntityTooLarge || status["reason"] != "RequestEntityTooLarge" || status["message"] != want {
		t.Errorf("10,001 operations: %d %v, want 413 %q", code, status, want)
	}
}
