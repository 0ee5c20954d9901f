package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

const (
	shards     = "/apis/example.com/v1/namespaces/default/shards"
	shardScale = shards + "/a/scale"
)

// shardCRD defines shards, whose scale subresource reads spec.count and
// status.count and the selector at status.selector, as prometheus-operator's
// Prometheus does with spec.shards.
const shardCRD = `{"metadata":{"name":"shards.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"shards","kind":"Shard"},
	"versions":[{"name":"v1","served":true,"storage":true,
		"subresources":{"status":{},"scale":{"specReplicasPath":".spec.count","statusReplicasPath":".status.count","labelSelectorPath":".status.selector"}},
		"schema":{"openAPIV3Schema":{"type":"object","properties":{
			"spec":{"type":"object","properties":{"count":{"type":"integer"},"note":{"type":"string"}}},
			"status":{"type":"object","properties":{"count":{"type":"integer"},"selector":{"type":"string"}}}}}}}]}}`

func TestScaleSubresource(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	runSteps(t, ts, []step{
		{name: "definition", method: "POST", path: crdsPath, body: shardCRD, code: 201},
		{name: "discovery", method: "GET", path: "/apis/example.com/v1", code: 200, want: map[string]any{
			"resources.1.name": "shards/status", "resources.2.name": "shards/scale", "resources.2.group": "autoscaling",
			"resources.2.version": "v1", "resources.2.kind": "Scale", "resources.2.namespaced": true,
			"resources.2.verbs": []any{"get", "patch", "update"},
		}},
		{name: "create", method: "POST", path: shards, body: `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`, code: 201},
		{name: "status", method: "PATCH", path: shards + "/a/status", body: `{"status":{"count":1,"selector":"app=a"}}`, code: 200},
		{name: "get", method: "GET", path: shardScale, code: 200, want: map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata.name": "a", "metadata.namespace": "default",
			"spec.replicas": "1", "status.replicas": "1", "status.selector": "app=a",
		}, check: func(t *testing.T, r response) {
			if at(r.obj, "metadata.uid") == nil || at(r.obj, "metadata.creationTimestamp") == nil {
				t.Errorf("metadata: %v", r.obj["metadata"])
			}
		}},
		{name: "update", method: "PUT", path: shardScale, body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a"},"spec":{"replicas":3}}`, code: 200,
			want: map[string]any{"kind": "Scale", "spec.replicas": "3", "status.replicas": "1"}},
		{name: "object after update", method: "GET", path: shards + "/a", code: 200,
			want: map[string]any{"spec.count": "3", "metadata.generation": "2", "status.count": "1"}},
		{name: "merge patch", method: "PATCH", path: shardScale, body: `{"spec":{"replicas":5}}`, code: 200, want: map[string]any{"spec.replicas": "5"}},
		{name: "zero", method: "PATCH", path: shardScale, body: `{"spec":{"replicas":0}}`, code: 200, want: map[string]any{"spec.replicas": nil}},
		{name: "stale resourceVersion", method: "PUT", path: shardScale, code: 409,
			body: `{"metadata":{"name":"a","resourceVersion":"1"},"spec":{"replicas":2}}`},
		{name: "negative", method: "PUT", path: shardScale, body: `{"metadata":{"name":"a"},"spec":{"replicas":-1}}`, code: 422,
			want:  map[string]any{"message": `Shard.example.com "a" is invalid: .spec.count: Invalid value: -1: should be a non-negative integer`},
			check: wantCauses(".spec.count: Invalid value: -1: should be a non-negative integer")},
		{name: "other name", method: "PUT", path: shardScale, body: `{"metadata":{"name":"b"},"spec":{"replicas":1}}`, code: 400,
			want: map[string]any{"message": "the name of the object (b) does not match the name on the URL (a)"}},
		{name: "other namespace", method: "PUT", path: shardScale, body: `{"metadata":{"name":"a","namespace":"x"},"spec":{"replicas":1}}`, code: 400,
			want: map[string]any{"message": "the namespace of the object (x) does not match the namespace on the request (default)"}},
		{name: "post", method: "POST", path: shardScale, body: `{}`, code: 405},
		{name: "missing object", method: "GET", path: shards + "/nope/scale", code: 404},
		{name: "create without count", method: "POST", path: shards, body: `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"b"},"spec":{}}`, code: 201},
		{name: "get without count", method: "GET", path: shards + "/b/scale", code: 500,
			want: map[string]any{"message": `Internal error occurred: the spec replicas field ".spec.count" does not exist`}},
		{name: "patch leaving count unset", method: "PATCH", path: shards + "/b/scale", body: `{"metadata":{"labels":{"x":"y"}}}`, code: 400,
			want: map[string]any{"message": `the spec replicas field ".spec.count" cannot be empty`}},
		{name: "patch setting it", method: "PATCH", path: shards + "/b/scale", body: `{"spec":{"replicas":2}}`, code: 200,
			want: map[string]any{"spec.replicas": "2"}},
		{name: "count not an integer", method: "POST", path: shards, body: `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"c"},"spec":{"count":1.5}}`, code: 422,
			check: wantCauses(".spec.count: Invalid value: 0: .spec.count accessor error: 1.5 is of the type float64, expected int64",
				`<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.count`,
				`spec.count: Invalid value: "number": spec.count in body must be of type integer: "number"`)},
	})
	r := exchange(t, ts, "PATCH", shardScale, http.Header{"Content-Type": {"application/json-patch+json"}}, `[{"op":"add","path":"/spec/replicas","value":4}]`)
	if r.code != 200 || at(r.obj, "spec.replicas") != "4" {
		t.Errorf("JSON patch: %d %v", r.code, r.obj)
	}
}

// TestInvalidScaleAndSelectableFields checks the definition checks of
// subresources.scale and selectableFields, with kube's paths and messages:
// those of spec, where kube's internal form moves the parts that all
// versions (here one) share.
func TestInvalidScaleAndSelectableFields(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	schema := `"schema":{"openAPIV3Schema":{"type":"object","properties":{
		"metadata":{"type":"object","properties":{"name":{"type":"string"}}},
		"spec":{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"},"list":{"type":"array","items":{"type":"string"}},
			"m":{"type":"object","additionalProperties":{"type":"string"}}}}}}}`
	def := func(version string) string {
		return `{"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
			"names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,` + schema + `,` + version + `}]}}`
	}
	tests := []struct {
		name, version string
		causes        []string
	}{
		{"scale paths", `"subresources":{"scale":{"specReplicasPath":"spec.n","statusReplicasPath":".spec.n","labelSelectorPath":".metadata.x"}}`, []string{
			`spec.subresources.scale.specReplicasPath: Invalid value: "spec.n": must be a simple json path starting with .`,
			`spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.n": should be a json path under .status`,
			`spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.x": should be a json path under either .spec or .status`,
		}},
		{"scale paths missing", `"subresources":{"scale":{}}`, []string{
			`spec.subresources.scale.specReplicasPath: Required value`,
			`spec.subresources.scale.statusReplicasPath: Required value`,
		}},
		{"selectable fields", `"selectableFields":[{"jsonPath":".spec.n"},{"jsonPath":".spec.n"},{"jsonPath":".spec"},{"jsonPath":".spec.list"},
			{"jsonPath":".spec.nope"},{"jsonPath":"spec.s"},{"jsonPath":".spec.list[0]"},{"jsonPath":".metadata.name"},{"jsonPath":""},{"jsonPath":".spec."},{"jsonPath":".spec.m.k"}]`, []string{
			`spec.selectableFields[1].jsonPath: Duplicate value: ".spec.n"`,
			`spec.selectableFields[2].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
			`spec.selectableFields[3].jsonPath: Invalid value: ".spec.list": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.`,
			`spec.selectableFields[4].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field`,
			`spec.selectableFields[5].jsonPath: Invalid value: "spec.s": is an invalid path: expected [ or . but got: spec`,
			`spec.selectableFields[6].jsonPath: Invalid value: ".spec.list[0]": is an invalid path: array notation is not allowed`,
			`spec.selectableFields[7].jsonPath: Invalid value: ".metadata.name": must not point to fields in metadata`,
			`spec.selectableFields[8].jsonPath: Required value`,
			`spec.selectableFields[9].jsonPath: Invalid value: ".spec.": is an invalid path: unexpected end of JSON path`,
		}},
		{"too many selectable fields", `"selectableFields":[{"jsonPath":".spec.n"},{"jsonPath":".spec.s"},{"jsonPath":".spec.m.a"},{"jsonPath":".spec.m.b"},
			{"jsonPath":".spec.m.c"},{"jsonPath":".spec.m.d"},{"jsonPath":".spec.m.e"},{"jsonPath":".spec.m.f"},{"jsonPath":".spec.m.g"}]`, []string{
			`spec.selectableFields: Too many: 9: must have at most 8 items`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, ts, "POST", crdsPath, "", def(tt.version))
			if r.code != 422 {
				t.Fatalf("got %d %v, want 422", r.code, r.obj)
			}
			wantCauses(tt.causes...)(t, r)
		})
	}
}

// TestScaleProtobuf checks that the scale subresource speaks protobuf, as
// client-go's scale client may: a Scale read and written in it.
func TestScaleProtobuf(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	for _, st := range []struct{ path, body string }{
		{crdsPath, shardCRD},
		{shards, `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`},
	} {
		if r := do(t, ts, "POST", st.path, "", st.body); r.code != 201 {
			t.Fatalf("POST %s: %d %v", st.path, r.code, r.obj)
		}
	}
	body, err := protobuf.Encode(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{"replicas": json.Number("7")}})
	if err != nil {
		t.Fatal(err)
	}
	resp, got := roundTrip(t, ts.Client(), "PUT", ts.URL+shardScale,
		http.Header{"Content-Type": {mediaProtobuf}, "Accept": {mediaProtobuf + ", application/json"}}, string(body))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != mediaProtobuf {
		t.Fatalf("PUT: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}
	obj, err := protobuf.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if at(obj, "kind") != "Scale" || fmt.Sprint(at(obj, "spec.replicas")) != "7" || at(obj, "metadata.name") != "a" {
		t.Errorf("Scale: %v", obj)
	}
	if r := do(t, ts, "GET", shards+"/a", "", ""); at(r.obj, "spec.count") != "7" {
		t.Errorf("object: %v", r.obj)
	}
}

// TestScaleAuthorization checks that <plural>/scale is a subresource to
// the authorizer, as in kube: a user may scale without updating the
// object, or the other way round.
func TestScaleAuthorization(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("alice-token,alice,1,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	ra := &recordingAuthorizer{allow: func(a authz.Attributes) bool { return a.Subresource != "scale" || a.Verb == "get" }}
	o := newObservedServer(t, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: ra}, (*Server).Handler)
	alice := http.Header{"Authorization": {"Bearer alice-token"}, "Content-Type": {mediaJSON}}
	for _, st := range []struct{ path, body string }{
		{crdsPath, shardCRD},
		{shards, `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`},
	} {
		if r := exchangeWith(t, o.ts.Client(), "POST", o.ts.URL+st.path, alice, st.body); r.code != 201 {
			t.Fatalf("POST %s: %d %v", st.path, r.code, r.obj)
		}
	}
	if r := exchangeWith(t, o.ts.Client(), "GET", o.ts.URL+shardScale, alice, ""); r.code != 200 {
		t.Errorf("get scale: %d %v", r.code, r.obj)
	}
	want := authz.Attributes{Verb: "get", ResourceRequest: true, APIGroup: "example.com", APIVersion: "v1", Namespace: "default", Resource: "shards", Subresource: "scale", Name: "a"}
	if got := ra.last(); got.User == nil || got.Verb != want.Verb || got.Resource != want.Resource || got.Subresource != want.Subresource || got.APIGroup != want.APIGroup || got.Name != want.Name {
		t.Errorf("attributes %+v, want %+v", got, want)
	}
	r := exchangeWith(t, o.ts.Client(), "PUT", o.ts.URL+shardScale, alice, `{"metadata":{"name":"a"},"spec":{"replicas":2}}`)
	if r.code != 403 || at(r.obj, "message") != `shards.example.com "a" is forbidden: User "alice" cannot update resource "shards/scale" in API group "example.com" in the namespace "default"` {
		t.Errorf("update scale: %d %v", r.code, r.obj)
	}
	if r := exchangeWith(t, o.ts.Client(), "PUT", o.ts.URL+shards+"/a", alice, `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":5}}`); r.code != 200 {
		t.Errorf("update object: %d %v", r.code, r.obj)
	}
}

// TestScalePatchTypes checks the patches kube's custom resource handler
// takes on /scale: JSON, merge and apply patches, not strategic merge
// (415 listing the others); an apply's entry (subresource scale) owns the
// object's replicas path, as kube's ScaleHandler maps it, and taking that
// field from another applier is a conflict unless forced.
func TestScalePatchTypes(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	runSteps(t, ts, []step{
		{name: "definition", method: "POST", path: crdsPath, body: shardCRD, code: 201},
		{name: "create", method: "POST", path: shards, body: `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`, code: 201},
	})
	h := func(ct string) http.Header { return http.Header{"Content-Type": {ct}} }
	r := exchange(t, ts, "PATCH", shardScale, h("application/strategic-merge-patch+json"), `{"spec":{"replicas":2}}`)
	if want := "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"; r.code != http.StatusUnsupportedMediaType || at(r.obj, "message") != want {
		t.Errorf("strategic merge patch: %d %v", r.code, r.obj)
	}
	owner := exchange(t, ts, "PATCH", shards+"/a?fieldManager=owner", h("application/apply-patch+yaml"), `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`)
	if owner.code != http.StatusOK {
		t.Fatalf("apply to the object: %d %v", owner.code, owner.obj)
	}
	scaleApply := `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a"},"spec":{"replicas":3}}`
	if r := exchange(t, ts, "PATCH", shardScale, h("application/apply-patch+yaml"), scaleApply); r.code != http.StatusUnprocessableEntity {
		t.Errorf("apply without fieldManager: %d %v", r.code, r.obj)
	}
	if r := exchange(t, ts, "PATCH", shardScale+"?fieldManager=scaler", h("application/apply-patch+yaml"), `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"}}`); r.code != http.StatusBadRequest ||
		at(r.obj, "message") != "Incorrect version specified in apply patch. Specified patch version: example.com/v1, expected: autoscaling/v1" {
		t.Errorf("apply of the object's kind: %d %v", r.code, r.obj)
	}
	r = exchange(t, ts, "PATCH", shardScale+"?fieldManager=scaler", h("application/apply-patch+yaml"), scaleApply)
	if want := "Apply failed with 2 conflicts: conflicts with \"Go-http-client\" using example.com/v1:\n- .spec.count\nconflicts with \"owner\":\n- .spec.count"; r.code != http.StatusConflict || at(r.obj, "message") != want {
		t.Errorf("apply taking another applier's field: %d %v", r.code, r.obj)
	}
	r = exchange(t, ts, "PATCH", shardScale+"?fieldManager=scaler&force=true", h("application/apply-patch+yaml"), scaleApply)
	if r.code != http.StatusOK || at(r.obj, "spec.replicas") != "3" || at(r.obj, "kind") != "Scale" {
		t.Fatalf("forced apply: %d %v", r.code, r.obj)
	}
	obj := exchange(t, ts, "GET", shards+"/a", nil, "")
	if at(obj.obj, "spec.count") != "3" {
		t.Errorf("count after the apply: %v", obj.obj)
	}
	var got []string
	for _, e := range obj.obj.Metadata()["managedFields"].([]any) {
		e := e.(map[string]any)
		fields, _ := json.Marshal(e["fieldsV1"])
		got = append(got, fmt.Sprintf("%v %v %v %v %s", e["manager"], e["operation"], e["apiVersion"], e["subresource"], fields))
	}
	// The forced apply took the field from the creator and the applier,
	// whose entry, empty, went (ScaleHandler.ToParent).
	want := []string{
		`scaler Apply example.com/v1 scale {"f:spec":{"f:count":{}}}`,
		`Go-http-client Update example.com/v1 <nil> {"f:spec":{}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("managedFields (-want +got):\n%s", diff)
	}
	// The applier keeps its field while the value is its.
	if r := exchange(t, ts, "PATCH", shardScale+"?fieldManager=scaler", h("application/apply-patch+yaml"), scaleApply); r.code != http.StatusOK {
		t.Errorf("apply again: %d %v", r.code, r.obj)
	}
	if r := exchange(t, ts, "PATCH", shardScale, h("application/merge-patch+json"), `{"spec":{"replicas":4}}`); r.code != http.StatusOK || at(r.obj, "spec.replicas") != "4" {
		t.Errorf("merge patch: %d %v", r.code, r.obj)
	}
	// kube names a conflicting manager's subresource (printManager).
	r = exchange(t, ts, "PATCH", shards+"/a?fieldManager=owner", h("application/apply-patch+yaml"), `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":7}}`)
	if want := `Apply failed with 1 conflict: conflict with "Go-http-client" with subresource "scale" using example.com/v1: .spec.count`; r.code != http.StatusConflict || at(r.obj, "message") != want {
		t.Errorf("apply to the object: %d %v", r.code, r.obj)
	}
}
