package watchcache

import (
	"maps"
	"testing"

	"github.com/listwatch/listwatch/client/api"
)

// eventFields are the paths the server gives an Event's cache, deep and
// shallow ones, and one that is a prefix of others.
var eventFields = map[string][]string{
	"metadata.name":       {"metadata", "name"},
	"metadata.namespace":  {"metadata", "namespace"},
	"involvedObject.kind": {"involvedObject", "kind"},
	"involvedObject.name": {"involvedObject", "name"},
	"type":                {"type"},
	"source":              {"source", "component"},
	"whole":               {"involvedObject"},
}

// fieldReaderSeeds are objects, and whether fromJSON reads them rather
// than leave them to the decode.
var fieldReaderSeeds = []struct {
	json string
	read bool
}{
	{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"app":"web","tier":"db"},"resourceVersion":"7"},"data":{"k":"v"}}`, true},
	{`{"apiVersion":"v1","kind":"Event","involvedObject":{"kind":"Pod","name":"p","uid":"u"},"metadata":{"name":"e","namespace":"ns"},"type":"Warning","source":{"component":"kubelet"},"reason":"Failed"}`, true},
	{` { "metadata" : { "labels" : { "a" : "1" , "b" : 2, "c": null, "d": {"x":"y"} } } , "type" : 3 } `, true},
	{`{"metadata":{"labels":{"a":"1","a":2,"b":3,"b":"4"},"name":"x"}}`, true},
	{`{"metadata":{"na\u006de":"\u00e9\n\"q\"","labels":{"k\\ey":"v\u0041"}},"source":"flat"}`, true},
	{`{"metadata":null,"involvedObject":[1,2,{"kind":"x"}],"type":{"a":"b"},"z":[{"metadata":{"name":"deep"}}],"data":{"k":"v","k":"w"}}`, true},
	{`{"metadata":{"labels":{}},"involvedObject":"s"}`, true},
	{`{"metadata":{"labels":"notamap","namespace":5}}`, true},
	{`{}`, true},
	{`{"type":true,"source":{"component":-12},"involvedObject":{"kind":false,"name":1.5e3}}`, true},
	{`{"type":12345678901234567890,"source":{"component":0.25}}`, true},
	{`{"metadata":{"name":"a","name":"b"}}`, false},
	{`{"metadata":{"name":"a"},"metadata":{"name":"b"}}`, false},
	{`{"metadata":{"name":"a"}} {}`, false},
	{`[{"metadata":{"name":"a"}}]`, false},
	{"{\"metadata\":{\"name\":\"\xff\"}}", false},
}

// checkFieldReader checks that, when fromJSON reads b, it reads what
// fromObject reads from b decoded as the server decodes it.
func checkFieldReader(t *testing.T, r *fieldReader, b []byte) (read bool) {
	t.Helper()
	got, ok := r.fromJSON(b)
	obj, err := api.ParseObject(b)
	if err != nil {
		if ok {
			t.Fatalf("fromJSON read %q, which does not decode: %v", b, err)
		}
		return false
	}
	if !ok {
		return false
	}
	want := r.fromObject(obj)
	if got.ns != want.ns || !maps.Equal(got.labels, want.labels) || !maps.Equal(got.fields, want.fields) {
		t.Fatalf("%s:\nfrom JSON   %+v\nfrom object %+v", b, got, want)
	}
	return true
}

// TestFieldReader checks fromJSON against the full decode, and that it
// reads the common shapes instead of leaving them to the decode.
func TestFieldReader(t *testing.T) {
	r := newFieldReader(eventFields)
	for _, s := range fieldReaderSeeds {
		if read := checkFieldReader(t, r, []byte(s.json)); read != s.read {
			t.Errorf("fromJSON read %s: %v, want %v", s.json, read, s.read)
		}
	}
	a, _ := r.fromJSON([]byte(fieldReaderSeeds[1].json))
	want := map[string]string{
		"metadata.name": "e", "metadata.namespace": "ns", "involvedObject.kind": "Pod",
		"involvedObject.name": "p", "type": "Warning", "source": "kubelet", "whole": "",
	}
	if !maps.Equal(a.fields, want) || a.ns != "ns" {
		t.Errorf("fields %v in namespace %q, want %v in ns", a.fields, a.ns, want)
	}
	nums, _ := r.fromJSON([]byte(`{"type":true,"source":{"component":-12},"involvedObject":{"kind":false,"name":1.5e3}}`))
	if want := map[string]string{"metadata.name": "", "metadata.namespace": "", "type": "true", "source": "-12", "involvedObject.kind": "false", "involvedObject.name": "1500", "whole": ""}; !maps.Equal(nums.fields, want) {
		t.Errorf("scalars: %v, want %v", nums.fields, want)
	}
	if l, _ := r.fromJSON([]byte(fieldReaderSeeds[3].json)); !maps.Equal(l.labels, map[string]string{"b": "4"}) {
		t.Errorf("repeated labels: %v, want the last of each that is a string", l.labels)
	}
}

// TestFieldReaderLabelPath checks that a field inside the labels is left
// to fromObject.
func TestFieldReaderLabelPath(t *testing.T) {
	r := newFieldReader(map[string][]string{"app": {"metadata", "labels", "app"}})
	if _, ok := r.fromJSON([]byte(fieldReaderSeeds[0].json)); ok {
		t.Fatal("fromJSON read a field inside the labels")
	}
	if a := r.fromObject(api.Object{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}}); a.fields["app"] != "web" {
		t.Errorf("fromObject: %v", a.fields)
	}
}

func FuzzFieldReader(f *testing.F) {
	for _, s := range fieldReaderSeeds {
		f.Add([]byte(s.json))
	}
	r := newFieldReader(eventFields)
	f.Fuzz(func(t *testing.T, b []byte) { checkFieldReader(t, r, b) })
}
