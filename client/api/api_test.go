package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseObject(t *testing.T) {
	o, err := ParseObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"x":"1","n":2}},"data":{"big":12345678901234567890}}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind() != "ConfigMap" || o.Name() != "a" || o.Namespace() != "ns" || o.Labels()["x"] != "1" {
		t.Errorf("accessors read %q %q %q %v", o.Kind(), o.Name(), o.Namespace(), o.Labels())
	}
	if _, ok := o.Labels()["n"]; ok {
		t.Errorf("a non-string label was read as a string")
	}
	out, _ := json.Marshal(o)
	if want := `"big":12345678901234567890`; !strings.Contains(string(out), want) {
		t.Errorf("a large integer did not survive: %s", out)
	}
	for _, bad := range []string{``, `[]`, `null`, `{"a":1} {"b":2}`, `{"a":`, `"str"`} {
		if _, err := ParseObject([]byte(bad)); err == nil {
			t.Errorf("ParseObject(%q) accepted", bad)
		}
	}
}

func TestDeepCopy(t *testing.T) {
	o := Object{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "list": []any{map[string]any{"x": "y"}}}
	c := o.DeepCopy()
	c.Metadata()["labels"].(map[string]any)["a"] = "changed"
	c["list"].([]any)[0].(map[string]any)["x"] = "changed"
	if o.Labels()["a"] != "b" || o["list"].([]any)[0].(map[string]any)["x"] != "y" {
		t.Errorf("DeepCopy shares state: %v", o)
	}
}

func TestTimeJSON(t *testing.T) {
	tm := NewTime(time.Date(2026, 11, 22, 5, 49, 38, 999, time.UTC))
	b, _ := json.Marshal(tm)
	if string(b) != `"2026-11-22T05:49:38Z"` {
		t.Fatalf("Time marshals as %s", b)
	}
	var back Time
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tm.Time) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`"yesterday"`), &back); err == nil {
		t.Fatal("a malformed time was accepted")
	}
}

// TestPartialObjectMetadata decodes kube-apiserver's metadata-only form of
// an object and reads it back through the getters a client.Object has.
func TestPartialObjectMetadata(t *testing.T) {
	const in = `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","generation":3,"creationTimestamp":"2026-01-02T03:04:05Z","deletionTimestamp":"2026-01-02T03:05:00Z","labels":{"l":"1"},"annotations":{"a":"2"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u0"}],"finalizers":["f"]}}`
	var p PartialObjectMetadata
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	got := []any{p.Kind, p.APIVersion, p.GetName(), p.GetNamespace(), p.GetUID(), p.GetResourceVersion(), p.GetGeneration(),
		p.GetLabels()["l"], p.GetAnnotations()["a"], p.GetOwnerReferences()[0].Name, p.GetFinalizers()[0],
		p.GetCreationTimestamp().Unix(), p.GetDeletionTimestamp().Sub(p.GetCreationTimestamp().Time)}
	want := []any{"PartialObjectMetadata", "meta.k8s.io/v1", "a", "ns", "u1", "7", int64(3), "1", "2", "rs", "f", int64(1767323045), 55 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d: got %v, want %v", i, got[i], want[i])
		}
	}
	out, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var back, orig map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &orig); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, orig) {
		t.Errorf("round trip changed the object:\n%s\nwant\n%s", out, in)
	}
}

func TestMicroTimeJSON(t *testing.T) {
	tm := NewMicroTime(time.Date(2026, 11, 22, 5, 49, 38, 1999, time.FixedZone("x", 3600)))
	b, _ := json.Marshal(tm)
	if string(b) != `"2026-11-22T04:49:38.000001Z"` {
		t.Fatalf("MicroTime marshals as %s", b)
	}
	var back MicroTime
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tm.Time) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if b, _ := json.Marshal(MicroTime{}); string(b) != "null" {
		t.Errorf("the zero MicroTime marshals as %s, want null", b)
	}
	if err := json.Unmarshal([]byte(`"2026-11-22T04:49:38Z"`), &back); err == nil {
		t.Fatal("a time without microseconds was accepted, as kube's MicroTime does not")
	}
}
