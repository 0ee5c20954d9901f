package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protowire"
)

// protoThing is a thing that is also a protobuf message, as k8s.io/api's
// types are: name = 1, resourceVersion = 2, data = 3. Its kind and
// apiVersion are not in the message.
type protoThing struct {
	thing
	APIVersion string `json:"apiVersion,omitempty"`
}

func (p *protoThing) Size() int { return len(p.marshal()) }

func (p *protoThing) MarshalToSizedBuffer(b []byte) (int, error) {
	m := p.marshal()
	return copy(b[len(b)-len(m):], m), nil
}

// protoCmp compares protoThings.
var protoCmp = cmp.AllowUnexported(protoThing{})

func (p *protoThing) Unmarshal(b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return errors.New("bad protoThing")
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return errors.New("bad protoThing")
		}
		switch num {
		case 1:
			p.Metadata.Name = string(v)
		case 2:
			p.Metadata.ResourceVersion = string(v)
		case 3:
			p.Data = string(v)
		}
		b = b[n+m:]
	}
	return nil
}

func (p *protoThing) marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, p.Metadata.Name)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, p.Metadata.ResourceVersion)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendString(b, p.Data)
}

func appendField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// protoList is a list of items in Kubernetes' protobuf envelope, as
// kube-apiserver writes it.
func protoList(rv, cont string, items []*protoThing) []byte {
	meta := appendField(appendField(appendField(nil, 1, nil), 2, []byte(rv)), 3, []byte(cont))
	raw := appendField(nil, 1, meta)
	for _, it := range items {
		raw = appendField(raw, 2, it.marshal())
	}
	typeMeta := appendField(appendField(nil, 1, []byte("v1")), 2, []byte("ThingList"))
	b := appendField(append([]byte("k8s\x00"), nil...), 1, typeMeta)
	b = appendField(b, 2, raw)
	return appendField(appendField(b, 3, nil), 4, nil)
}

func protoThings(n, pad int) []*protoThing {
	items := make([]*protoThing, n)
	for i := range items {
		items[i] = &protoThing{thing: thing{Kind: "Thing", Metadata: thingMeta{Name: fmt.Sprintf("t%d", i), ResourceVersion: fmt.Sprint(i + 1)}, Data: strings.Repeat("d", pad)}, APIVersion: "v1"}
	}
	return items
}

// A Resource of a protobuf message type asks for protobuf lists and reads
// the server's answer in protobuf (items get the list's kind without
// "List" and its apiVersion) or JSON; other types ask for JSON.
func TestListNegotiatesProtobuf(t *testing.T) {
	items := protoThings(3, 10)
	f, c := newFakeServer(t, func(n int, call call) reply {
		if n == 0 {
			return reply{header: map[string]string{"Content-Type": mediaProtobuf}, body: string(protoList("7", "next", items))}
		}
		return reply{body: `{"metadata":{"resourceVersion":"8"},"items":[{"kind":"Thing","apiVersion":"v1","metadata":{"name":"t0","resourceVersion":"1"},"data":"dddddddddd"}]}`}
	})
	r := NewResource[*protoThing](c, things, "ns")
	got, rv, cont, err := r.List(context.Background(), ListOptions{})
	if err != nil || rv != "7" || cont != "next" {
		t.Fatalf("protobuf list: rv %q, continue %q, err %v", rv, cont, err)
	}
	if diff := cmp.Diff(items, got, protoCmp); diff != "" {
		t.Errorf("protobuf items (-want +got):\n%s", diff)
	}
	got, rv, _, err = r.List(context.Background(), ListOptions{})
	if err != nil || rv != "8" || len(got) != 1 || !cmp.Equal(items[0], got[0], protoCmp) {
		t.Fatalf("JSON answer: %v, rv %q, err %v", got, rv, err)
	}
	if _, _, _, err := NewResource[*thing](c, things, "ns").List(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	jsonOnly, err := New(&Config{Host: f.URL, DisableProtobuf: true})
	if err != nil {
		t.Fatal(err)
	}
	defer jsonOnly.Close()
	if _, _, _, err := NewResource[*protoThing](jsonOnly, things, "ns").List(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var accepts []string
	for _, call := range f.seen() {
		accepts = append(accepts, call.Accept)
	}
	want := []string{acceptProtobuf, acceptProtobuf, mediaJSON, mediaJSON}
	if diff := cmp.Diff(want, accepts); diff != "" {
		t.Errorf("Accept headers (-want +got):\n%s", diff)
	}
}

// A protobuf Status error (kube-apiserver answers a protobuf client so)
// is decoded: a 410 on a continue token is Expired, with its message.
func TestProtobufStatusError(t *testing.T) {
	details := appendField(appendField(nil, 1, []byte("t0")), 3, []byte("things"))
	status := appendField(appendField(appendField(appendField(nil, 2, []byte("Failure")), 3, []byte("the continue token expired")), 4, []byte("Expired")), 5, details)
	status = protowire.AppendVarint(protowire.AppendTag(status, 6, protowire.VarintType), 410)
	body := appendField(append([]byte("k8s\x00"), appendField(nil, 1, appendField(nil, 2, []byte("Status")))...), 2, status)
	_, c := newFakeServer(t, func(int, call) reply {
		return reply{code: http.StatusGone, header: map[string]string{"Content-Type": mediaProtobuf}, body: string(body)}
	})
	_, _, _, err := NewResource[*protoThing](c, things, "ns").List(context.Background(), ListOptions{Continue: "c"})
	if !IsExpired(err) || !strings.Contains(err.Error(), "the continue token expired") {
		t.Errorf("err = %v, want Expired with the Status's message", err)
	}
}

// decodeProtoList reads lists of one batch and of many, with items smaller
// and larger than a batch, in pieces of every size.
func TestDecodeProtoList(t *testing.T) {
	decode := protoDecoder[*protoThing]()
	for _, tc := range []struct {
		name   string
		n, pad int
	}{
		{"empty", 0, 0},
		{"one batch", 20, 100},
		{"many batches", 400, 1000},
		{"items larger than a batch", 3, itemBatchBytes + 1000},
	} {
		items := protoThings(tc.n, tc.pad)
		data := protoList("42", "c", items)
		readers := map[string]func() io.Reader{
			"whole":       func() io.Reader { return bytes.NewReader(data) },
			"byte a time": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			"EOF at last": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
		}
		for rname, r := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				var l list[*protoThing]
				if err := decodeProtoList(r(), decode, &l); err != nil {
					t.Fatal(err)
				}
				if l.Metadata.ResourceVersion != "42" || l.Metadata.Continue != "c" {
					t.Errorf("metadata %+v", l.Metadata)
				}
				if diff := cmp.Diff(items, l.Items, protoCmp, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// A protobuf list cut anywhere, or with an item that does not decode,
// fails with an error; a broken stream with its own.
func TestDecodeProtoListErrors(t *testing.T) {
	decode := protoDecoder[*protoThing]()
	data := protoList("42", "c", protoThings(200, 1000))
	for cut := 0; cut < len(data)-1; cut += len(data)/40 + 1 {
		var l list[*protoThing]
		if err := decodeProtoList(bytes.NewReader(data[:cut]), decode, &l); err == nil {
			t.Fatalf("no error for the list cut at %d of %d bytes", cut, len(data))
		}
	}
	bad := protoList("1", "", []*protoThing{{}, {}})
	bad = bytes.Replace(bad, []byte{0x12, 0x6, 0xa, 0x0, 0x12, 0x0, 0x1a, 0x0}, []byte{0x12, 0x6, 0x8, 0x1, 0x12, 0x0, 0x1a, 0x0}, 1)
	var l list[*protoThing]
	if err := decodeProtoList(bytes.NewReader(bad), decode, &l); err == nil || !strings.Contains(err.Error(), "item 0:") {
		t.Errorf("bad item: err = %v, want one naming item 0", err)
	}
	broken := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(data[:len(data)/2]), iotest.ErrReader(broken))
	if err := decodeProtoList(r, decode, &l); !errors.Is(err, broken) {
		t.Errorf("broken stream: err = %v, want %v", err, broken)
	}
	if err := decodeProtoList(strings.NewReader(`{"items":[]}`), decode, &l); !errors.Is(err, errMalformedProtobuf) {
		t.Errorf("JSON: err = %v, want %v", err, errMalformedProtobuf)
	}
}

// FuzzDecodeProtoList: decodeProtoList never panics, and what it decodes
// is what a whole-message reading of the same bytes finds.
func FuzzDecodeProtoList(f *testing.F) {
	f.Add(protoList("1", "c", protoThings(3, 5)))
	f.Add(protoList("", "", nil))
	f.Add([]byte("k8s\x00\x12\x00"))
	decode := protoDecoder[*protoThing]()
	f.Fuzz(func(t *testing.T, data []byte) {
		var l list[*protoThing]
		if err := decodeProtoList(bytes.NewReader(data), decode, &l); err != nil {
			return
		}
		body, _ := bytes.CutPrefix(data, protoMagic)
		raw, ok := protoField(body, unknownRaw)
		if !ok {
			t.Fatalf("decoded %d items from an envelope that does not parse", len(l.Items))
		}
		n := 0
		if !eachProtoField(raw, func(num protowire.Number, _ uint64, v []byte) {
			if num == listItems && v != nil {
				n++
			}
		}) {
			t.Fatal("decoded a list whose message does not parse")
		}
		if len(l.Items) != n {
			t.Fatalf("decoded %d items, the last message has %d", len(l.Items), n)
		}
	})
}
