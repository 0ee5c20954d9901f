package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

type listItem struct {
	Name string `json:"name"`
}

// decodeList reads what json.Unmarshal of a list reads, item by item.
func TestDecodeList(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		wantErr  bool
	}{
		{name: "items", in: `{"kind":"XList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c"},"items":[{"name":"a"},{"name":"b"}]}` + "\n"},
		{name: "null items, members in any order", in: `{"items":null,"extra":{"x":[1,2]},"metadata":{"resourceVersion":"7"}}`},
		{name: "empty", in: `{"metadata":{},"items":[]}`},
		{name: "names in another case", in: `{"Metadata":{"ResourceVersion":"7"},"ITEMS":[{"NAME":"a"}]}`},
		{name: "items twice: the last wins", in: `{"items":[{"name":"a"}],"items":[{"name":"b"}]}`},
		{name: "items not an array", in: `{"items":{}}`, wantErr: true},
		{name: "truncated", in: `{"items":[{"name":"a"}`, wantErr: true},
		{name: "not an object", in: `[]`, wantErr: true},
		{name: "item of another type", in: `{"items":[{"name":1}]}`, wantErr: true},
		{name: "bad syntax inside an item", in: `{"items":[{"name":"a"},{"name" "b"}]}`, wantErr: true},
		{name: "empty input", in: ``, wantErr: true},
		{name: "escaped names, strings with braces", in: `{"it\u0065ms":[{"name":"a}]\"{"}],"x":"]"}`},
		{name: "no comma between members", in: `{"metadata":{} "items":[]}`, wantErr: true},
		{name: "no comma between items", in: `{"items":[{"name":"a"} {"name":"b"}]}`, wantErr: true},
		{name: "trailing comma", in: `{"items":[{"name":"a"},]}`, wantErr: true},
		{name: "trailing comma in the list", in: `{"items":[],}`, wantErr: true},
		{name: "no colon", in: `{"items" []}`, wantErr: true},
		{name: "control character in a name", in: "{\"it\x01\":1,\"items\":[]}", wantErr: true},
		{name: "invalid member skipped", in: `{"extra":[1,,2],"items":[]}`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got list[listItem]
			err := decodeList(newJSONReader(strings.NewReader(tc.in)), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			var want list[listItem]
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-json.Unmarshal +decodeList):\n%s", diff)
			}
		})
	}
}

// compatItem has what decoding must treat as encoding/json does: methods
// on value and pointer receivers (as resource.Quantity, metav1.Time and
// IntOrString have), an inlined embedded struct, ",string", []byte as
// base64, any, and case-insensitive names.
type compatItem struct {
	CompatMeta `json:",inline"`
	Size       quantity          `json:"size"`
	Limit      *quantity         `json:"limit,omitempty"`
	Created    stamp             `json:"created"`
	Deleted    *stamp            `json:"deleted,omitempty"`
	Port       int64             `json:"port,string"`
	Blob       []byte            `json:"blob"`
	Any        any               `json:"any"`
	Data       map[string]string `json:"data"`
	Tags       []string          `json:"tags"`
}

type CompatMeta struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// quantity decodes "1Ki" or a number into a count, with a method on its
// pointer.
type quantity struct{ N int64 }

func (q *quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return json.Unmarshal(b, &q.N)
	}
	n, ok := strings.CutSuffix(s, "Ki")
	if !ok {
		return fmt.Errorf("quantity %q", s)
	}
	_, err := fmt.Sscan(n, &q.N)
	q.N *= 1024
	return err
}

// stamp is a time in RFC 3339 seconds, as metav1.Time; null leaves it zero.
type stamp struct{ time.Time }

func (s *stamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		s.Time = time.Time{}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, str)
	s.Time = t
	return err
}

// compatList is a list of n compatItems, each with pad bytes of data, in
// the shapes encoding/json accepts.
func compatList(n, pad int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"CompatList","metadata":{"resourceVersion":"42","continue":"next"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",\n ")
		}
		fmt.Fprintf(&b, `{"kind":"Compat","NAME":"item-%d","size":"%dKi","limit":%d,"created":"2026-11-22T08:%02d:00Z","deleted":null,`+
			`"port":"%d","blob":"aGVsbG8=","any":{"n":%d,"f":[1.5,true,null,"s"]},"Data":{"k":"%s","é":"\u00e9\ud83d\ude00"},"tags":["a","b"],"unknown":{"x":[{}]}}`,
			i, i, i*2, i%60, 8000+i, i, strings.Repeat("x", pad))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestDecodeListCompat decodes lists small enough for one batch and large
// enough for many, with items smaller and larger than a batch, read in
// pieces of every size, and compares with json.Unmarshal.
func TestDecodeListCompat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n, pad int
	}{
		{"one batch", 20, 100},
		{"many batches", 300, 1000},
		{"items larger than a batch", 3, itemBatchBytes + 1000},
	} {
		data := compatList(tc.n, tc.pad)
		var want list[*compatItem]
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		readers := map[string]func() io.Reader{
			"whole":       func() io.Reader { return bytes.NewReader(data) },
			"byte a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			"half reads":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
			"EOF at last": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
		}
		for rname, r := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				var got list[*compatItem]
				if err := decodeList(newJSONReader(r()), &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Items) != tc.n {
					t.Fatalf("%d items, want %d", len(got.Items), tc.n)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-json.Unmarshal +decodeList):\n%s", diff)
				}
			})
		}
	}
}

// TestDecodeListErrors: a list cut anywhere, or with a bad item in any
// batch, fails with an error naming the item; a broken stream fails with
// its own error.
func TestDecodeListErrors(t *testing.T) {
	data := compatList(200, 1000)
	for cut := 0; cut < len(data)-1; cut += len(data)/40 + 1 {
		var l list[*compatItem]
		if err := decodeList(newJSONReader(bytes.NewReader(data[:cut])), &l); err == nil {
			t.Fatalf("no error for the list cut at %d of %d bytes", cut, len(data))
		}
	}
	for _, bad := range []int{0, 1, 150, 199} {
		in := bytes.Replace(data, fmt.Appendf(nil, `"port":"%d"`, 8000+bad), []byte(`"port":"eighty"`), 1)
		var l list[*compatItem]
		err := decodeList(newJSONReader(bytes.NewReader(in)), &l)
		if want := fmt.Sprintf("item %d:", bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad item %d: err = %v, want one with %q", bad, err, want)
		}
	}
	broken := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(data[:len(data)/2]), iotest.ErrReader(broken))
	var l list[*compatItem]
	if err := decodeList(newJSONReader(r), &l); !errors.Is(err, broken) {
		t.Errorf("broken stream: err = %v, want %v", err, broken)
	}
}

// FuzzDecodeList: decodeList never panics, and decodes what json.Unmarshal
// decodes, failing where it fails.
func FuzzDecodeList(f *testing.F) {
	f.Add(compatList(3, 10))
	f.Add([]byte(`{"items":[{"name":"a","port":"1"}],"metadata":{"resourceVersion":"1"}}`))
	f.Add([]byte(`{"items":null}`))
	f.Add([]byte(`{"Items":[{"size":1,"created":null,"any":[1,{"a":null}]}],"items":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got list[*compatItem]
		dec := newJSONReader(bytes.NewReader(data))
		err := decodeList(dec, &got)
		if err == nil {
			if dec.end() != nil {
				return // json.Unmarshal refuses what follows the list; decodeList does not read it
			}
		}
		var want list[*compatItem]
		wantErr := json.Unmarshal(data, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeList: %v; json.Unmarshal: %v", err, wantErr)
		}
		if err == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-json.Unmarshal +decodeList):\n%s", diff)
			}
		}
		// Read a byte at a time, every value is cut everywhere.
		var cut list[*compatItem]
		cutErr := decodeList(newJSONReader(iotest.OneByteReader(bytes.NewReader(data))), &cut)
		if (cutErr == nil) != (err == nil) {
			t.Fatalf("a byte at a time: %v; at once: %v", cutErr, err)
		}
		if err == nil {
			if diff := cmp.Diff(got, cut); diff != "" {
				t.Fatalf("(-at once +a byte at a time):\n%s", diff)
			}
		}
	})
}

// ambiguousItem is a type whose definition encoding/json resolves
// leniently: a name that matches several fields but for case is decoded
// into the first declared field (the exact match otherwise), where
// encoding/json/v2 would refuse it.
type ambiguousItem struct {
	Foo string `json:"foo"`
	FOO string `json:"FOO"`
	N   int    `json:"n"`
}

func TestDecodeListLegacyLeniency(t *testing.T) {
	in := `{"items":[{"fOO":"y","n":1},{"foo":"a","FOO":"b","n":2}]}`
	var want, got list[ambiguousItem]
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := decodeList(newJSONReader(strings.NewReader(in)), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-json.Unmarshal +decodeList):\n%s", diff)
	}
}
