package registry

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/listwatch/listwatch/client/api"
)

// decodeSetEncode is what spliceRevision replaces: decode, set apiVersion
// and resourceVersion, encode.
func decodeSetEncode(t *testing.T, stored []byte, apiVersion string, rev int64) []byte {
	t.Helper()
	obj, err := api.ParseObject(stored)
	if err != nil {
		t.Fatalf("decoding %s: %v", stored, err)
	}
	obj["apiVersion"] = apiVersion
	obj.SetMeta("resourceVersion", strconv.FormatInt(rev, 10))
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSpliceRevision(t *testing.T) {
	tests := []struct {
		name, stored string
		ok           bool
	}{
		{"before later keys", `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-22T06:00:00Z","name":"a","namespace":"default","uid":"u"}}`, true},
		{"first", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"selfLink":"x","uid":"u"}}`, true},
		{"last", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, true},
		{"empty metadata", `{"apiVersion":"v1","metadata":{}}`, true},
		{"nested objects and strings with brackets", `{"apiVersion":"v1","metadata":{"annotations":{"a":"}{\"]["},"managedFields":[{"f":{"x":[1,2]}}],"name":"a"},"z":[true,null,-1.5e3]}`, true},
		{"whitespace", " {\"apiVersion\" : \"v1\" ,\n \"metadata\" : { \"name\" : \"a\" } } ", true},
		{"another apiVersion", `{"apiVersion":"v2","metadata":{"name":"a"}}`, false},
		{"no apiVersion", `{"metadata":{"name":"a"}}`, false},
		{"no metadata", `{"apiVersion":"v1"}`, false},
		{"metadata null", `{"apiVersion":"v1","metadata":null}`, false},
		{"resourceVersion stored", `{"apiVersion":"v1","metadata":{"name":"a","resourceVersion":"3"}}`, false},
		{"escaped key", `{"apiVersion":"v1","metadata":{"\u003ca":"x","name":"a"}}`, false},
		{"duplicate metadata", `{"apiVersion":"v1","metadata":{"name":"a"},"metadata":{"name":"b"}}`, false},
		{"trailing data", `{"apiVersion":"v1","metadata":{"name":"a"}}x`, false},
		{"not an object", `["apiVersion"]`, false},
		{"truncated", `{"apiVersion":"v1","metadata":{"name":"a"`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := spliceRevision([]byte(tt.stored), "v1", 42)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%s)", ok, tt.ok, got)
			}
			if !ok {
				return
			}
			want := decodeSetEncode(t, []byte(tt.stored), "v1", 42)
			if canonical(tt.stored) && !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			sameObject(t, got, want)
		})
	}
}

// canonical reports whether s is json.Marshal's encoding of its own decoding.
func canonical(s string) bool {
	obj, err := api.ParseObject([]byte(s))
	if err != nil {
		return false
	}
	b, err := json.Marshal(obj)
	return err == nil && string(b) == s
}

// sameObject fails unless got and want decode to the same object.
func sameObject(t *testing.T, got, want []byte) {
	t.Helper()
	g, err := api.ParseObject(got)
	if err != nil {
		t.Fatalf("the splice is not JSON: %v: %s", err, got)
	}
	w, _ := api.ParseObject(want)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// FuzzSpliceRevision checks spliceRevision against decoding, setting and
// encoding: the same object for any valid JSON it accepts, the same bytes
// for canonical JSON, and no panic on anything.
func FuzzSpliceRevision(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u"}}`), int64(7))
	f.Add([]byte(`{"apiVersion":"v1","metadata":{}}`), int64(0))
	f.Add([]byte(`{"apiVersion":"v1","metadata":{"a":{"b":["}"]},"z":1}}`), int64(1<<62))
	f.Add([]byte(`{"apiVersion":"v1","metadata":{"name":"a\"b"},"spec":[1,{"x":null}]}`), int64(-1))
	f.Fuzz(func(t *testing.T, stored []byte, rev int64) {
		got, ok := spliceRevision(stored, "v1", rev)
		if !ok || !json.Valid(stored) {
			return
		}
		want := decodeSetEncode(t, stored, "v1", rev)
		if canonical(string(stored)) && !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		sameObject(t, got, want)
	})
}

func TestMetadata(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"apiVersion":"v1","data":{"k":"}\"{"},"metadata":{"name":"a"},"z":1}`, `{"name":"a"}`, true},
		{` {"metadata" : {"uid":"u"} }`, `{"uid":"u"}`, true},
		{`{"data":{}}`, "", false},
		{`{"meta\u0064ata":{"name":"a"}}`, "", false}, // escaped: left to a full decode
		{`{"data":[1,2`, "", false},
		{`[]`, "", false},
	} {
		got, ok := Metadata([]byte(tc.in))
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("Metadata(%s) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestWithoutManagedFields checks that cutting managedFields out of the
// bytes leaves valid JSON that decodes as the object without them,
// wherever they are among the metadata's members.
func TestWithoutManagedFields(t *testing.T) {
	mf := `[{"manager":"m","fieldsV1":{"f:data":{"f:k":{}}},"time":"2026-01-01T00:00:00Z"}]`
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"data":{"k":"v"},"metadata":{"labels":{"a":"b"},"managedFields":` + mf + `,"name":"a"},"z":1}`, true},
		{`{"metadata":{"managedFields":` + mf + `,"name":"a"}}`, true},
		{`{"metadata":{"name":"a","managedFields":` + mf + `}}`, true},
		{`{"metadata":{"managedFields":` + mf + `}}`, true},
		{` { "metadata" : { "name" : "a" , "managedFields" : ` + mf + ` } } `, true},
		{`{"metadata":{"name":"a"},"spec":{"managedFields":1}}`, false},
		{`{"data":{}}`, false},
		{`[]`, false},
	} {
		got, ok := WithoutManagedFields([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("WithoutManagedFields(%s): ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		want, err := api.ParseObject([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		delete(want.Metadata(), "managedFields")
		obj, err := api.ParseObject(got)
		if err != nil {
			t.Errorf("WithoutManagedFields(%s) = %s: %v", tc.in, got, err)
		} else if !reflect.DeepEqual(obj, want) {
			t.Errorf("WithoutManagedFields(%s) = %s, want %v", tc.in, got, want)
		}
	}
}
