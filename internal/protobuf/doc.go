// Package protobuf converts between Kubernetes' protobuf wire form and the
// JSON form (map[string]any) the server keeps objects in, for every
// built-in kind the server serves, without importing k8s.io/api or
// k8s.io/apimachinery.
//
// # Scope
//
// The messages come from data: internal/kubespec records, from kube's
// generated.proto files and the Go types go-to-protobuf made them from
// (k8s.io/api, k8s.io/kube-aggregator, k8s.io/apimachinery v0.37.2), each
// served kind's and list's message and every message they use, with the
// JSON shape of each field (name, omitempty, pointer, inline, named
// slices). The tables are built from it on first use. Types that encode
// themselves are kinds of field here: meta/v1 Time, MicroTime and FieldsV1,
// resource.Quantity, intstr.IntOrString and runtime.RawExtension. Status
// and DeleteOptions are accepted under any apiVersion (as Kubernetes
// registers them in every group version), PartialObjectMetadata(List)
// under meta.k8s.io/v1 and v1beta1, policy/v1beta1 Eviction (which
// pods/eviction accepts) as policy/v1's. Only apiextensions.k8s.io/v1
// (CustomResourceDefinition and its List), whose JSONSchemaProps has JSON
// encodings of its own, is described by hand (apiextensions.go). Supports
// says whether a kind is handled; for other kinds a server answers 406 or
// 415, or serves JSON. test/interop/protobuf proves the bytes equal
// k8s.io/api's for every served kind.
//
// # Wire form
//
// An object is the envelope "k8s\x00" followed by a runtime.Unknown message
// {typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose raw
// is the object's message. Encode writes what gogo-protobuf's generated
// Marshal writes: fields in number order; Go value fields always, even
// when zero (an empty string, a 0, an empty ObjectMeta); pointer fields only
// when set; map entries in sorted key order. A watch stream
// (WatchContentType) is a sequence of frames, each a 4-byte big-endian
// length and a WatchEvent message without envelope whose object.raw is an
// envelope: see EncodeWatchEvent, ReadFrame and DecodeWatchEvent.
//
// # JSON form
//
// Decode returns what encoding/json gives when it decodes the JSON
// k8s.io/api writes for the object: the same field names, fields tagged
// omitempty left out when zero, struct fields kept ({} or, for a zero Time,
// null), a List's empty items null. Numbers are float64, []byte values
// base64 strings, Time an RFC 3339 string in UTC with whole seconds, and
// MicroTime one with six fractional digits. Raw JSON (fieldsV1, and a
// schema's default, example and enum) is its JSON value, numbers as
// json.Number, which keeps every digit. The JSONSchemaPropsOrArray, OrBool
// and OrStringArray unions are an object, an array, a boolean or null, as
// their MarshalJSON writes them. List items carry no apiVersion
// or kind, as in Kubernetes' JSON. Encode accepts that form: numbers as
// float64, json.Number, int or int64; null wherever Go would decode it
// into a zero value; apiVersion and kind on list items (ignored, as
// protobuf has no place for them).
//
// # Caveats
//
//   - Encode rejects a JSON field its type lacks (ErrInvalid) rather than
//     drop it; the server validates schemas before objects get here.
//   - Decode skips protobuf fields it does not know, as gogo-protobuf does,
//     so a newer client's additions are dropped.
//   - Time keeps whole seconds and MicroTime microseconds, as in
//     Kubernetes; nanoseconds on the wire are dropped.
//   - Decode fails with ErrNotRepresentable for an int64 beyond ±2^53,
//     which a float64 cannot hold exactly, and for a year outside 0-9999,
//     which RFC 3339 cannot write.
//   - Raw JSON is written as encoding/json marshals the JSON value (keys
//     sorted, compact, HTML escaped), so the bytes equal Kubernetes' only
//     when its raw JSON was in that form. CBOR-encoded fieldsV1 is not
//     supported.
//   - A union with both sides set on the wire decodes to the side its
//     MarshalJSON writes (the list, else the schema); an empty list, empty
//     raw JSON or empty caBundle decode as the JSON Kubernetes writes for
//     them (null, or no field).
//   - Decode fails with ErrTooDeep for an object that would nest deeper
//     than api.MaxDepth (JSONSchemaProps nests itself without bound on the
//     wire), the limit of every decoder of the server.
//   - A message field repeated on the wire is merged, a scalar's last
//     occurrence wins, as in gogo-protobuf; a Time's last occurrence wins
//     whole, as metav1.Time's Unmarshal replaces it.
//   - An envelope with a contentEncoding or contentType is rejected.
//   - A Quantity is decoded as the string on the wire; kube parses it and
//     writes its canonical form, which is what kube's own Marshal writes,
//     so only another writer's "1000m" stays "1000m" where kube says "1".
//   - Repeated scalars are read unpacked, as gogo-protobuf writes proto2
//     fields; a packed one is rejected as malformed.
//
// All functions are safe for concurrent use.
package protobuf
