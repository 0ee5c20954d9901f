package patch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// TestJSONPatchAsKube: JSON Patch gives what kube-apiserver's json-patch
// v4 gives, where v5 (or RFC 6902 read strictly) gives otherwise, and
// kube's codes and messages where it fails.
func TestJSONPatchAsKube(t *testing.T) {
	const rejected = "the server rejected our request due to an error in our request"
	for _, tt := range []struct {
		name, doc, patch string
		want             string // the patched object, if it applies
		code             int32
		message          string
	}{
		{name: "replace of a missing member adds it", doc: `{"a":{}}`, patch: `[{"op":"replace","path":"/a/b","value":1}]`, want: `{"a":{"b":1}}`},
		{name: "replace of a member named by an index", doc: `{"a":{}}`, patch: `[{"op":"replace","path":"/a/0","value":1}]`, want: `{"a":{"0":1}}`},
		{name: "negative index adds before the end", doc: `{"a":[1,2]}`, patch: `[{"op":"add","path":"/a/-1","value":3}]`, want: `{"a":[1,2,3]}`},
		{name: "negative index replaces from the end", doc: `{"a":[1,2]}`, patch: `[{"op":"replace","path":"/a/-2","value":3}]`, want: `{"a":[3,2]}`},
		{name: "negative index removes from the end", doc: `{"a":[1,2]}`, patch: `[{"op":"remove","path":"/a/-1"}]`, want: `{"a":[1]}`},
		{name: "index with a leading zero", doc: `{"a":[1,2]}`, patch: `[{"op":"add","path":"/a/01","value":3}]`, want: `{"a":[1,3,2]}`},
		{name: "test of a missing member against null", doc: `{}`, patch: `[{"op":"test","path":"/x","value":null},{"op":"add","path":"/y","value":1}]`, want: `{"y":1}`},
		{name: "add without a value adds null", doc: `{}`, patch: `[{"op":"add","path":"/x"}]`, want: `{"x":null}`},
		{name: "copy of null", doc: `{"a":null}`, patch: `[{"op":"copy","from":"/a","path":"/b"}]`, want: `{"a":null,"b":null}`},
		{name: "copy, then test of a nested value", doc: `{"a":{"b":{"c":1}}}`, patch: `[{"op":"copy","from":"/a","path":"/z"},{"op":"test","path":"/z","value":{"b":{"c":1}}}]`, want: `{"a":{"b":{"c":1}},"z":{"b":{"c":1}}}`},
		{name: "test of a value that differs", doc: `{"a":1}`, patch: `[{"op":"test","path":"/a","value":2}]`, code: 422, message: rejected},
		{name: "remove of a missing member", doc: `{}`, patch: `[{"op":"remove","path":"/x"}]`, code: 422, message: rejected},
		{name: "add under a missing parent", doc: `{}`, patch: `[{"op":"add","path":"/x/y","value":1}]`, code: 422, message: rejected},
		{name: "index past the end", doc: `{"a":[1]}`, patch: `[{"op":"add","path":"/a/2","value":1}]`, code: 422, message: rejected},
		{name: "index before the start", doc: `{"a":[1]}`, patch: `[{"op":"add","path":"/a/-3","value":1}]`, code: 422, message: rejected},
		{name: "unknown operation", doc: `{}`, patch: `[{"op":"merge","path":"/x"}]`, code: 422, message: rejected},
		{name: "patch not a list (kube's with fieldValidation Ignore)", doc: `{}`, patch: `{"op":"add"}`, code: 400, message: "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
		{name: "test of the whole object without a value", doc: `{}`, patch: `[{"op":"test","path":""}]`, code: 500, message: "This request caused apiserver to panic. Look in the logs for details."},
		{name: "replace of the whole object without a value", doc: `{}`, patch: `[{"op":"replace","path":""}]`, code: 500, message: "This request caused apiserver to panic. Look in the logs for details."},
		{name: "test of lists holding null", doc: `{"a":[null]}`, patch: `[{"op":"test","path":"/a","value":[null]}]`, code: 500, message: "This request caused apiserver to panic. Look in the logs for details."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyTo(JSONPatch, []byte(tt.doc), []byte(tt.patch), Options{})
			if tt.code != 0 {
				se, ok := err.(*api.StatusError)
				if !ok || se.Status.Code != tt.code || se.Status.Message != tt.message {
					t.Fatalf("got %s, %v; want %d %q", got, err, tt.code, tt.message)
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
