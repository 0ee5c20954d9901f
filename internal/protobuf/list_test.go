package protobuf

import (
	"bytes"
	"errors"
	"testing"
)

// TestEncodeList checks that a list assembled from encoded items is byte
// for byte the list Encode writes from its JSON form.
func TestEncodeList(t *testing.T) {
	items := []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": "5"}, "data": map[string]any{"k": "v"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "labels": map[string]any{"x": "y"}}},
	}
	for _, tt := range []struct {
		name, rv, cont string
		n              int
	}{{"empty", "", "", 0}, {"versioned", "42", "", 2}, {"page", "42", "token", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			var enc [][]byte
			var plain []any
			for _, it := range items[:tt.n] {
				b, err := Encode(it)
				if err != nil {
					t.Fatal(err)
				}
				enc = append(enc, b)
				item := map[string]any{}
				for k, v := range it {
					if k != "apiVersion" && k != "kind" {
						item[k] = v
					}
				}
				plain = append(plain, item)
			}
			meta := map[string]any{}
			if tt.rv != "" {
				meta["resourceVersion"] = tt.rv
			}
			if tt.cont != "" {
				meta["continue"] = tt.cont
			}
			want, err := Encode(map[string]any{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta, "items": plain})
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeList("v1", "ConfigMapList", tt.rv, tt.cont, enc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("EncodeList differs from Encode of the list:\n got %x\nwant %x", got, want)
			}
		})
	}
	if _, err := EncodeList("v1", "WidgetList", "", "", nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an unsupported list kind: %v", err)
	}
	if _, err := EncodeList("v1", "ConfigMapList", "", "", [][]byte{[]byte("not protobuf")}); err == nil {
		t.Errorf("a malformed item was accepted")
	}
}
