package protobuf

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/client/api"
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
	err := scan(m, data, func(i int, r record) { records[i] = append(records[i], r) })
	return records, err
}

// scan calls found with each record of data of a field m knows, and its
// field's index, in the order they came.
func scan(m *message, data []byte, found func(i int, r record)) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("%w: %s: %w", ErrMalformed, m.name, protowire.ParseError(n))
		}
		data = data[n:]
		i := m.index(num)
		switch {
		case i < 0:
			n = protowire.ConsumeFieldValue(num, typ, data)
		case typ != wireType(m.fields[i].kind):
			return fmt.Errorf("%w: %s.%s has wire type %d", ErrMalformed, m.name, m.fields[i].name, typ)
		default:
			var r record
			r, n = consume(typ, data)
			found(i, r)
		}
		if n < 0 {
			return fmt.Errorf("%w: %s field %d: %w", ErrMalformed, m.name, num, protowire.ParseError(n))
		}
		data = data[n:]
	}
	return nil
}

// pooledRecords holds the per-field record lists of messages being
// decoded, for reuse by the next: a message of many fields (JSONSchemaProps
// has 45) costs what it holds, not a list per field, so that a body of
// many empty or tiny nested messages cannot make a thousand times its size
// in memory.
var pooledRecords = sync.Pool{New: func() any { return new([][]record) }}

// splitPooled is split with the lists from the pool; put them back with
// release once the records are read.
func splitPooled(m *message, data []byte) (*[][]record, error) {
	p := pooledRecords.Get().(*[][]record)
	*p = slices.Grow((*p)[:0], len(m.fields))[:len(m.fields)]
	records := *p
	err := scan(m, data, func(i int, r record) { records[i] = append(records[i], r) })
	return p, err
}

func release(p *[][]record) {
	clear(*p)
	pooledRecords.Put(p)
}

// wireType returns the wire type of fields of kind k.
func wireType(k kind) protowire.Type {
	switch k {
	case kInt32, kInt64, kBool:
		return protowire.VarintType
	case kDouble:
		return protowire.Fixed64Type
	}
	return protowire.BytesType
}

// consume reads one varint, fixed64 or length-delimited record from data
// and returns it with its length, negative on error as in protowire.
func consume(typ protowire.Type, data []byte) (record, int) {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(data)
		return record{n: v}, n
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(data)
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
// as encoding/json writes the k8s.io/api type: an object at depth, the
// document being depth 1.
func decodeMessage(m *message, data []byte, depth int) (map[string]any, error) {
	if err := checkDepth(depth); err != nil {
		return nil, err
	}
	p, err := splitPooled(m, data)
	if err != nil {
		release(p)
		return nil, err
	}
	defer release(p)
	records := *p
	obj := make(map[string]any, countPresent(records))
	for i := range m.fields {
		f := &m.fields[i]
		v, ok, err := decodeField(f, records[i], depth+1)
		if err != nil {
			return nil, within(err, f.name)
		}
		switch {
		case ok && f.inline:
			maps.Copy(obj, v.(map[string]any))
		case ok:
			obj[f.name] = v
		}
	}
	return obj, nil
}

// countPresent is how many fields have records.
func countPresent(records [][]record) int {
	n := 0
	for _, rs := range records {
		if len(rs) > 0 {
			n++
		}
	}
	return n
}

// pathError is an error with the fields, elements and keys it was found
// under, innermost first: each level appends its name, where wrapping the
// error would copy its text at each of thousands of levels.
type pathError struct {
	path []string
	err  error
}

// maxPath is how many names of its path an error shows, the outermost and
// the innermost half each, so that one found thousands of levels down reads
// well (and fits in a Status message).
const maxPath = 16

func (e *pathError) Error() string {
	names := slices.Clone(e.path)
	slices.Reverse(names) // outermost first
	if n := len(names); n > maxPath {
		names = slices.Concat(names[:maxPath/2], []string{fmt.Sprintf("(%d more)", n-maxPath)}, names[n-maxPath/2:])
	}
	return strings.Join(append(names, e.err.Error()), ": ")
}

func (e *pathError) Unwrap() error { return e.err }

// within returns err found under name.
func within(err error, name string) error {
	if pe, ok := err.(*pathError); ok {
		pe.path = append(pe.path, name)
		return pe
	}
	return &pathError{path: []string{name}, err: err}
}

// checkDepth fails when a JSON object or array at depth would nest past
// api.MaxDepth, the server's limit for every decoder: JSONSchemaProps nests
// itself, so protobuf can nest as deep as its bytes allow.
func checkDepth(depth int) error {
	if depth > api.MaxDepth {
		return fmt.Errorf("%w: more than %d levels", ErrTooDeep, api.MaxDepth)
	}
	return nil
}

// decodeValue returns the JSON form of the message m held in data, at depth.
func decodeValue(m *message, data []byte, depth int) (any, error) {
	if m.union {
		return decodeUnion(m, data, depth)
	}
	return decodeMessage(m, data, depth)
}

// decodeUnion returns the JSON form of a union: its list when not empty,
// else its schema when present, else its boolean, else null, as the
// JSONSchemaPropsOr* types' MarshalJSON choose.
func decodeUnion(m *message, data []byte, depth int) (any, error) {
	rs, err := split(m, data)
	if err != nil {
		return nil, err
	}
	list, schema, flag := m.unionParts()
	switch {
	case list >= 0 && len(rs[list]) > 0:
		v, _, err := decodeRepeated(&m.fields[list], rs[list], depth)
		return v, err
	case len(rs[schema]) > 0:
		return decodeMessage(m.fields[schema].msg, concat(rs[schema]), depth)
	case flag >= 0:
		return last(rs[flag]).n != 0, nil
	}
	return nil, nil
}

// decodeField returns the JSON value of f, at depth, from its records, and
// whether the JSON has the field at all.
func decodeField(f *field, rs []record, depth int) (any, bool, error) {
	switch {
	case f.kind.isMap():
		if len(rs) == 0 {
			return nil, !f.omitZero, nil
		}
		v, err := decodeMap(f, rs, depth)
		return v, true, err
	case f.pres == repeated:
		return decodeRepeated(f, rs, depth)
	case f.pres == pointer && len(rs) == 0:
		return nil, f.null, nil
	}
	r := last(rs)
	if f.kind == kMessage || f.kind == kFieldsV1 || f.kind == kIntOrString {
		r = record{data: concat(rs)}
	}
	v, err := decodeOne(f, r, depth)
	if err != nil {
		return nil, false, err
	}
	// A pointer field is omitZero only for a []byte: present but empty on
	// the wire, it is left out of the JSON.
	return v, !f.omitZero || !isZero(v), nil
}

// decodeRepeated returns a JSON array at depth; without records, no field
// if it is omitempty and null otherwise.
func decodeRepeated(f *field, rs []record, depth int) (any, bool, error) {
	if len(rs) == 0 {
		return nil, !f.omitZero, nil
	}
	if err := checkDepth(depth); err != nil {
		return nil, false, err
	}
	items := make([]any, len(rs))
	for i, r := range rs {
		v, err := decodeOne(f, r, depth+1)
		if err != nil {
			return nil, false, within(err, fmt.Sprintf("[%d]", i))
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

// decodeOne returns the JSON value, at depth, of one record of f.
func decodeOne(f *field, r record, depth int) (any, error) {
	switch f.kind {
	case kString:
		return string(r.data), nil
	case kInt32:
		return float64(int32(r.n)), nil
	case kInt64:
		return int64ToJSON(int64(r.n))
	case kBool:
		return r.n != 0, nil
	case kDouble:
		return decodeDouble(r.n)
	case kBytes:
		return base64.StdEncoding.EncodeToString(r.data), nil
	case kTime, kMicroTime:
		return decodeTime(f.kind, r.data)
	case kQuantity:
		return decodeQuantity(r.data)
	case kIntOrString:
		return decodeIntOrString(r.data)
	case kFieldsV1, kJSON:
		return decodeRaw(r.data, depth)
	}
	return decodeValue(f.msg, r.data, depth)
}

// decodeDouble returns the JSON number of a double's bits; JSON has none
// for NaN and the infinities.
func decodeDouble(bits uint64) (any, error) {
	x := math.Float64frombits(bits)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("%w: double %v", ErrNotRepresentable, x)
	}
	return x, nil
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

// decodeMap returns a JSON object at depth from the map entry records of f;
// a missing key or value is "" ([] for an ExtraValue, {} for a message), as
// gogo-protobuf decodes it.
func decodeMap(f *field, rs []record, depth int) (map[string]any, error) {
	if err := checkDepth(depth); err != nil {
		return nil, err
	}
	obj := make(map[string]any, len(rs))
	for _, r := range rs {
		entry, err := split(mapEntryMsg, r.data)
		if err != nil {
			return nil, err
		}
		key, val := string(last(entry[0]).data), last(entry[1]).data
		switch f.kind {
		case kMessageMap:
			// The last value wins whole: gogo-protobuf makes a new one for
			// each occurrence.
			if obj[key], err = decodeOne(f.value, record{data: val}, depth+1); err != nil {
				return nil, within(err, fmt.Sprintf("key %q", key))
			}
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

// decodeQuantity returns the JSON string of a Quantity: its string as
// written. Kube parses it and writes its canonical form ("1000m" is "1"),
// which is what its own Marshal writes; another writer's is kept as is.
func decodeQuantity(data []byte) (any, error) {
	rs, err := split(quantityMsg, data)
	if err != nil {
		return nil, err
	}
	if len(rs[0]) == 0 {
		return "0", nil // the zero Quantity
	}
	s := string(last(rs[0]).data)
	if s == "" {
		return nil, fmt.Errorf("%w: an empty quantity", ErrMalformed)
	}
	return s, nil
}

// decodeIntOrString returns the JSON number or string of an IntOrString by
// its type, as its MarshalJSON writes it.
func decodeIntOrString(data []byte) (any, error) {
	rs, err := split(intOrStringMsg, data)
	if err != nil {
		return nil, err
	}
	switch typ := last(rs[0]).n; typ {
	case 0:
		return float64(int32(last(rs[1]).n)), nil
	case 1:
		return string(last(rs[2]).data), nil
	default:
		return nil, fmt.Errorf("%w: IntOrString type %d", ErrNotRepresentable, int64(typ))
	}
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

// decodeRaw returns the JSON value, at depth, that a FieldsV1 or an
// apiextensions JSON holds as raw bytes, its numbers as json.Number so that
// they keep every digit; nil (JSON null) when it holds none.
func decodeRaw(data []byte, depth int) (any, error) {
	rs, err := split(rawJSONMsg, data)
	if err != nil {
		return nil, err
	}
	raw := last(rs[0]).data
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	if nestsPast(v, depth) {
		return nil, fmt.Errorf("%w: more than %d levels", ErrTooDeep, api.MaxDepth)
	}
	return v, nil
}

// parseRaw returns the JSON value in raw, numbers as json.Number: an object
// (every FieldsV1, most JSON) through the server's own parser, which is
// faster, anything else through encoding/json.
func parseRaw(raw []byte) (any, error) {
	if obj, err := api.ParseObject(raw); err == nil {
		return map[string]any(obj), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: raw bytes are not JSON", ErrMalformed)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return v, nil
}

// nestsPast reports whether v, a JSON value at depth, nests past
// api.MaxDepth.
func nestsPast(v any, depth int) bool {
	var elems iter.Seq[any]
	switch v := v.(type) {
	case map[string]any:
		elems = maps.Values(v)
	case []any:
		elems = slices.Values(v)
	default:
		return false
	}
	if depth > api.MaxDepth {
		return true
	}
	for e := range elems {
		if nestsPast(e, depth+1) {
			return true
		}
	}
	return false
}
