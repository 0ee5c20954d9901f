package client

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/client/api"
)

// Kubernetes' own types (k8s.io/api, generated with gogo-protobuf) decode
// from protobuf several times faster than from JSON, and kube-apiserver
// (like listwatch) serves protobuf for them. So, as client-go does, a
// Resource whose T is such a type asks for protobuf lists and watches,
// taking JSON when the server answers with it (custom resources, servers
// without protobuf).
const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	// acceptProtobuf prefers protobuf and takes JSON.
	acceptProtobuf = mediaProtobuf + ", " + mediaJSON
)

// protoMagic starts Kubernetes' protobuf envelope (runtime.Unknown).
var protoMagic = []byte("k8s\x00")

// protoMessage is what gogo-protobuf generates for a message type, as
// k8s.io/api has for every kind.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer(data []byte) (int, error)
	Unmarshal(data []byte) error
}

// protoDecoder returns the function that decodes a protobuf message into a
// new T, or nil when T is not a pointer to a protobuf message type. A
// protobuf message has no kind and apiVersion; the function sets T's Kind
// and APIVersion fields (metav1.TypeMeta's), when it has them, to those it
// is given, as JSON objects carry them.
func protoDecoder[T any]() func(raw []byte, v *T, typ api.TypeMeta) error {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || !t.Implements(reflect.TypeFor[protoMessage]()) {
		return nil
	}
	elem := t.Elem()
	kind, okKind := elem.FieldByName("Kind")
	apiVersion, okVersion := elem.FieldByName("APIVersion")
	setType := okKind && okVersion && kind.Type.Kind() == reflect.String && apiVersion.Type.Kind() == reflect.String
	return func(raw []byte, v *T, typ api.TypeMeta) error {
		obj := reflect.New(elem)
		if err := obj.Interface().(protoMessage).Unmarshal(raw); err != nil {
			return err
		}
		if setType {
			obj.Elem().FieldByIndex(kind.Index).SetString(typ.Kind)
			obj.Elem().FieldByIndex(apiVersion.Index).SetString(typ.APIVersion)
		}
		*v = obj.Interface().(T)
		return nil
	}
}

// isProtobuf reports whether a response's Content-Type is protobuf.
func isProtobuf(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == mediaProtobuf
}

// Fields of the messages a protobuf list is made of.
const (
	unknownTypeMeta = 1 // runtime.Unknown.typeMeta: apiVersion = 1, kind = 2
	unknownRaw      = 2 // runtime.Unknown.raw: the message itself
	listMetadata    = 1 // a List's metadata (ListMeta)
	listItems       = 2 // a List's items
	listMetaRV      = 2 // ListMeta.resourceVersion
	listMetaCont    = 3 // ListMeta.continue
	maxProtoMessage = 1 << 30
)

// decodeProtoList decodes a list in Kubernetes' protobuf envelope as it is
// read, handing each item's message to the item decoders.
func decodeProtoList[T any](r io.Reader, decodeItem func([]byte, *T, api.TypeMeta) error, l *list[T]) error {
	pr := &protoReader{r: bufio.NewReaderSize(r, itemBatchBytes)}
	magic := make([]byte, len(protoMagic))
	if _, err := io.ReadFull(pr.r, magic); err != nil || !bytes.Equal(magic, protoMagic) {
		return fmt.Errorf("not Kubernetes' protobuf envelope (%q): %w", magic, errors.Join(err, errMalformedProtobuf))
	}
	seen := false
	var itemType api.TypeMeta // the list's kind without "List"
	for {
		num, n, err := pr.lengthField(unknownTypeMeta, unknownRaw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if num == 0 {
			continue
		}
		if num == unknownTypeMeta {
			b, err := pr.bytes(nil, n)
			if err != nil {
				return err
			}
			if itemType, err = decodeProtoListType(b); err != nil {
				return err
			}
			continue
		}
		decode := func(raw []byte, v *T) error { return decodeItem(raw, v, itemType) }
		if err := decodeProtoListBody(pr, pr.read+n, decode, l); err != nil {
			return err
		}
		seen = true
	}
	if !seen {
		return fmt.Errorf("protobuf envelope without a message: %w", errMalformedProtobuf)
	}
	return nil
}

// errMalformedProtobuf is wrapped by the errors of a protobuf list that
// does not parse.
var errMalformedProtobuf = errors.New("malformed protobuf")

// decodeProtoListBody decodes a List message that ends at offset end.
func decodeProtoListBody[T any](pr *protoReader, end int64, decodeItem func([]byte, *T) error, l *list[T]) error {
	l.Items = []T{}
	d := newListDecoder(&l.Items, decodeItem)
	defer d.stop()
	var item []byte
	for pr.read < end {
		num, n, err := pr.lengthField(listMetadata, listItems)
		if err != nil {
			return noEOF(err)
		}
		if num == 0 {
			continue
		}
		if item, err = pr.bytes(item[:0], n); err != nil {
			return err
		}
		if num == listMetadata {
			if err = decodeProtoListMeta(item, &l.Metadata); err == nil && l.OnMetadata != nil {
				l.OnMetadata(l.Metadata)
			}
		} else {
			err = d.add(item)
		}
		if err != nil {
			return err
		}
	}
	if pr.read != end {
		return fmt.Errorf("a field overruns the list's message: %w", errMalformedProtobuf)
	}
	return d.flush()
}

// decodeProtoListType returns the kind and apiVersion of a list's items:
// its TypeMeta's, without "List".
func decodeProtoListType(b []byte) (api.TypeMeta, error) {
	tm, err := decodeProtoTypeMeta(b)
	tm.Kind = strings.TrimSuffix(tm.Kind, "List")
	return tm, err
}

// decodeProtoTypeMeta decodes the TypeMeta of an envelope.
func decodeProtoTypeMeta(b []byte) (api.TypeMeta, error) {
	var tm api.TypeMeta
	ok := eachProtoField(b, func(num protowire.Number, _ uint64, v []byte) {
		switch num {
		case 1:
			tm.APIVersion = string(v)
		case 2:
			tm.Kind = string(v)
		}
	})
	if !ok {
		return tm, fmt.Errorf("type of the object: %w", errMalformedProtobuf)
	}
	return tm, nil
}

// protoEvents returns the codec of the protobuf watch events of body:
// frames of a 4-byte big-endian length and a WatchEvent message (type = 1,
// object = 2, a RawExtension whose raw = 1 is an enveloped object).
func protoEvents[T any](body io.Reader, decode func([]byte, *T, api.TypeMeta) error) eventCodec[T] {
	var frame []byte // reused: what split returns is copied by its caller
	split := func() ([]byte, error) {
		var size [4]byte
		if _, err := io.ReadFull(body, size[:]); err != nil {
			return nil, err // io.EOF: the stream ended between events
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > maxProtoMessage {
			return nil, fmt.Errorf("watch event of %d bytes: %w", n, errMalformedProtobuf)
		}
		var err error
		frame, _, err = readN(body, frame[:0], int64(n))
		return frame, err
	}
	return eventCodec[T]{split: split, decode: func(raw []byte, ev *Event[T]) (err error) {
		*ev, err = decodeProtoEvent(raw, decode)
		return err
	}}
}

// decodeProtoEvent decodes one WatchEvent message.
func decodeProtoEvent[T any](frame []byte, decode func([]byte, *T, api.TypeMeta) error) (Event[T], error) {
	var typ EventType
	var object []byte // the enveloped object
	ok := eachProtoField(frame, func(num protowire.Number, _ uint64, v []byte) {
		switch {
		case num == 1 && v != nil:
			typ = EventType(v)
		case num == 2 && v != nil:
			object, _ = protoField(v, 1)
		}
	})
	if !ok {
		return Event[T]{}, fmt.Errorf("watch event: %w", errMalformedProtobuf)
	}
	body, ok := bytes.CutPrefix(object, protoMagic)
	if !ok {
		return Event[T]{}, fmt.Errorf("watch event %q has no object", typ)
	}
	switch typ {
	case Added, Modified, Deleted, Bookmark:
	case Error:
		st, ok := decodeProtoStatus(object)
		if !ok || st.Code == 0 && st.Status == "" {
			return Event[T]{}, fmt.Errorf("watch ERROR event with an object that is not a Status: %w", errMalformedProtobuf)
		}
		return Event[T]{Type: Error, Err: &api.StatusError{Status: st}}, nil
	default:
		return Event[T]{}, fmt.Errorf("unknown watch event type %q", typ)
	}
	typeMeta, _ := protoField(body, unknownTypeMeta)
	tm, err := decodeProtoTypeMeta(typeMeta)
	if err != nil {
		return Event[T]{}, err
	}
	msg, _ := protoField(body, unknownRaw)
	ev := Event[T]{Type: typ}
	if err := decode(msg, &ev.Object, tm); err != nil {
		return Event[T]{}, fmt.Errorf("decoding %T: %w", ev.Object, err)
	}
	if typ == Bookmark {
		ev.InitialEventsEnd = protoAnnotation(msg, api.InitialEventsEndAnnotation) == "true"
	}
	return ev, nil
}

// protoAnnotation returns the annotation key of a Kubernetes object's
// message: metadata = 1, its annotations = 12 (entries: key = 1, value = 2).
func protoAnnotation(msg []byte, key string) string {
	meta, _ := protoField(msg, 1)
	var value string
	eachProtoField(meta, func(num protowire.Number, _ uint64, entry []byte) {
		if num != 12 || entry == nil {
			return
		}
		if k, _ := protoField(entry, 1); string(k) == key {
			v, _ := protoField(entry, 2)
			value = string(v)
		}
	})
	return value
}

// decodeProtoListMeta reads the resourceVersion and continue token of a
// ListMeta message.
func decodeProtoListMeta(b []byte, m *api.ListMeta) error {
	ok := eachProtoField(b, func(num protowire.Number, _ uint64, v []byte) {
		switch num {
		case listMetaRV:
			m.ResourceVersion = string(v)
		case listMetaCont:
			m.Continue = string(v)
		}
	})
	if !ok {
		return fmt.Errorf("list metadata: %w", errMalformedProtobuf)
	}
	return nil
}

// protoReader reads protobuf fields from a stream, counting the bytes read.
type protoReader struct {
	r    *bufio.Reader
	read int64
}

// readByte reads one byte.
func (p *protoReader) readByte() (byte, error) {
	c, err := p.r.ReadByte()
	if err == nil {
		p.read++
	}
	return c, err
}

// varint reads a varint; io.EOF only when the stream ended before it.
func (p *protoReader) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		c, err := p.readByte()
		if err != nil {
			if shift > 0 {
				return 0, noEOF(err)
			}
			return 0, err
		}
		if shift == 63 && c > 1 {
			break // more than 64 bits
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("varint overflows 64 bits: %w", errMalformedProtobuf)
}

// tag reads a field's tag; io.EOF when the stream ended before it.
func (p *protoReader) tag() (protowire.Number, protowire.Type, error) {
	v, err := p.varint()
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber {
		return 0, 0, fmt.Errorf("field number %d: %w", num, errMalformedProtobuf)
	}
	return num, typ, nil
}

// lengthField reads the next field: if it is a length-delimited one
// numbered a or b, it returns its number and length, leaving its value to
// read; it skips any other and returns 0. io.EOF: the stream ended before
// the field.
func (p *protoReader) lengthField(a, b protowire.Number) (protowire.Number, int64, error) {
	num, typ, err := p.tag()
	if err != nil {
		return 0, 0, err
	}
	if typ != protowire.BytesType || num != a && num != b {
		return 0, 0, p.skip(typ)
	}
	n, err := p.length()
	return num, n, err
}

// length reads the length of a length-delimited field.
func (p *protoReader) length() (int64, error) {
	n, err := p.varint()
	if err != nil {
		return 0, noEOF(err)
	}
	if n > maxProtoMessage {
		return 0, fmt.Errorf("a field of %d bytes: %w", n, errMalformedProtobuf)
	}
	return int64(n), nil
}

// bytes appends the next n bytes to b.
func (p *protoReader) bytes(b []byte, n int64) ([]byte, error) {
	b, m, err := readN(p.r, b, n)
	p.read += m
	return b, err
}

// readN appends the next n bytes of r to b, growing b as they arrive
// rather than by n at once: n comes from the stream, which may end (or
// lie) long before n bytes. A stream that ends first is
// io.ErrUnexpectedEOF.
func readN(r io.Reader, b []byte, n int64) ([]byte, int64, error) {
	var read int64
	for read < n {
		start := len(b)
		chunk := int(min(n-read, max(int64(cap(b)-start), itemBatchBytes)))
		b = slices.Grow(b, chunk)[:start+chunk]
		m, err := io.ReadFull(r, b[start:])
		b, read = b[:start+m], read+int64(m)
		if err != nil {
			return b, read, noEOF(err)
		}
	}
	return b, read, nil
}

// skip reads past the value of a field of type typ.
func (p *protoReader) skip(typ protowire.Type) error {
	var n int64
	switch typ {
	case protowire.VarintType:
		_, err := p.varint()
		return noEOF(err)
	case protowire.Fixed32Type:
		n = 4
	case protowire.Fixed64Type:
		n = 8
	case protowire.BytesType:
		var err error
		if n, err = p.length(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("field of wire type %d: %w", typ, errMalformedProtobuf)
	}
	m, err := p.r.Discard(int(n))
	p.read += int64(m)
	return noEOF(err)
}

// noEOF turns the end of the stream inside a message into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeProtoStatus decodes a Status in Kubernetes' protobuf envelope, as
// kube-apiserver answers a client that accepts protobuf with an error.
func decodeProtoStatus(data []byte) (api.Status, bool) {
	var st api.Status
	body, ok := bytes.CutPrefix(data, protoMagic)
	if !ok {
		return st, false
	}
	raw, ok := protoField(body, unknownRaw)
	if !ok {
		return st, false
	}
	// Status: status = 2, message = 3, reason = 4, details = 5, code = 6;
	// StatusDetails: name = 1, group = 2, kind = 3, retryAfterSeconds = 5.
	st.TypeMeta = api.TypeMeta{Kind: "Status", APIVersion: "v1"}
	ok = eachProtoField(raw, func(num protowire.Number, v uint64, b []byte) {
		switch num {
		case 2:
			st.Status = string(b)
		case 3:
			st.Message = string(b)
		case 4:
			st.Reason = api.StatusReason(b)
		case 5:
			d := &api.StatusDetails{}
			eachProtoField(b, func(num protowire.Number, v uint64, b []byte) {
				switch num {
				case 1:
					d.Name = string(b)
				case 2:
					d.Group = string(b)
				case 3:
					d.Kind = string(b)
				case 5:
					d.RetryAfterSeconds = int32(v)
				}
			})
			st.Details = d
		case 6:
			st.Code = int32(v)
		}
	})
	return st, ok
}

// protoField returns the last value of the length-delimited field num of
// the message b.
func protoField(b []byte, want protowire.Number) (value []byte, found bool) {
	ok := eachProtoField(b, func(num protowire.Number, _ uint64, v []byte) {
		if num == want && v != nil {
			value, found = v, true
		}
	})
	return value, ok && found
}

// eachProtoField calls f with each field of the message b: a varint's
// value (with nil bytes), or a length-delimited field's bytes (never nil).
// It reports whether b parsed.
func eachProtoField(b []byte, f func(num protowire.Number, v uint64, bytes []byte)) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			f(num, v, nil)
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			if v == nil {
				v = []byte{} // empty, not a varint
			}
			f(num, 0, v)
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
		}
	}
	return true
}
