package patch

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// mustMap decodes a JSON object for a test.
func mustMap(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := decodeMap([]byte(s))
	if err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

var (
	configMap = SchemaFor("", "v1", "ConfigMap")
	namespace = SchemaFor("", "v1", "Namespace")
)

func TestMergeStrategic(t *testing.T) {
	tests := []struct {
		name                  string
		schema                *Schema
		original, patch, want string
	}{
		{"maps merge recursively", configMap,
			`{"data":{"a":"1","b":"2"},"metadata":{"labels":{"x":"1"}}}`,
			`{"data":{"b":"3","c":"4"},"metadata":{"labels":{"y":"2"}}}`,
			`{"data":{"a":"1","b":"3","c":"4"},"metadata":{"labels":{"x":"1","y":"2"}}}`},
		{"null deletes", configMap,
			`{"data":{"a":"1","b":"2"},"immutable":false}`,
			`{"data":{"a":null},"immutable":null}`,
			`{"data":{"b":"2"}}`},
		{"lists are replaced by default", namespace,
			`{"spec":{"finalizers":["kubernetes","x"]}}`,
			`{"spec":{"finalizers":["y"]}}`,
			`{"spec":{"finalizers":["y"]}}`},
		{"a value of another type replaces", configMap,
			`{"data":"nope"}`,
			`{"data":{"a":"1"}}`,
			`{"data":{"a":"1"}}`},
		{"finalizers merge as a set in patch order", configMap,
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"finalizers":["c","a"]}}`,
			`{"metadata":{"finalizers":["c","a","b"]}}`},
		{"kubectl adds a finalizer with $setElementOrder", configMap,
			`{"metadata":{"finalizers":["a","server"]}}`,
			`{"metadata":{"$setElementOrder/finalizers":["a","b"],"finalizers":["b"]}}`,
			`{"metadata":{"finalizers":["a","b","server"]}}`},
		{"kubectl removes a finalizer with $deleteFromPrimitiveList", configMap,
			`{"metadata":{"finalizers":["a","b","c"]}}`,
			`{"metadata":{"$deleteFromPrimitiveList/finalizers":["b"],"$setElementOrder/finalizers":["a","c"]}}`,
			`{"metadata":{"finalizers":["a","c"]}}`},
		{"$setElementOrder alone reorders", configMap,
			`{"metadata":{"finalizers":["a","b"]}}`,
			`{"metadata":{"$setElementOrder/finalizers":["b","a"]}}`,
			`{"metadata":{"finalizers":["b","a"]}}`},
		{"ownerReferences merge by uid", configMap,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"a","kind":"K"},{"uid":"2","name":"b"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"2","name":"b2"},{"uid":"3","name":"c"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"a","kind":"K"},{"uid":"2","name":"b2"},{"uid":"3","name":"c"}]}}`},
		{"kubectl's ownerReferences patch with $setElementOrder and $patch delete", configMap,
			`{"metadata":{"ownerReferences":[{"uid":"1","name":"a"},{"uid":"2","name":"b"},{"uid":"3","name":"c"}]}}`,
			`{"metadata":{"$setElementOrder/ownerReferences":[{"uid":"3"},{"uid":"1"}],"ownerReferences":[{"$patch":"delete","uid":"2"},{"uid":"3","name":"c2"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"3","name":"c2"},{"uid":"1","name":"a"}]}}`},
		{"$patch: replace in a merged list", configMap,
			`{"metadata":{"ownerReferences":[{"uid":"1"},{"uid":"2"}]}}`,
			`{"metadata":{"ownerReferences":[{"$patch":"replace"},{"uid":"3"}]}}`,
			`{"metadata":{"ownerReferences":[{"uid":"3"}]}}`},
		{"$patch: replace on a map", configMap,
			`{"data":{"a":"1","b":"2"}}`,
			`{"data":{"$patch":"replace","c":"3"}}`,
			`{"data":{"c":"3"}}`},
		{"$patch: delete on a map", configMap,
			`{"data":{"a":"1"},"binaryData":{"b":"eA=="}}`,
			`{"data":{"$patch":"delete"}}`,
			`{"data":{},"binaryData":{"b":"eA=="}}`},
		{"$patch: merge is the default", configMap,
			`{"data":{"a":"1"}}`,
			`{"data":{"$patch":"merge","b":"2"}}`,
			`{"data":{"a":"1","b":"2"}}`},
		{"$retainKeys drops unlisted keys", configMap,
			`{"spec":{"a":1,"b":2,"c":3}}`,
			`{"spec":{"$retainKeys":["a","c"],"c":4}}`,
			`{"spec":{"a":1,"c":4}}`},
		{"namespace conditions merge by type", namespace,
			`{"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"False"}]}}`,
			`{"status":{"conditions":[{"type":"B","status":"True"}]}}`,
			`{"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}}`},
		{"directives in a new map are applied, not stored", configMap,
			`{}`,
			`{"data":{"$patch":"replace","a":"1","b":null}}`,
			`{"data":{"a":"1"}}`},
		{"custom object lists are atomic", SchemaFor("example.com", "v1", "Widget"),
			`{"spec":{"items":[1,2]},"metadata":{"finalizers":["a"]}}`,
			`{"spec":{"items":[3]},"metadata":{"finalizers":["b"]}}`,
			`{"spec":{"items":[3]},"metadata":{"finalizers":["b","a"]}}`},
		{"kubectl client-side apply of a ConfigMap", configMap,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"1\",\"b\":\"2\"}}\n"}},"data":{"a":"1","b":"2","server":"s"}}`,
			`{"data":{"a":"9","b":null,"c":"3"},"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"9\",\"c\":\"3\"}}\n"}}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"9\",\"c\":\"3\"}}\n"}},"data":{"a":"9","c":"3","server":"s"}}`},
		{"kubectl client-side apply of a Secret", SchemaFor("", "v1", "Secret"),
			`{"metadata":{"name":"s","labels":{"app":"x","old":"y"}},"type":"Opaque","data":{"p":"cA=="}}`,
			`{"metadata":{"labels":{"old":null}},"data":{"p":"cTI="},"stringData":{"u":"me"}}`,
			`{"metadata":{"name":"s","labels":{"app":"x"}},"type":"Opaque","data":{"p":"cTI="},"stringData":{"u":"me"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeStrategic(mustMap(t, tt.original), mustMap(t, tt.patch), tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mustMap(t, tt.want), got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestMergeStrategicErrors(t *testing.T) {
	tests := []struct {
		name, original, patch string
		code                  int32
	}{
		{"unknown $patch", `{}`, `{"data":{"$patch":"frobnicate"}}`, http.StatusBadRequest},
		{"unknown directive", `{}`, `{"$frob":1}`, http.StatusBadRequest},
		{"$retainKeys not a list", `{}`, `{"spec":{"$retainKeys":"a"}}`, http.StatusBadRequest},
		{"patch outside $retainKeys", `{}`, `{"spec":{"$retainKeys":["a"],"b":1}}`, http.StatusUnprocessableEntity},
		{"merge list item without its key", `{}`, `{"metadata":{"ownerReferences":[{"name":"x"}]}}`, http.StatusBadRequest},
		{"object in a primitive set", `{}`, `{"metadata":{"finalizers":[{"a":1}]}}`, http.StatusBadRequest},
		{"$deleteFromPrimitiveList not a list", `{}`, `{"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}}`, http.StatusBadRequest},
		{"$setElementOrder not a list", `{}`, `{"metadata":{"$setElementOrder/finalizers":1}}`, http.StatusBadRequest},
		{"$patch delete in a primitive set", `{}`, `{"metadata":{"finalizers":[{"$patch":"delete"}]}}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MergeStrategic(mustMap(t, tt.original), mustMap(t, tt.patch), configMap)
			se, ok := err.(*api.StatusError)
			if !ok || se.Status.Code != tt.code || se.Status.Message == "" {
				t.Fatalf("got %v, want a Status error with code %d", err, tt.code)
			}
		})
	}
}

func TestApplyTo(t *testing.T) {
	cur := []byte(`{"metadata":{"name":"a"},"data":{"k":"v"}}`)
	tests := []struct {
		name, typ, patch, want string
		strategic              bool
		code                   int32
	}{
		{name: "JSON Patch", typ: JSONPatch, patch: `[{"op":"replace","path":"/data/k","value":"w"}]`, want: `{"metadata":{"name":"a"},"data":{"k":"w"}}`},
		{name: "JSON Patch test fails", typ: JSONPatch, patch: `[{"op":"test","path":"/data/k","value":"x"}]`, code: http.StatusUnprocessableEntity},
		{name: "malformed JSON Patch", typ: JSONPatch, patch: `{"op":"add"}`, code: http.StatusBadRequest},
		{name: "merge patch", typ: MergePatch, patch: `{"data":{"k":null,"n":"1"}}`, want: `{"metadata":{"name":"a"},"data":{"n":"1"}}`},
		{name: "malformed merge patch", typ: MergePatch, patch: `{"data":`, code: http.StatusBadRequest},
		{name: "strategic", typ: StrategicMerge, strategic: true, patch: `{"data":{"n":"1"}}`, want: `{"metadata":{"name":"a"},"data":{"k":"v","n":"1"}}`},
		{name: "strategic not a map", typ: StrategicMerge, strategic: true, patch: `[1]`, code: http.StatusBadRequest},
		{name: "strategic on a custom resource", typ: StrategicMerge, patch: `{}`, code: http.StatusUnsupportedMediaType},
		{name: "unknown type", typ: "text/plain", patch: `{}`, code: http.StatusUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyTo(tt.typ, cur, []byte(tt.patch), Options{Strategic: tt.strategic, Schema: configMap})
			if tt.code != 0 {
				se, ok := err.(*api.StatusError)
				if !ok || se.Status.Code != tt.code {
					t.Fatalf("got %v, want code %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mustMap(t, tt.want), mustMap(t, string(got))); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestJSONPatchBounds(t *testing.T) {
	ops := make([]map[string]any, maxJSONPatchOps+1)
	for i := range ops {
		ops[i] = map[string]any{"op": "test", "path": "/a", "value": 1}
	}
	many, _ := json.Marshal(ops)
	if _, err := ApplyTo(JSONPatch, []byte(`{"a":1}`), many, Options{}); err.(*api.StatusError).Status.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("too many operations: %v, want 413", err)
	}
	// Each copy doubles the object: the accumulated copy size is bounded.
	doubling := `[`
	for range 30 {
		doubling += `{"op":"copy","from":"/a","path":"/a/-"},`
	}
	doubling = doubling[:len(doubling)-1] + `]`
	big := `{"a":["` + strings.Repeat("x", 100) + `"]}`
	if _, err := ApplyTo(JSONPatch, []byte(big), []byte(doubling), Options{}); err == nil {
		t.Errorf("a patch copying without bound applied")
	}
}

// TestJSONPatchScanBound: a JSON Patch whose path levels times the bytes of
// object and patch are maxJSONPatchScan applies; one level more is 422.
func TestJSONPatchScanBound(t *testing.T) {
	doc, patch := atScanBound()
	if _, err := ApplyTo(JSONPatch, doc, []byte(patch(scanBoundLevels)), Options{}); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	_, err := ApplyTo(JSONPatch, doc, []byte(patch(scanBoundLevels+1)), Options{})
	if se, ok := err.(*api.StatusError); !ok || se.Status.Code != http.StatusUnprocessableEntity {
		t.Errorf("one level past the bound: %v, want 422", err)
	}
}

// TestJSONPatchTestScanBound: a test's value counts testLevel levels per
// level of its depth: a test at the bound applies, one level deeper is 422.
// Uncounted, a test of a value 9,000 levels deep took 20 s.
func TestJSONPatchTestScanBound(t *testing.T) {
	const depth = 10
	value := func(depth, pad int) string {
		return strings.Repeat(`{"a":`, depth-1) + `{"p":"` + strings.Repeat("x", pad) + `"}` + strings.Repeat("}", depth-1)
	}
	test := func(depth, pad int) (doc, patch []byte) {
		v := value(depth, pad)
		return []byte(`{"x":` + v + `}`), []byte(`[{"op":"test","path":"/x","value":` + v + `}]`)
	}
	doc, patch := test(depth, 0)
	pad := (maxJSONPatchScan/(1+testLevel*depth) - len(doc) - len(patch)) / 2
	doc, patch = test(depth, pad)
	if _, err := ApplyTo(JSONPatch, doc, patch, Options{}); err != nil {
		t.Errorf("a test at the bound (%d bytes): %v", len(doc)+len(patch), err)
	}
	doc, patch = test(depth+1, pad)
	_, err := ApplyTo(JSONPatch, doc, patch, Options{})
	if se, ok := err.(*api.StatusError); !ok || se.Status.Code != http.StatusUnprocessableEntity {
		t.Errorf("a test one level deeper: %v, want 422", err)
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `"[{"`: 0, `{}`: 1, `[[{}],[]]`: 3, `{"a":"}{[\"]","b":[1,{"c":[]}]}`: 4, `["\\",[]]`: 2,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", in, got, want)
		}
	}
}

// scanBoundLevels are the levels of atScanBound's patch.
const scanBoundLevels = 8

// atScanBound returns an object and a JSON Patch of n levels into it,
// whose bytes with n = scanBoundLevels are maxJSONPatchScan / n.
func atScanBound() (doc []byte, patch func(n int) string) {
	patch = func(n int) string {
		return `[{"op":"replace","path":"` + strings.Repeat("/a", n) + `","value":1}]`
	}
	open, closing := strings.Repeat(`{"a":`, scanBoundLevels+1), strings.Repeat("}", scanBoundLevels+1)
	pad := maxJSONPatchScan/scanBoundLevels - len(open) - len(closing) - len(patch(scanBoundLevels)) - 2
	return []byte(open + `"` + strings.Repeat("x", pad) + `"` + closing), patch
}
