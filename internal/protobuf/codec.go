package protobuf

import (
	"bytes"
	"fmt"
)

// ContentType is the media type of protobuf-encoded Kubernetes objects.
const ContentType = "application/vnd.kubernetes.protobuf"

// WatchContentType is the media type of a protobuf watch stream.
const WatchContentType = ContentType + ";stream=watch"

// magic starts every enveloped object.
var magic = []byte("k8s\x00")

// Encode returns the protobuf envelope of obj, a JSON object whose
// apiVersion and kind Supports: the bytes k8s.io/apimachinery's protobuf
// serializer writes for the same object. It fails with ErrUnsupported for
// other kinds and ErrInvalid when obj does not fit its type, including when
// it has a field the type lacks.
func Encode(obj map[string]any) ([]byte, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	m := lookup(apiVersion, kind)
	if m == nil {
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q", ErrUnsupported, apiVersion, kind)
	}
	raw, err := encodeMessage(nil, m, obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w: %w", apiVersion, kind, ErrInvalid, err)
	}
	return wrap(apiVersion, kind, raw), nil
}

// wrap wraps a raw message in the runtime.Unknown envelope.
func wrap(apiVersion, kind string, raw []byte) []byte {
	typeMeta := appendString(appendString(nil, 1, apiVersion), 2, kind)
	b := make([]byte, 0, len(magic)+len(typeMeta)+len(raw)+16)
	b = appendBytes(append(b, magic...), 1, typeMeta)
	b = appendBytes(b, 2, raw)
	// contentEncoding and contentType: empty, and written anyway.
	return appendString(appendString(b, 3, ""), 4, "")
}

// EncodeList returns the envelope of a list of kind listKind (a List that
// Supports) whose items are enveloped objects as Encode returns them: each
// item's message is copied in, not decoded and encoded again, so a server
// that keeps its objects encoded lists them at the cost of a copy. The bytes
// are those Encode gives for the same list.
func EncodeList(apiVersion, listKind, resourceVersion, continueToken string, items [][]byte) ([]byte, error) {
	if lookup(apiVersion, listKind) == nil {
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q", ErrUnsupported, apiVersion, listKind)
	}
	// ListMeta's strings are written even when empty, as gogo-protobuf does.
	meta := appendString(appendString(appendString(nil, 1, ""), 2, resourceVersion), 3, continueToken)
	size := len(meta) + 8
	raws := make([][]byte, len(items))
	for i, item := range items {
		_, _, raw, err := open(item)
		if err != nil {
			return nil, fmt.Errorf("list item %d: %w", i, err)
		}
		raws[i] = raw
		size += len(raw) + 8
	}
	b := appendBytes(make([]byte, 0, size), 1, meta)
	for _, raw := range raws {
		b = appendBytes(b, 2, raw)
	}
	return wrap(apiVersion, listKind, b), nil
}

// Decode returns the JSON form of the enveloped object in data, with
// apiVersion and kind from the envelope, as encoding/json would decode the
// JSON k8s.io/api writes for it: numbers are float64, bytes base64 strings,
// times RFC 3339 strings, and a field omitempty leaves out is absent.
func Decode(data []byte) (map[string]any, error) {
	apiVersion, kind, raw, err := open(data)
	if err != nil {
		return nil, err
	}
	m := lookup(apiVersion, kind)
	if m == nil {
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q", ErrUnsupported, apiVersion, kind)
	}
	obj, err := decodeMessage(m, raw, 1)
	if err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", apiVersion, kind, err)
	}
	obj["apiVersion"], obj["kind"] = apiVersion, kind
	return obj, nil
}

// Kind returns the apiVersion and kind of the enveloped object in data,
// without decoding it, so that a body of the wrong kind is refused before
// it costs its decoding.
func Kind(data []byte) (apiVersion, kind string, err error) {
	apiVersion, kind, _, err = open(data)
	return apiVersion, kind, err
}

// open returns the type and raw bytes of the runtime.Unknown envelope in
// data. It rejects a content encoding or type, which Kubernetes never sets.
func open(data []byte) (apiVersion, kind string, raw []byte, err error) {
	body, ok := bytes.CutPrefix(data, magic)
	if !ok {
		return "", "", nil, ErrNotProtobuf
	}
	rs, err := split(unknownMsg, body)
	if err != nil {
		return "", "", nil, err
	}
	if enc, typ := last(rs[2]).data, last(rs[3]).data; len(enc) > 0 || len(typ) > 0 {
		return "", "", nil, fmt.Errorf("%w: envelope content encoding %q, type %q", ErrMalformed, enc, typ)
	}
	tm, err := split(typeMetaMsg, concat(rs[0]))
	if err != nil {
		return "", "", nil, err
	}
	return string(last(tm[0]).data), string(last(tm[1]).data), last(rs[1]).data, nil
}
