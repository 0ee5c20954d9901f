package api

import (
	"encoding/json"
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
