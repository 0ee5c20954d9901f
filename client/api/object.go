package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Object is any Kubernetes object as the JSON decoder sees it: a map from
// field names to values (string, float64 or json.Number, bool, nil,
// []any, map[string]any). Accessors read the well-known fields; a missing or
// mistyped field reads as its zero value.
type Object map[string]any

// ParseObject decodes one JSON object, keeping numbers as json.Number so
// integers survive unchanged.
func ParseObject(data []byte) (Object, error) {
	if o, ok := parseObject(data); ok {
		return o, nil
	}
	var o Object
	if err := unmarshalNumbers(data, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

func (o Object) str(key string) string {
	s, _ := o[key].(string)
	return s
}

// APIVersion returns the object's apiVersion.
func (o Object) APIVersion() string { return o.str("apiVersion") }

// Kind returns the object's kind.
func (o Object) Kind() string { return o.str("kind") }

// Metadata returns the metadata map, or nil if absent or not an object.
func (o Object) Metadata() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	return m
}

// EnsureMetadata returns the metadata map, creating it if absent or mistyped.
func (o Object) EnsureMetadata() map[string]any {
	m := o.Metadata()
	if m == nil {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// MetaString returns metadata[key] if it is a string.
func (o Object) MetaString(key string) string {
	s, _ := o.Metadata()[key].(string)
	return s
}

// Name returns metadata.name.
func (o Object) Name() string { return o.MetaString("name") }

// Namespace returns metadata.namespace.
func (o Object) Namespace() string { return o.MetaString("namespace") }

// ResourceVersion returns metadata.resourceVersion.
func (o Object) ResourceVersion() string { return o.MetaString("resourceVersion") }

// UID returns metadata.uid.
func (o Object) UID() string { return o.MetaString("uid") }

// Labels returns metadata.labels as strings (non-string values are skipped).
func (o Object) Labels() map[string]string { return stringMap(o.Metadata()["labels"]) }

// Annotations returns metadata.annotations as strings.
func (o Object) Annotations() map[string]string { return stringMap(o.Metadata()["annotations"]) }

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// SetMeta sets metadata[key] = value, creating metadata if needed.
func (o Object) SetMeta(key string, value any) { o.EnsureMetadata()[key] = value }

// DeepCopy returns a copy sharing nothing with o.
func (o Object) DeepCopy() Object {
	if o == nil {
		return nil
	}
	return deepCopyMap(o)
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return deepCopyMap(v)
	case Object:
		return deepCopyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return v
}

// unmarshalNumbers is json.Unmarshal with UseNumber.
func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}

// Strings is the strings of a decoded list of strings, StringList's
// inverse; an element not a string reads as "".
func Strings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, e := range l {
		out[i], _ = e.(string)
	}
	return out
}

// StringList is ss as a decoded object holds a list of strings.
func StringList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
