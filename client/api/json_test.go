package api

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// referenceParse is ParseObject by encoding/json alone.
func referenceParse(data []byte) (Object, error) {
	var o Object
	if err := unmarshalNumbers(data, &o); err != nil {
		return nil, err
	}
	return o, nil
}

var objectJSONSeeds = []string{
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1-2","namespace":"bench"},"data":{"ts":"1763794353000000000","pad":"xxxx"}}`,
	` { "a" : [ 1 , -2.5e+3 , 0 , true , false , null , { } , [ ] ] } `,
	`{"a":1,"a":2}`,
	`{"s":"tab\there \"quoted\" \u00e9 \ud83d\ude00 \ud800"}`,
	`{"u":"héllo ☃ <b> & \u2028"}`,
	"{\"bad\":\"\xff\xfe\"}",
	`{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":1e}`, `{"n":.5}`, `{"n":1E+2}`, `{"n":-0.0e-0}`,
	`{"a":1,}`, `{"a" 1}`, `{,}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":tru}`, `{"a":nul}`,
	`{} x`, `{}{}`, `null`, `[1]`, `"x"`, ``, `{`, `{"a":{"b":{"c":[[[]]]}}}`,
	"{\"ctl\":\"a\x01b\"}",
	`{"big":12345678901234567890}`,
}

// FuzzObjectJSON checks the fast decoder against encoding/json: whatever it
// accepts, encoding/json accepts with the same result (it gives the rest to
// encoding/json); and MarshalObject writes json.Marshal's bytes.
func FuzzObjectJSON(f *testing.F) {
	for _, s := range objectJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, refErr := referenceParse(data)
		fast, ok := parseObject(data)
		if ok && (refErr != nil || !reflect.DeepEqual(fast, ref)) {
			t.Fatalf("parseObject(%q) = %#v; encoding/json: %#v, %v", data, fast, ref, refErr)
		}
		got, err := ParseObject(data)
		if (err != nil) != (refErr != nil || ref == nil) || !reflect.DeepEqual(got, ref) {
			t.Fatalf("ParseObject(%q) = %#v, %v; encoding/json: %#v, %v", data, got, err, ref, refErr)
		}
		if refErr != nil || ref == nil {
			return
		}
		checkMarshal(t, ref)
	})
}

// checkMarshal fails unless MarshalObject(o) is json.Marshal(o).
func checkMarshal(t *testing.T, o Object) {
	t.Helper()
	want, wantErr := json.Marshal(o)
	got, err := MarshalObject(o)
	if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
		t.Fatalf("MarshalObject(%#v) = %s, %v; json.Marshal: %s, %v", o, got, err, want, wantErr)
	}
}

func TestParseObjectSeeds(t *testing.T) {
	fast := 0
	for _, s := range objectJSONSeeds {
		if _, ok := parseObject([]byte(s)); ok {
			fast++
		}
	}
	if fast < 5 {
		t.Errorf("the fast decoder took only %d seeds", fast)
	}
	if _, ok := parseObject(ownedObject); !ok {
		t.Error("the fast decoder did not take an owned object")
	}
}

// TestMarshalObject covers the Go values the server puts into objects
// itself, beside those decoding gives.
func TestMarshalObject(t *testing.T) {
	for _, o := range []Object{
		{},
		{"generation": 1, "f": 1.5, "big": math.MaxInt64, "t": NewTime(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))},
		{"nested": Object{"a": map[string]string{"z": "1", "a": "<2>"}}, "list": []string{"b", "a"}, "nil": []any(nil), "nilmap": map[string]any(nil)},
		{"num": json.Number("12"), "empty": json.Number(""), "ctl": "a\nb", "html": "a<b>&c", "u": "é\u2028"},
		{"many": manyKeys(40)},
	} {
		checkMarshal(t, o)
	}
	if _, err := MarshalObject(Object{"bad": json.Number("1x")}); err == nil {
		t.Error("MarshalObject accepted an invalid json.Number")
	}
	if _, err := MarshalObject(Object{"bad": math.NaN()}); err == nil {
		t.Error("MarshalObject accepted NaN")
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	return m
}

// benchObject is a ConfigMap of about 1 KiB as the server stores it.
var benchObject = []byte(`{"apiVersion":"v1","data":{"pad":"` + strings.Repeat("x", 900) + `","ts":"1763794353000000000"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-22T08:00:00Z","generation":1,"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:pad":{},"f:ts":{}}},"manager":"Go-http-client","operation":"Update","time":"2026-11-22T08:00:00Z"}],"name":"c1-2","namespace":"bench","uid":"0b6f3a4e-2c1d-4f5e-9a7b-1c2d3e4f5a6b"}}`)

func BenchmarkParseObject(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseObject(benchObject); err != nil {
			b.Fatal(err)
		}
	}
}

// ownedObject is a ConfigMap of about 1 KiB with an owner, as the server
// stores it: its managedFields key the ownerReference by an escaped uid.
var ownedObject = []byte(`{"apiVersion":"v1","data":{"pad":"` + strings.Repeat("x", 900) + `"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-27T01:35:39Z","managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:pad":{}},"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"1b6bfc3d-db1b-465e-a9a1-c403677978c9\"}":{".":{},"f:apiVersion":{},"f:kind":{},"f:name":{},"f:uid":{}}}}},"manager":"Go-http-client","operation":"Update","time":"2026-11-27T01:35:39Z"}],"name":"d","namespace":"bench","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"1b6bfc3d-db1b-465e-a9a1-c403677978c9"}],"uid":"d8e7e8ec-153a-4c03-a1e8-ef84cea58c2c"}}`)

func BenchmarkParseObjectOwned(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseObject(ownedObject); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalObject(b *testing.B) {
	o, err := ParseObject(benchObject)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalObject(o); err != nil {
			b.Fatal(err)
		}
	}
}
