package patch

import (
	"errors"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// TestApplyJSONPatchOps: a policy's operations apply within a client
// patch's bounds, at the limit of operations and not past it, and a failed
// test is json-patch's ErrTestFailed for the caller to tell apart.
func TestApplyJSONPatchOps(t *testing.T) {
	doc := []byte(`{"metadata":{"name":"a"},"data":{"k":"v"}}`)
	ops := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"op": "test", "path": "/data/k", "value": "v"}
		}
		return out
	}
	if _, err := ApplyJSONPatchOps(doc, ops(maxJSONPatchOps)); err != nil {
		t.Errorf("%d operations: %v", maxJSONPatchOps, err)
	}
	if _, err := ApplyJSONPatchOps(doc, ops(maxJSONPatchOps+1)); err == nil || !strings.Contains(err.Error(), "maximum operations") {
		t.Errorf("%d operations: %v, want the limit's error", maxJSONPatchOps+1, err)
	}
	_, err := ApplyJSONPatchOps(doc, []map[string]any{{"op": "test", "path": "/data/k", "value": "w"}})
	if !errors.Is(err, jsonpatch.ErrTestFailed) {
		t.Errorf("failed test: %v, want ErrTestFailed", err)
	}
	out, err := ApplyJSONPatchOps(doc, []map[string]any{{"op": "add", "path": "/data/n", "value": map[string]any{"x": []any{1, nil}}}})
	if err != nil || string(out) != `{"data":{"k":"v","n":{"x":[1,null]}},"metadata":{"name":"a"}}` {
		t.Errorf("add: %s, %v", out, err)
	}
}

// TestMergeApplyConfiguration: an apply configuration merges into a copy
// of the object (maps key by key, sets item by item), and one that sets an
// atomic list is refused with the list's path.
func TestMergeApplyConfiguration(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}, "finalizers": []any{"f1"}},
		"spec": map[string]any{"list": []any{"a"}}}
	got, err := MergeApplyConfiguration(obj, map[string]any{"metadata": map[string]any{"labels": map[string]any{"y": "2"}, "finalizers": []any{"f2"}}}, SchemaFor("example.com", "v1", "Widget"))
	if err != nil {
		t.Fatal(err)
	}
	md := got["metadata"].(map[string]any)
	if md["labels"].(map[string]any)["x"] != "1" || md["labels"].(map[string]any)["y"] != "2" || len(md["finalizers"].([]any)) != 2 {
		t.Errorf("merged %v", got)
	}
	if _, ok := obj["metadata"].(map[string]any)["labels"].(map[string]any)["y"]; ok {
		t.Error("the merge changed the object it was given")
	}
	_, err = MergeApplyConfiguration(obj, map[string]any{"spec": map[string]any{"list": []any{"b"}}}, SchemaFor("example.com", "v1", "Widget"))
	if err == nil || err.Error() != "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.list" {
		t.Errorf("atomic list: %v", err)
	}
}
