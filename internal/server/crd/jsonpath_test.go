package crd

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

func TestPathEval(t *testing.T) {
	obj, err := api.ParseObject([]byte(`{"metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app.kubernetes.io/name":"w"}},
		"spec":{"replicas":3,"list":[{"name":"first"},{"name":"second"}],"on":true},
		"status":{"conditions":[{"type":"Synced","status":"False","n":1},{"type":"Ready","status":"True","n":2}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want any // nil: nothing found
	}{
		{".spec.replicas", json.Number("3")},
		{"{.spec.replicas}", json.Number("3")},
		{"$.spec.on", true},
		{`.status.conditions[?(@.type=="Ready")].status`, "True"},
		{`.status.conditions[?(@.type!='Ready')].status`, "False"},
		{`.status.conditions[?(@.n > 1)].type`, "Ready"},
		{`.status.conditions[?(@.n)].type`, "Synced"},
		{`.status.conditions[?(@.type=="Missing")].status`, nil},
		{".metadata.creationTimestamp", "2026-01-02T03:04:05Z"},
		{".spec.list[0].name", "first"},
		{".spec.list[-1].name", "second"},
		{".spec.list[5].name", nil},
		{".spec.list[*].name", "first"},
		{`.metadata.labels.app\.kubernetes\.io/name`, "w"},
		{".metadata.labels['app.kubernetes.io/name']", nil}, // kube reads .app.kubernetes.io/name
		{".spec.list[1:].name", "second"},
		{".spec.list[::-1].name", nil},
		{".spec.list[1,0].name", "second"},
		{"..name", "first"},
		{".status..type", "Synced"},
		{".spec['replicas','on']", json.Number("3")},
		{".spec.absent", nil},
		{".spec.replicas.deeper", nil},
		// Where kube's JSONPath fails the whole path, nothing is found.
		{".metadata.labels[*]", nil},
		{".spec[0]", nil},
		{`.spec[?(@.name)]`, nil},
		{".status.conditions[*].n", json.Number("1")},
		{`.status.conditions[?(@.n == 1.0)].type`, nil},
		{`.status.conditions[?(@.n == "1")].type`, nil},
		{`.status.conditions[?(@.type == 1)].type`, nil},
		{`.status.conditions[?(@.type < "S")].type`, "Ready"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := ParsePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.Eval(map[string]any(obj))
			if ok != (tt.want != nil) || !cmp.Equal(tt.want, got) {
				t.Errorf("got %v (found %v), want %v", got, ok, tt.want)
			}
		})
	}
}

func TestParsePathErrors(t *testing.T) {
	for _, p := range []string{"", "spec", ".a[-]", ".a[1:x]", ".a....b", ".spec[", ".spec[abc]", `.a[?(@.b=="x"]`, `.a[?(b=="x")]`, `.a[?(@.b==x)]`} {
		t.Run(p, func(t *testing.T) {
			if _, err := ParsePath(p); err == nil {
				t.Errorf("ParsePath(%q) succeeded", p)
			}
		})
	}
}
