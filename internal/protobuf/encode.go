package protobuf

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// encodeMessage appends the fields of obj, the JSON form of m, to b.
func encodeMessage(b []byte, m *message, obj map[string]any) ([]byte, error) {
	if err := checkKeys(m, obj); err != nil {
		return nil, err
	}
	for i := range m.fields {
		f := &m.fields[i]
		v := obj[f.name]
		if f.inline {
			v = inlined(f.msg, obj)
		}
		var err error
		if b, err = encodeField(b, f, v); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return b, nil
}

// inlined is the JSON object of an inline message: the keys of obj it knows.
func inlined(m *message, obj map[string]any) map[string]any {
	sub := map[string]any{}
	for k, v := range obj {
		if m.knows(k) {
			sub[k] = v
		}
	}
	return sub
}

// checkKeys rejects JSON keys m does not know, naming them in sorted order.
func checkKeys(m *message, obj map[string]any) error {
	var unknown []string
	for k := range obj {
		if !m.knows(k) {
			unknown = append(unknown, k)
		}
	}
	if unknown == nil {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("unknown fields %q in %s", unknown, m.name)
}

// encodeField appends field f holding the JSON value v.
func encodeField(b []byte, f *field, v any) ([]byte, error) {
	switch {
	case f.kind.isMap():
		return encodeMap(b, f, v)
	case f.pres == repeated:
		return encodeRepeated(b, f, v)
	case f.pres == pointer && v == nil:
		return b, nil
	}
	return encodeOne(b, f, v)
}

// encodeRepeated appends one record per element of the JSON array v.
func encodeRepeated(b []byte, f *field, v any) ([]byte, error) {
	if v == nil {
		return b, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array, got %T", v)
	}
	for i, item := range items {
		var err error
		if b, err = encodeOne(b, f, item); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return b, nil
}

// encodeOne appends one record of field f; a nil v is the zero value.
func encodeOne(b []byte, f *field, v any) ([]byte, error) {
	switch f.kind {
	case kString:
		s, err := toString(v)
		if err != nil {
			return nil, err
		}
		return appendString(b, f.num, s), nil
	case kInt32, kInt64, kBool:
		n, err := toVarint(f.kind, v)
		if err != nil {
			return nil, err
		}
		return appendVarint(b, f.num, n), nil
	case kDouble:
		x, err := toFloat64(v)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, f.num, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(x)), nil
	}
	body, err := encodeBody(f, v)
	if err != nil {
		return nil, err
	}
	return appendBytes(b, f.num, body), nil
}

// encodeBody returns the bytes of a bytes, time, raw JSON or message field.
func encodeBody(f *field, v any) ([]byte, error) {
	switch f.kind {
	case kBytes:
		return toBytes(v)
	case kTime, kMicroTime:
		return encodeTime(f.kind, v)
	case kQuantity:
		s, err := quantityString(v)
		if err != nil {
			return nil, err
		}
		return appendString(nil, 1, s), nil
	case kIntOrString:
		return encodeIntOrString(v)
	case kFieldsV1, kJSON:
		if v == nil { // JSON's null is no raw bytes (never a FieldsV1's, a pointer)
			return nil, nil
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return appendBytes(nil, 1, raw), nil
	}
	return encodeValue(f.msg, v)
}

// encodeValue returns the bytes of the message m from its JSON form v.
func encodeValue(m *message, v any) ([]byte, error) {
	if m.union {
		return encodeUnion(m, v)
	}
	obj, err := toObject(v)
	if err != nil {
		return nil, err
	}
	return encodeMessage(nil, m, obj)
}

// encodeUnion returns the bytes of a union from its JSON form, as the
// JSONSchemaPropsOr* types' UnmarshalJSON read it: an object is the schema
// (which allows, where the union has a boolean), an array the list, a
// boolean the boolean, and null the empty message.
func encodeUnion(m *message, v any) ([]byte, error) {
	list, schema, flag := m.unionParts()
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		var b []byte
		if flag >= 0 {
			b = appendVarint(b, m.fields[flag].num, 1)
		}
		body, err := encodeMessage(nil, m.fields[schema].msg, v)
		if err != nil {
			return nil, err
		}
		return appendBytes(b, m.fields[schema].num, body), nil
	case []any:
		if list >= 0 {
			return encodeRepeated(nil, &m.fields[list], v)
		}
	case bool:
		if flag >= 0 {
			return encodeOne(nil, &m.fields[flag], v)
		}
	}
	return nil, fmt.Errorf("%s cannot be a %T", m.name, v)
}

// encodeMap appends one entry record per key of the JSON object v, in sorted
// key order as gogo-protobuf's generated Marshal does.
func encodeMap(b []byte, f *field, v any) ([]byte, error) {
	obj, err := toObject(v)
	if err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		entry := appendString(nil, 1, k)
		if entry, err = appendMapValue(entry, f, obj[k]); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		b = appendBytes(b, f.num, entry)
	}
	return b, nil
}

// appendMapValue appends field 2 of a map entry. A null bytes value is a nil
// []byte, which gogo-protobuf leaves out; a null string is ""; a message,
// an ExtraValue among them, is always written.
func appendMapValue(entry []byte, f *field, v any) ([]byte, error) {
	switch f.kind {
	case kMessageMap:
		body, err := encodeBody(f.value, v)
		if err != nil {
			return nil, err
		}
		return appendBytes(entry, 2, body), nil
	case kStringsMap:
		body, err := encodeRepeated(nil, &extraValueMsg.fields[0], v)
		if err != nil {
			return nil, err
		}
		return appendBytes(entry, 2, body), nil
	case kStringMap:
		s, err := toString(v)
		if err != nil {
			return nil, err
		}
		return appendString(entry, 2, s), nil
	}
	if v == nil {
		return entry, nil
	}
	data, err := toBytes(v)
	if err != nil {
		return nil, err
	}
	return appendBytes(entry, 2, data), nil
}

// quantityString returns the string of a Quantity's JSON form: a string,
// or a number as Quantity's UnmarshalJSON accepts it; the zero Quantity,
// which null stands for, is "0".
func quantityString(v any) (string, error) {
	switch q := v.(type) {
	case nil:
		return "0", nil
	case string:
		return q, nil
	case json.Number:
		return string(q), nil
	case float64:
		return strconv.FormatFloat(q, 'f', -1, 64), nil
	case int, int64:
		return fmt.Sprint(q), nil
	}
	return "", fmt.Errorf("want a quantity, got %T", v)
}

// encodeIntOrString returns the bytes of an IntOrString from its JSON form,
// a number (type 0) or a string (type 1); every field is written, as its
// Marshal does. null is the zero IntOrString, the number 0.
func encodeIntOrString(v any) ([]byte, error) {
	var typ, n uint64
	var s string
	if str, ok := v.(string); ok {
		typ, s = 1, str
	} else if v != nil {
		var err error
		if n, err = toVarint(kInt32, v); err != nil {
			return nil, err
		}
	}
	return appendString(appendVarint(appendVarint(nil, 1, typ), 2, n), 3, s), nil
}

// toBytes returns the bytes of a JSON base64 string.
func toBytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a base64 string, got %T", v)
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bytes: %w", err)
	}
	return data, nil
}

// encodeTime returns the Timestamp bytes of an RFC 3339 string: empty for
// null and the zero time, as Time.Marshal and MicroTime.Marshal do. Time
// keeps whole seconds (nanos written as 0), MicroTime microseconds.
func encodeTime(k kind, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want an RFC 3339 string, got %T", v)
	}
	t, err := time.Parse(layoutOf(k), s)
	if err != nil {
		return nil, err
	}
	if t.IsZero() {
		return nil, nil
	}
	var nanos int64
	if k == kMicroTime {
		nanos = int64(time.Duration(t.Nanosecond()).Truncate(time.Microsecond))
	}
	return appendVarint(appendVarint(nil, 1, uint64(t.Unix())), 2, uint64(nanos)), nil
}

// layoutOf returns the JSON time layout of kind k, as metav1's UnmarshalJSON
// parses it.
func layoutOf(k kind) string {
	if k == kMicroTime {
		return rfc3339Micro
	}
	return time.RFC3339
}

// rfc3339Micro is metav1.RFC3339Micro.
const rfc3339Micro = "2006-01-02T15:04:05.000000Z07:00"

func toObject(v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object, got %T", v)
	}
	return obj, nil
}

func toString(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", v)
	}
	return s, nil
}

// toVarint returns the varint of a JSON boolean or integer; int32 values
// are sign-extended to 64 bits, as gogo-protobuf writes them.
func toVarint(k kind, v any) (uint64, error) {
	if k == kBool {
		if v == nil {
			return 0, nil
		}
		bv, ok := v.(bool)
		if !ok {
			return 0, fmt.Errorf("want a boolean, got %T", v)
		}
		if bv {
			return 1, nil
		}
		return 0, nil
	}
	n, err := toInt64(v)
	if err != nil {
		return 0, err
	}
	if k == kInt32 && (n < math.MinInt32 || n > math.MaxInt32) {
		return 0, fmt.Errorf("%d overflows int32", n)
	}
	return uint64(n), nil
}

// toInt64 accepts the integer forms a JSON number takes in Go: float64 and
// json.Number from encoding/json, int and int64 from Go code.
func toInt64(v any) (int64, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case float64:
		if n != math.Trunc(n) || n < math.MinInt64 || n >= math.MaxInt64 {
			return 0, fmt.Errorf("%v is not an int64", n)
		}
		return int64(n), nil
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not an int64: %w", n, err)
		}
		return i, nil
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

// toFloat64 accepts the forms a JSON number takes in Go, as toInt64 does.
func toFloat64(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case json.Number:
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not a double: %w", n, err)
		}
		return x, nil
	}
	return 0, fmt.Errorf("want a number, got %T", v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendBytes(b []byte, num protowire.Number, data []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), data)
}

func appendVarint(b []byte, num protowire.Number, n uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), n)
}
