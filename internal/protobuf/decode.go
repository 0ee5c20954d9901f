package protobuf

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// record is one occurrence of a field on the wire: its bytes, or its value
// if it is a varint.
type record struct {
	data []byte
	n    uint64
}

// split returns the records of data grouped by the fields of m, in the order
// they came. It skips fields m does not know, as gogo-protobuf does, and
// rejects a known field with the wrong wire type.
func split(m *message, data []byte) ([][]record, error) {
	records := make([][]record, len(m.fields))
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, m.name, protowire.ParseError(n))
		}
		data = data[n:]
		i := m.index(num)
		switch {
		case i < 0:
			n = protowire.ConsumeFieldValue(num, typ, data)
		case typ != wireType(m.fields[i].kind):
			return nil, fmt.Errorf("%w: %s.%s has wire type %d", ErrMalformed, m.name, m.fields[i].name, typ)
		default:
			var r record
			r, n = consume(typ, data)
			records[i] = append(records[i], r)
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: %s field %d: %w", ErrMalformed, m.name, num, protowire.ParseError(n))
		}
		data = data[n:]
	}
	return records, nil
}

// wireType returns the wire type of fields of kind k.
func wireType(k kind) protowire.Type {
	switch k {
	case kInt32, kInt64, kBool:
		return protowire.VarintType
	}
	return protowire.BytesType
}

// consume reads one varint or length-delimited record from data and returns
// it with its length, negative on error as in protowire.
func consume(typ protowire.Type, data []byte) (record, int) {
	if typ == protowire.VarintType {
		v, n := protowire.ConsumeVarint(data)
		return record{n: v}, n
	}
	v, n := protowire.ConsumeBytes(data)
	return record{data: v}, n
}

// last returns the final record, or the zero record: for scalars the last
// occurrence wins.
func last(rs []record) record {
	if len(rs) == 0 {
		return record{}
	}
	return rs[len(rs)-1]
}

// concat returns the records' bytes joined: for a message, decoding that is
// merging the occurrences, as gogo-protobuf's Unmarshal does.
func concat(rs []record) []byte {
	if len(rs) == 1 {
		return rs[0].data
	}
	var b []byte
	for _, r := range rs {
		b = append(b, r.data...)
	}
	return b
}

// decodeMessage returns the JSON form of the message m held in data, shaped
// as encoding/json writes the k8s.io/api type.
func decodeMessage(m *message, data []byte) (map[string]any, error) {
	records, err := split(m, data)
	if err != nil {
		return nil, err
	}
	obj := make(map[string]any, len(m.fields))
	for i := range m.fields {
		f := &m.fields[i]
		v, ok, err := decodeField(f, records[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if ok {
			obj[f.name] = v
		}
	}
	return obj, nil
}

// decodeField returns the JSON value of f from its records, and whether the
// JSON has the field at all.
func decodeField(f *field, rs []record) (any, bool, error) {
	switch {
	case f.kind.isMap():
		if len(rs) == 0 {
			return nil, false, nil
		}
		v, err := decodeMap(f.kind, rs)
		return v, true, err
	case f.pres == repeated:
		return decodeRepeated(f, rs)
	case f.pres == pointer && len(rs) == 0:
		return nil, f.null, nil
	}
	r := last(rs)
	if f.kind == kMessage || f.kind == kFieldsV1 {
		r = record{data: concat(rs)}
	}
	v, err := decodeOne(f, r)
	if err != nil {
		return nil, false, err
	}
	return v, f.pres == pointer || !f.omitZero || !isZero(v), nil
}

// decodeRepeated returns a JSON array; without records, no field if it is
// omitempty and null otherwise.
func decodeRepeated(f *field, rs []record) (any, bool, error) {
	if len(rs) == 0 {
		return nil, !f.omitZero, nil
	}
	items := make([]any, len(rs))
	for i, r := range rs {
		v, err := decodeOne(f, r)
		if err != nil {
			return nil, false, fmt.Errorf("[%d]: %w", i, err)
		}
		items[i] = v
	}
	return items, true, nil
}

// isZero reports whether v is the JSON form of a Go zero value that
// omitempty or omitzero leaves out.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	}
	return false
}

// decodeOne returns the JSON value of one record of f.
func decodeOne(f *field, r record) (any, error) {
	switch f.kind {
	case kString:
		return string(r.data), nil
	case kInt32:
		return float64(int32(r.n)), nil
	case kInt64:
		return int64ToJSON(int64(r.n))
	case kBool:
		return r.n != 0, nil
	case kTime, kMicroTime:
		return decodeTime(f.kind, r.data)
	case kFieldsV1:
		return decodeFieldsV1(r.data)
	}
	return decodeMessage(f.msg, r.data)
}

// maxExactInt is the largest integer a float64, and so a JSON number as
// encoding/json decodes it into any, holds exactly.
const maxExactInt = 1 << 53

func int64ToJSON(n int64) (any, error) {
	if n > maxExactInt || n < -maxExactInt {
		return nil, fmt.Errorf("%w: int64 %d is beyond a float64's exact range", ErrNotRepresentable, n)
	}
	return float64(n), nil
}

// decodeMap returns a JSON object from map entry records; a missing key or
// value is "" ([] for an ExtraValue), as gogo-protobuf decodes it.
func decodeMap(k kind, rs []record) (map[string]any, error) {
	obj := make(map[string]any, len(rs))
	for _, r := range rs {
		entry, err := split(mapEntryMsg, r.data)
		if err != nil {
			return nil, err
		}
		key, val := string(last(entry[0]).data), last(entry[1]).data
		switch k {
		case kBytesMap:
			obj[key] = base64.StdEncoding.EncodeToString(val)
		case kStringsMap:
			// The entry's ExtraValue, its occurrences merged as a message's;
			// never null, as gogo-protobuf makes one for every entry.
			vs, err := split(extraValueMsg, concat(entry[1]))
			if err != nil {
				return nil, err
			}
			items := make([]any, len(vs[0]))
			for i, r := range vs[0] {
				items[i] = string(r.data)
			}
			obj[key] = items
		default:
			obj[key] = string(val)
		}
	}
	return obj, nil
}

// decodeTime returns the RFC 3339 string of Timestamp bytes, or nil (JSON
// null) for the zero time, which an empty body encodes. Time drops the
// nanoseconds; MicroTime truncates them to microseconds.
func decodeTime(k kind, data []byte) (any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	rs, err := split(timestampMsg, data)
	if err != nil {
		return nil, err
	}
	var nanos time.Duration
	if k == kMicroTime {
		nanos = time.Duration(int32(last(rs[1]).n)).Truncate(time.Microsecond)
	}
	t := time.Unix(int64(last(rs[0]).n), int64(nanos)).UTC()
	if t.IsZero() {
		return nil, nil
	}
	if t.Year() < 0 || t.Year() > 9999 {
		return nil, fmt.Errorf("%w: year %d is outside RFC 3339", ErrNotRepresentable, t.Year())
	}
	return t.Format(layoutOf(k)), nil
}

// decodeFieldsV1 returns the JSON value FieldsV1 holds as raw bytes, or nil
// (JSON null) when it holds none.
func decodeFieldsV1(data []byte) (any, error) {
	rs, err := split(fieldsV1Msg, data)
	if err != nil {
		return nil, err
	}
	raw := last(rs[0]).data
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: fieldsV1 is not JSON: %w", ErrMalformed, err)
	}
	return v, nil
}
