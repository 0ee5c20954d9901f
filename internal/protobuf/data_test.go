package protobuf

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// servicePort is a Service whose one port (spec=2, ports=1) is body.
func servicePort(body []byte) []byte {
	return envelope("v1", "Service", appendBytes(nil, 2, appendBytes(nil, 1, body)))
}

// The types that encode themselves, as their Go Marshal and MarshalJSON
// write them: an IntOrString by its type, a Quantity as its string, a
// number accepted where Quantity's UnmarshalJSON accepts one.
func TestCustomKinds(t *testing.T) {
	for _, tt := range []struct {
		name       string
		targetPort any
		want       []byte // the IntOrString's bytes: type, intVal, strVal
	}{
		{"int", 8080.0, appendString(appendVarint(appendVarint(nil, 1, 0), 2, 8080), 3, "")},
		{"negative", -1.0, appendString(appendVarint(appendVarint(nil, 1, 0), 2, 1<<64-1), 3, "")},
		{"string", "http", appendString(appendVarint(appendVarint(nil, 1, 1), 2, 0), 3, "http")},
		{"null", nil, appendString(appendVarint(appendVarint(nil, 1, 0), 2, 0), 3, "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{}, "spec": map[string]any{
				"ports": []any{map[string]any{"port": 80.0, "targetPort": tt.targetPort}}}, "status": map[string]any{}}
			got, err := Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			port := appendVarint(appendString(appendString(nil, 1, ""), 2, ""), 3, 80) // name, protocol, port
			port = appendVarint(appendBytes(port, 4, tt.want), 5, 0)                   // targetPort, nodePort
			if _, _, raw, _ := open(got); !bytes.Contains(raw, port) {
				t.Errorf("Encode: %x lacks the port %x", raw, port)
			}
			back, err := Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.targetPort
			if want == nil {
				want = 0.0
			}
			if got := back["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["targetPort"]; got != want {
				t.Errorf("Decode: targetPort %v, want %v", got, want)
			}
		})
	}
	limits := map[string]any{"cpu": 1.5, "memory": "128Mi", "pods": nil}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"overhead": limits}}
	data, err := Encode(pod)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"cpu": "1.5", "memory": "128Mi", "pods": "0"}, back["spec"].(map[string]any)["overhead"]); diff != "" {
		t.Errorf("quantities (-want +got):\n%s", diff)
	}
}

func TestCustomKindErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		want error
	}{
		{"IntOrString of type 2", servicePort(appendBytes(nil, 4, appendVarint(nil, 1, 2))), ErrNotRepresentable},
		{"empty Quantity", envelope("v1", "Pod", appendBytes(nil, 2, appendBytes(nil, 32, appendBytes(appendString(nil, 1, "cpu"), 2, appendString(nil, 1, ""))))), ErrMalformed},
	} {
		if _, err := Decode(tt.data); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	bad := map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"overhead": map[string]any{"cpu": true}}}
	if _, err := Encode(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("a boolean quantity: %v, want %v", err, ErrInvalid)
	}
}
