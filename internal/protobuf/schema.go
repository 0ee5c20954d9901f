package protobuf

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// kind is a field's type, on the wire and in JSON.
type kind uint8

const (
	kString      kind = iota // bytes on the wire, a JSON string
	kInt32                   // varint (negative values take 10 bytes), a JSON number
	kInt64                   // varint, a JSON number
	kBool                    // varint 0 or 1, a JSON boolean
	kMessage                 // a nested message, a JSON object
	kTime                    // meta/v1 Time: Timestamp with seconds only, RFC 3339
	kMicroTime               // meta/v1 MicroTime: seconds and microseconds, RFC 3339 with 6 digits
	kFieldsV1                // meta/v1 FieldsV1: raw JSON in field 1, the JSON value itself
	kStringMap               // map<string, string>, a JSON object of strings
	kBytesMap                // map<string, bytes>, a JSON object of base64 strings
	kStringsMap              // map<string, ExtraValue{repeated string items = 1}>, a JSON object of string arrays
	kDouble                  // fixed64 IEEE 754, a JSON number
	kBytes                   // bytes written when the Go []byte is not nil, a JSON base64 string
	kJSON                    // apiextensions/v1 JSON: raw JSON in field 1, the JSON value itself
	kMessageMap              // map<string, V>, V a message or custom kind (field value), a JSON object of V's JSON form
	kQuantity                // resource.Quantity: its string in field 1, a JSON string
	kIntOrString             // intstr.IntOrString: type, intVal, strVal; a JSON number or string
)

// scalar says whether fields of kind k are Go scalars, which omitempty
// leaves out when zero.
func (k kind) scalar() bool {
	return k == kString || k == kInt32 || k == kInt64 || k == kBool || k == kDouble
}

// isMap says whether fields of kind k are protobuf maps.
func (k kind) isMap() bool {
	return k == kStringMap || k == kBytesMap || k == kStringsMap || k == kMessageMap
}

// presence mirrors the Go field's shape in k8s.io/api, which decides when
// gogo-protobuf writes the field.
type presence uint8

const (
	// value is a Go value field: always written, as its zero value when the
	// JSON lacks it or holds null.
	value presence = iota
	// pointer is a Go pointer field: written only when the JSON holds a
	// non-null value; when decoded, always present in the JSON.
	pointer
	// repeated is a Go slice: one wire record per element. Maps are repeated
	// on the wire too but use kStringMap, kBytesMap or kStringsMap instead.
	repeated
)

// field describes one protobuf field and its JSON counterpart.
type field struct {
	name string           // JSON name
	num  protowire.Number // protobuf field number
	kind kind
	pres presence
	// omitZero says encoding/json leaves the field out when it holds its zero
	// value: set for omitempty scalars, slices and maps and for omitzero
	// structs, not for structs tagged only omitempty (encoding/json writes
	// those anyway, a zero Time as null).
	omitZero bool
	// null says a pointer field lacks omitempty: its JSON is null when the
	// wire does not have it.
	null bool
	msg  *message // for kMessage
	// value is a kMessageMap's values: field 2 of each entry.
	value *field
	// inline says the message's fields are the JSON object's own, as a Go
	// struct embedded with json:",inline" (admissionregistration's
	// RuleWithOperations.Rule): a value field of kind kMessage.
	inline bool
}

// message is a protobuf message; fields are in ascending number order, which
// is the order gogo-protobuf writes them in.
type message struct {
	name   string
	fields []field
	// typeMeta says the JSON may carry apiVersion and kind, which protobuf
	// leaves to the envelope (top-level objects) or drops (list items).
	typeMeta bool
	// union says the JSON form is one of the fields' by its JSON type, as
	// apiextensions/v1's JSONSchemaPropsOr* types write it: see encodeUnion.
	union bool
}

// Messages read and written by hand: the envelope, WatchEvent, and the parts
// of meta/v1 types with custom Go encodings. Their bytes fields are kString,
// which has the same wire type.
var (
	timestampMsg = &message{name: "Timestamp", fields: []field{
		{name: "seconds", num: 1, kind: kInt64},
		{name: "nanos", num: 2, kind: kInt32},
	}}
	// rawJSONMsg is meta/v1 FieldsV1 and apiextensions/v1 JSON.
	rawJSONMsg = &message{name: "raw JSON", fields: []field{
		{name: "raw", num: 1, kind: kString},
	}}
	extraValueMsg = &message{name: "ExtraValue", fields: []field{
		{name: "items", num: 1, kind: kString, pres: repeated},
	}}
	quantityMsg = &message{name: "Quantity", fields: []field{
		{name: "string", num: 1, kind: kString},
	}}
	intOrStringMsg = &message{name: "IntOrString", fields: []field{
		{name: "type", num: 1, kind: kInt64},
		{name: "intVal", num: 2, kind: kInt32},
		{name: "strVal", num: 3, kind: kString},
	}}
	mapEntryMsg = &message{name: "map entry", fields: []field{
		{name: "key", num: 1, kind: kString},
		{name: "value", num: 2, kind: kString},
	}}
	typeMetaMsg = &message{name: "TypeMeta", fields: []field{
		{name: "apiVersion", num: 1, kind: kString},
		{name: "kind", num: 2, kind: kString},
	}}
	unknownMsg = &message{name: "Unknown", fields: []field{
		{name: "typeMeta", num: 1, kind: kMessage, msg: typeMetaMsg},
		{name: "raw", num: 2, kind: kString},
		{name: "contentEncoding", num: 3, kind: kString},
		{name: "contentType", num: 4, kind: kString},
	}}
	watchEventMsg = &message{name: "WatchEvent", fields: []field{
		{name: "type", num: 1, kind: kString},
		{name: "object", num: 2, kind: kMessage, msg: &message{name: "RawExtension", fields: []field{
			{name: "raw", num: 1, kind: kString},
		}}},
	}}
)

// messageValue is the value field of a map of messages m.
func messageValue(m *message) *field {
	return &field{name: "value", num: 2, kind: kMessage, msg: m}
}

// lookup returns the message of apiVersion and kind, or nil. Status and
// DeleteOptions are in every group-version, as metav1.AddToGroupVersion
// registers them, so any apiVersion is accepted for them.
func lookup(apiVersion, kind string) *message {
	switch {
	case (kind == "Status" || kind == "DeleteOptions") && apiVersion != "":
		apiVersion = "meta.k8s.io/v1"
	case apiVersion == "policy/v1beta1" && kind == "Eviction":
		// Accepted by pods/eviction, not served: its message is v1's.
		apiVersion = "policy/v1"
	case apiVersion == "apiextensions.k8s.io/v1":
		return crdKinds()[kind]
	}
	return data().kinds[apiVersion][kind]
}

// Supports reports whether Encode and Decode handle objects of apiVersion and
// kind.
func Supports(apiVersion, kind string) bool {
	return lookup(apiVersion, kind) != nil
}

// index returns the position in m.fields of the field numbered num, or -1.
func (m *message) index(num protowire.Number) int {
	for i := range m.fields {
		if m.fields[i].num == num {
			return i
		}
	}
	return -1
}

// unionParts returns the positions among a union's fields of its list, its
// schema and its boolean; -1 for what it lacks. Every union has a schema.
func (m *message) unionParts() (list, schema, flag int) {
	list, schema, flag = -1, -1, -1
	for i, f := range m.fields {
		switch {
		case f.pres == repeated:
			list = i
		case f.kind == kMessage:
			schema = i
		default:
			flag = i
		}
	}
	return list, schema, flag
}

// knows reports whether m's JSON form may hold the key k.
func (m *message) knows(k string) bool {
	if m.typeMeta && (k == "apiVersion" || k == "kind") {
		return true
	}
	return slices.ContainsFunc(m.fields, func(f field) bool { return f.name == k || f.inline && f.msg.knows(k) })
}
