package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/client/api"
)

// protoThing is a thing that is also a protobuf message laid out as
// k8s.io/api's kinds are: metadata = 1 (name = 1, resourceVersion = 6,
// annotations = 12), data = 2. Its kind and apiVersion are not in the
// message.
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
	ok := eachProtoField(b, func(num protowire.Number, _ uint64, v []byte) {
		switch num {
		case 1:
			eachProtoField(v, func(num protowire.Number, _ uint64, v []byte) {
				switch num {
				case 1:
					p.Metadata.Name = string(v)
				case 6:
					p.Metadata.ResourceVersion = string(v)
				}
			})
		case 2:
			p.Data = string(v)
		}
	})
	if !ok {
		return errors.New("bad protoThing")
	}
	return nil
}

func (p *protoThing) marshal() []byte {
	meta := appendField(appendField(nil, 1, []byte(p.Metadata.Name)), 6, []byte(p.Metadata.ResourceVersion))
	return appendField(appendField(nil, 1, meta), 2, []byte(p.Data))
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
	return envelope("v1", "ThingList", raw)
}

// envelope wraps a message in Kubernetes' protobuf envelope.
func envelope(apiVersion, kind string, msg []byte) []byte {
	typeMeta := appendField(appendField(nil, 1, []byte(apiVersion)), 2, []byte(kind))
	b := appendField([]byte("k8s\x00"), 1, typeMeta)
	b = appendField(b, 2, msg)
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
	body := envelope("v1", "Status", status)
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
	bad := protoList("1", "", []*protoThing{{thing: thing{Data: "a"}}, {thing: thing{Data: "b"}}})
	bad = bytes.Replace(bad, []byte{0x12, 0x1, 'b'}, []byte{0x12, 0x7, 'b'}, 1) // a field longer than the item
	var l list[*protoThing]
	if err := decodeProtoList(bytes.NewReader(bad), decode, &l); err == nil || !strings.Contains(err.Error(), "item 1:") {
		t.Errorf("bad item: err = %v, want one naming item 1", err)
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

// protoFrame is one frame of a protobuf watch stream.
func protoFrame(typ string, object []byte) []byte {
	ev := appendField(appendField(nil, 1, []byte(typ)), 2, appendField(nil, 1, object))
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// protoStream is a protobuf watch stream with every kind of event, and
// the events it decodes to.
func protoStream() ([]byte, []Event[*protoThing]) {
	a1, a2 := protoThings(1, 5)[0], protoThings(1, 6)[0]
	a2.Metadata.ResourceVersion = "2"
	bookmarkMeta := appendField(appendField(nil, 6, []byte("3")), 12, appendField(appendField(nil, 1, []byte("k8s.io/initial-events-end")), 2, []byte("true")))
	status := appendField(appendField(appendField(nil, 2, []byte("Failure")), 4, []byte("Expired")), 3, []byte("too old"))
	status = protowire.AppendVarint(protowire.AppendTag(status, 6, protowire.VarintType), 410)
	var b []byte
	b = append(b, protoFrame("ADDED", envelope("v1", "Thing", a1.marshal()))...)
	b = append(b, protoFrame("MODIFIED", envelope("v1", "Thing", a2.marshal()))...)
	b = append(b, protoFrame("BOOKMARK", envelope("v1", "Thing", appendField(nil, 1, bookmarkMeta)))...)
	b = append(b, protoFrame("DELETED", envelope("v1", "Thing", a2.marshal()))...)
	b = append(b, protoFrame("ERROR", envelope("v1", "Status", status))...)
	want := []Event[*protoThing]{
		{Type: Added, Object: a1},
		{Type: Modified, Object: a2},
		{Type: Bookmark, Object: &protoThing{thing: thing{Kind: "Thing", Metadata: thingMeta{ResourceVersion: "3"}}, APIVersion: "v1"}, InitialEventsEnd: true},
		{Type: Deleted, Object: a2},
		{Type: Error, Err: &api.StatusError{Status: api.Status{TypeMeta: api.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: "Failure", Message: "too old", Reason: api.StatusReasonExpired, Code: 410}}},
	}
	return b, want
}

// A Resource of a protobuf message type watches in protobuf when the
// server answers so, and in JSON when it does not.
func TestWatchProtobuf(t *testing.T) {
	stream, want := protoStream()
	f, c := newFakeServer(t, func(n int, _ call) reply {
		if n == 0 {
			return reply{header: map[string]string{"Content-Type": mediaProtobuf + ";stream=watch"}, body: string(stream)}
		}
		return reply{body: `{"type":"ADDED","object":{"kind":"Thing","apiVersion":"v1","metadata":{"name":"t0","resourceVersion":"1"},"data":"ddddd"}}`}
	})
	r := NewResource[*protoThing](c, things, "ns")
	w, err := r.Watch(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(w)
	if !IsExpired(err) {
		t.Errorf("Err() = %v, want the ERROR event's Expired", err)
	}
	if diff := cmp.Diff(want, got, protoCmp, cmp.Comparer(func(a, b error) bool { return a == nil && b == nil || a != nil && b != nil && a.Error() == b.Error() })); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	w, err = r.Watch(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = collect(w)
	if err != nil || len(got) != 1 || !cmp.Equal(want[0].Object, got[0].Object, protoCmp) {
		t.Errorf("JSON watch: %v, %v", got, err)
	}
	if calls := f.seen(); calls[0].Accept != acceptProtobuf || calls[1].Accept != acceptProtobuf {
		t.Errorf("Accept headers %q, %q", calls[0].Accept, calls[1].Accept)
	}
}

// A protobuf watch stream cut inside a frame, or with a frame that does not
// parse, ends with an error after the events before it.
func TestWatchProtobufEnds(t *testing.T) {
	stream, _ := protoStream()
	first := int(binary.BigEndian.Uint32(stream)) + 4
	decode := protoDecoder[*protoThing]()
	for _, tc := range []struct {
		name    string
		body    []byte
		events  int
		wantErr error
	}{
		{"clean end between events", stream[:first], 1, nil},
		{"cut in a length", stream[:first+2], 1, io.ErrUnexpectedEOF},
		{"cut in a frame", stream[:first+10], 1, io.ErrUnexpectedEOF},
		{"garbage frame", append(stream[:first:first], 0, 0, 0, 2, 0xff, 0xff), 1, errMalformedProtobuf},
		{"no object", append(stream[:first:first], protoFrame("ADDED", nil)...), 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := protoEvents(bytes.NewReader(tc.body), decode).next
			n := 0
			var err error
			for ; ; n++ {
				if _, err = next(); err != nil {
					break
				}
			}
			if n != tc.events {
				t.Errorf("%d events, want %d", n, tc.events)
			}
			switch {
			case tc.name == "clean end between events" && err != io.EOF,
				tc.wantErr != nil && !errors.Is(err, tc.wantErr),
				tc.name == "no object" && (err == nil || !strings.Contains(err.Error(), "has no object")):
				t.Errorf("err = %v", err)
			}
		})
	}
}

// FuzzProtoWatch: reading a protobuf watch stream never panics, and ends
// with an error.
func FuzzProtoWatch(f *testing.F) {
	stream, _ := protoStream()
	f.Add(stream)
	f.Add([]byte{0, 0, 0, 0})
	decode := protoDecoder[*protoThing]()
	f.Fuzz(func(t *testing.T, data []byte) {
		next := protoEvents(bytes.NewReader(data), decode).next
		for range len(data) + 1 {
			if _, err := next(); err != nil {
				return
			}
		}
		t.Fatal("more events than bytes")
	})
}

// A length that the stream does not back (a broken or hostile server) is
// not allocated ahead of the bytes that arrive: a list's field or a watch
// event's frame of 1 GiB cut after a few bytes fails without taking 1 GiB.
func TestProtobufLengthNotAllocatedAhead(t *testing.T) {
	decode := protoDecoder[*protoThing]()
	huge := protowire.AppendVarint(protowire.AppendTag(nil, listItems, protowire.BytesType), maxProtoMessage-10)
	body := protowire.AppendVarint(protowire.AppendTag([]byte("k8s\x00"), unknownRaw, protowire.BytesType), maxProtoMessage)
	cut := append(append(body, huge...), "only a few bytes"...)
	frame := append(binary.BigEndian.AppendUint32(nil, maxProtoMessage), "only a few bytes"...)
	for name, read := range map[string]func() error{
		"list": func() error {
			var l list[*protoThing]
			return decodeProtoList(bytes.NewReader(cut), decode, &l)
		},
		"watch": func() error {
			_, err := protoEvents(bytes.NewReader(frame), decode).next()
			return err
		},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := read()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: err = %v, want %v", name, err, io.ErrUnexpectedEOF)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: %d MiB allocated for a few bytes", name, n>>20)
		}
	}
}
