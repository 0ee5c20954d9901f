package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
)

// TestProtobufDefinitionTooDeep: a definition whose schema nests past
// api.MaxDepth, which protobuf can carry, is refused with a 400 that says
// why, and nothing is stored.
func TestProtobufDefinitionTooDeep(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	props := map[string]any{}
	for range api.MaxDepth {
		props = map[string]any{"not": props}
	}
	resp := protobufRequest(t, "POST", ts.URL+crds, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "deeps.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "deeps", "kind": "Deep"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": props}}}},
	})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "nested too deep") {
		t.Errorf("create: %d %q, want 400 nested too deep", resp.StatusCode, body)
	}
	list := decodeResponse(t, protobufRequest(t, "GET", ts.URL+crds, nil))
	if items, _ := list["items"].([]any); len(items) != 0 {
		t.Errorf("definitions after the refused create: %v", items)
	}
}
