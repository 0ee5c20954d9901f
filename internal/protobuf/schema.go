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

// meta/v1 messages (k8s.io/apimachinery pkg/apis/meta/v1/generated.proto).
var (
	ownerReference = &message{name: "OwnerReference", fields: []field{
		{name: "kind", num: 1, kind: kString},
		{name: "name", num: 3, kind: kString},
		{name: "uid", num: 4, kind: kString},
		{name: "apiVersion", num: 5, kind: kString},
		{name: "controller", num: 6, kind: kBool, pres: pointer},
		{name: "blockOwnerDeletion", num: 7, kind: kBool, pres: pointer},
	}}
	managedFieldsEntry = &message{name: "ManagedFieldsEntry", fields: []field{
		{name: "manager", num: 1, kind: kString, omitZero: true},
		{name: "operation", num: 2, kind: kString, omitZero: true},
		{name: "apiVersion", num: 3, kind: kString, omitZero: true},
		{name: "time", num: 4, kind: kTime, pres: pointer},
		{name: "fieldsType", num: 6, kind: kString, omitZero: true},
		{name: "fieldsV1", num: 7, kind: kFieldsV1, pres: pointer},
		{name: "subresource", num: 8, kind: kString, omitZero: true},
	}}
	objectMeta = &message{name: "ObjectMeta", fields: []field{
		{name: "name", num: 1, kind: kString, omitZero: true},
		{name: "generateName", num: 2, kind: kString, omitZero: true},
		{name: "namespace", num: 3, kind: kString, omitZero: true},
		{name: "selfLink", num: 4, kind: kString, omitZero: true},
		{name: "uid", num: 5, kind: kString, omitZero: true},
		{name: "resourceVersion", num: 6, kind: kString, omitZero: true},
		{name: "generation", num: 7, kind: kInt64, omitZero: true},
		{name: "creationTimestamp", num: 8, kind: kTime, omitZero: true},
		{name: "deletionTimestamp", num: 9, kind: kTime, pres: pointer},
		{name: "deletionGracePeriodSeconds", num: 10, kind: kInt64, pres: pointer},
		{name: "labels", num: 11, kind: kStringMap, omitZero: true},
		{name: "annotations", num: 12, kind: kStringMap, omitZero: true},
		{name: "ownerReferences", num: 13, kind: kMessage, pres: repeated, omitZero: true, msg: ownerReference},
		{name: "finalizers", num: 14, kind: kString, pres: repeated, omitZero: true},
		{name: "managedFields", num: 17, kind: kMessage, pres: repeated, omitZero: true, msg: managedFieldsEntry},
	}}
	shardInfo = &message{name: "ShardInfo", fields: []field{
		{name: "selector", num: 1, kind: kString},
	}}
	listMeta = &message{name: "ListMeta", fields: []field{
		{name: "selfLink", num: 1, kind: kString, omitZero: true},
		{name: "resourceVersion", num: 2, kind: kString, omitZero: true},
		{name: "continue", num: 3, kind: kString, omitZero: true},
		{name: "remainingItemCount", num: 4, kind: kInt64, pres: pointer},
		{name: "shardInfo", num: 5, kind: kMessage, pres: pointer, msg: shardInfo},
	}}
	statusCause = &message{name: "StatusCause", fields: []field{
		{name: "reason", num: 1, kind: kString, omitZero: true},
		{name: "message", num: 2, kind: kString, omitZero: true},
		{name: "field", num: 3, kind: kString, omitZero: true},
	}}
	statusDetails = &message{name: "StatusDetails", fields: []field{
		{name: "name", num: 1, kind: kString, omitZero: true},
		{name: "group", num: 2, kind: kString, omitZero: true},
		{name: "kind", num: 3, kind: kString, omitZero: true},
		{name: "causes", num: 4, kind: kMessage, pres: repeated, omitZero: true, msg: statusCause},
		{name: "retryAfterSeconds", num: 5, kind: kInt32, omitZero: true},
		{name: "uid", num: 6, kind: kString, omitZero: true},
	}}
	status = &message{name: "Status", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: listMeta},
		{name: "status", num: 2, kind: kString, omitZero: true},
		{name: "message", num: 3, kind: kString, omitZero: true},
		{name: "reason", num: 4, kind: kString, omitZero: true},
		{name: "details", num: 5, kind: kMessage, pres: pointer, msg: statusDetails},
		{name: "code", num: 6, kind: kInt32, omitZero: true},
	}}
	preconditions = &message{name: "Preconditions", fields: []field{
		{name: "uid", num: 1, kind: kString, pres: pointer},
		{name: "resourceVersion", num: 2, kind: kString, pres: pointer},
	}}
	deleteOptions = &message{name: "DeleteOptions", typeMeta: true, fields: []field{
		{name: "gracePeriodSeconds", num: 1, kind: kInt64, pres: pointer},
		{name: "preconditions", num: 2, kind: kMessage, pres: pointer, msg: preconditions},
		{name: "orphanDependents", num: 3, kind: kBool, pres: pointer},
		{name: "propagationPolicy", num: 4, kind: kString, pres: pointer},
		{name: "dryRun", num: 5, kind: kString, pres: repeated, omitZero: true},
		{name: "ignoreStoreReadErrorWithClusterBreakingPotential", num: 6, kind: kBool, pres: pointer},
	}}
)

// core/v1 messages (k8s.io/api core/v1/generated.proto).
var (
	namespaceCondition = &message{name: "NamespaceCondition", fields: []field{
		{name: "type", num: 1, kind: kString},
		{name: "status", num: 2, kind: kString},
		{name: "lastTransitionTime", num: 4, kind: kTime},
		{name: "reason", num: 5, kind: kString, omitZero: true},
		{name: "message", num: 6, kind: kString, omitZero: true},
	}}
	namespace = &message{name: "Namespace", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "NamespaceSpec", fields: []field{
			{name: "finalizers", num: 1, kind: kString, pres: repeated, omitZero: true},
		}}},
		{name: "status", num: 3, kind: kMessage, msg: &message{name: "NamespaceStatus", fields: []field{
			{name: "phase", num: 1, kind: kString, omitZero: true},
			{name: "conditions", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: namespaceCondition},
		}}},
	}}
	configMap = &message{name: "ConfigMap", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "data", num: 2, kind: kStringMap, omitZero: true},
		{name: "binaryData", num: 3, kind: kBytesMap, omitZero: true},
		{name: "immutable", num: 4, kind: kBool, pres: pointer},
	}}
	secret = &message{name: "Secret", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "data", num: 2, kind: kBytesMap, omitZero: true},
		{name: "type", num: 3, kind: kString, omitZero: true},
		{name: "stringData", num: 4, kind: kStringMap, omitZero: true},
		{name: "immutable", num: 5, kind: kBool, pres: pointer},
	}}
	objectReference = &message{name: "ObjectReference", fields: []field{
		{name: "kind", num: 1, kind: kString, omitZero: true},
		{name: "namespace", num: 2, kind: kString, omitZero: true},
		{name: "name", num: 3, kind: kString, omitZero: true},
		{name: "uid", num: 4, kind: kString, omitZero: true},
		{name: "apiVersion", num: 5, kind: kString, omitZero: true},
		{name: "resourceVersion", num: 6, kind: kString, omitZero: true},
		{name: "fieldPath", num: 7, kind: kString, omitZero: true},
	}}
	serviceAccount = &message{name: "ServiceAccount", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "secrets", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: objectReference},
		{name: "imagePullSecrets", num: 3, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "LocalObjectReference", fields: []field{
			{name: "name", num: 1, kind: kString, omitZero: true},
		}}},
		{name: "automountServiceAccountToken", num: 4, kind: kBool, pres: pointer},
	}}
	eventSource = &message{name: "EventSource", fields: []field{
		{name: "component", num: 1, kind: kString, omitZero: true},
		{name: "host", num: 2, kind: kString, omitZero: true},
	}}
	event = &message{name: "Event", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "involvedObject", num: 2, kind: kMessage, msg: objectReference},
		{name: "reason", num: 3, kind: kString, omitZero: true},
		{name: "message", num: 4, kind: kString, omitZero: true},
		{name: "source", num: 5, kind: kMessage, msg: eventSource},
		{name: "firstTimestamp", num: 6, kind: kTime},
		{name: "lastTimestamp", num: 7, kind: kTime},
		{name: "count", num: 8, kind: kInt32, omitZero: true},
		{name: "type", num: 9, kind: kString, omitZero: true},
		{name: "eventTime", num: 10, kind: kMicroTime},
		{name: "series", num: 11, kind: kMessage, pres: pointer, msg: &message{name: "EventSeries", fields: []field{
			{name: "count", num: 1, kind: kInt32, omitZero: true},
			{name: "lastObservedTime", num: 2, kind: kMicroTime},
		}}},
		{name: "action", num: 12, kind: kString, omitZero: true},
		{name: "related", num: 13, kind: kMessage, pres: pointer, msg: objectReference},
		{name: "reportingComponent", num: 14, kind: kString},
		{name: "reportingInstance", num: 15, kind: kString},
	}}
)

// events.k8s.io/v1 messages (k8s.io/api events/v1/generated.proto).
var eventV1 = &message{name: "Event", typeMeta: true, fields: []field{
	{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
	{name: "eventTime", num: 2, kind: kMicroTime},
	{name: "series", num: 3, kind: kMessage, pres: pointer, msg: &message{name: "EventSeries", fields: []field{
		{name: "count", num: 1, kind: kInt32},
		{name: "lastObservedTime", num: 2, kind: kMicroTime},
	}}},
	{name: "reportingController", num: 4, kind: kString, omitZero: true},
	{name: "reportingInstance", num: 5, kind: kString, omitZero: true},
	{name: "action", num: 6, kind: kString, omitZero: true},
	{name: "reason", num: 7, kind: kString, omitZero: true},
	{name: "regarding", num: 8, kind: kMessage, msg: objectReference},
	{name: "related", num: 9, kind: kMessage, pres: pointer, msg: objectReference},
	{name: "note", num: 10, kind: kString, omitZero: true},
	{name: "type", num: 11, kind: kString, omitZero: true},
	{name: "deprecatedSource", num: 12, kind: kMessage, msg: eventSource},
	{name: "deprecatedFirstTimestamp", num: 13, kind: kTime},
	{name: "deprecatedLastTimestamp", num: 14, kind: kTime},
	{name: "deprecatedCount", num: 15, kind: kInt32, omitZero: true},
}}

// coordination/v1 messages (k8s.io/api coordination/v1/generated.proto).
var lease = &message{name: "Lease", typeMeta: true, fields: []field{
	{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
	{name: "spec", num: 2, kind: kMessage, msg: &message{name: "LeaseSpec", fields: []field{
		{name: "holderIdentity", num: 1, kind: kString, pres: pointer},
		{name: "leaseDurationSeconds", num: 2, kind: kInt32, pres: pointer},
		{name: "acquireTime", num: 3, kind: kMicroTime, pres: pointer},
		{name: "renewTime", num: 4, kind: kMicroTime, pres: pointer},
		{name: "leaseTransitions", num: 5, kind: kInt32, pres: pointer},
		{name: "strategy", num: 6, kind: kString, pres: pointer},
		{name: "preferredHolder", num: 7, kind: kString, pres: pointer},
	}}},
}}

// rbac/v1 messages (k8s.io/api rbac/v1/generated.proto), with the meta/v1
// LabelSelector of aggregation rules.
var (
	policyRule = &message{name: "PolicyRule", fields: []field{
		{name: "verbs", num: 1, kind: kString, pres: repeated},
		{name: "apiGroups", num: 2, kind: kString, pres: repeated, omitZero: true},
		{name: "resources", num: 3, kind: kString, pres: repeated, omitZero: true},
		{name: "resourceNames", num: 4, kind: kString, pres: repeated, omitZero: true},
		{name: "nonResourceURLs", num: 5, kind: kString, pres: repeated, omitZero: true},
	}}
	subject = &message{name: "Subject", fields: []field{
		{name: "kind", num: 1, kind: kString},
		{name: "apiGroup", num: 2, kind: kString, omitZero: true},
		{name: "name", num: 3, kind: kString},
		{name: "namespace", num: 4, kind: kString, omitZero: true},
	}}
	roleRef = &message{name: "RoleRef", fields: []field{
		{name: "apiGroup", num: 1, kind: kString},
		{name: "kind", num: 2, kind: kString},
		{name: "name", num: 3, kind: kString},
	}}
	labelSelector = &message{name: "LabelSelector", fields: []field{
		{name: "matchLabels", num: 1, kind: kStringMap, omitZero: true},
		{name: "matchExpressions", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: &message{name: "LabelSelectorRequirement", fields: []field{
			{name: "key", num: 1, kind: kString},
			{name: "operator", num: 2, kind: kString},
			{name: "values", num: 3, kind: kString, pres: repeated, omitZero: true},
		}}},
	}}
	role = &message{name: "Role", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "rules", num: 2, kind: kMessage, pres: repeated, msg: policyRule},
	}}
	clusterRole = &message{name: "ClusterRole", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "rules", num: 2, kind: kMessage, pres: repeated, msg: policyRule},
		{name: "aggregationRule", num: 3, kind: kMessage, pres: pointer, msg: &message{name: "AggregationRule", fields: []field{
			{name: "clusterRoleSelectors", num: 1, kind: kMessage, pres: repeated, omitZero: true, msg: labelSelector},
		}}},
	}}
	roleBinding        = binding("RoleBinding")
	clusterRoleBinding = binding("ClusterRoleBinding")
)

// binding is the message of RoleBinding and ClusterRoleBinding, which differ
// only in name.
func binding(name string) *message {
	return &message{name: name, typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "subjects", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: subject},
		{name: "roleRef", num: 3, kind: kMessage, msg: roleRef},
	}}
}

// authentication/v1 messages (k8s.io/api authentication/v1/generated.proto):
// the TokenRequest clients post to serviceaccounts/<name>/token.
var tokenRequest = &message{name: "TokenRequest", typeMeta: true, fields: []field{
	{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
	{name: "spec", num: 2, kind: kMessage, msg: &message{name: "TokenRequestSpec", fields: []field{
		{name: "audiences", num: 1, kind: kString, pres: repeated},
		{name: "boundObjectRef", num: 3, kind: kMessage, pres: pointer, null: true, msg: &message{name: "BoundObjectReference", fields: []field{
			{name: "kind", num: 1, kind: kString, omitZero: true},
			{name: "apiVersion", num: 2, kind: kString, omitZero: true},
			{name: "name", num: 3, kind: kString, omitZero: true},
			{name: "uid", num: 4, kind: kString, omitZero: true},
		}}},
		{name: "expirationSeconds", num: 4, kind: kInt64, pres: pointer, null: true},
	}}},
	{name: "status", num: 3, kind: kMessage, msg: &message{name: "TokenRequestStatus", fields: []field{
		{name: "token", num: 1, kind: kString},
		{name: "expirationTimestamp", num: 2, kind: kTime},
	}}},
}}

// autoscaling/v1 Scale (k8s.io/api autoscaling/v1 generated.proto): what the
// scale subresource of a custom resource reads and writes.
var scaleMessage = &message{name: "Scale", typeMeta: true, fields: []field{
	{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
	{name: "spec", num: 2, kind: kMessage, msg: &message{name: "ScaleSpec", fields: []field{
		{name: "replicas", num: 1, kind: kInt32, omitZero: true},
	}}},
	{name: "status", num: 3, kind: kMessage, msg: &message{name: "ScaleStatus", fields: []field{
		{name: "replicas", num: 1, kind: kInt32},
		{name: "selector", num: 2, kind: kString, omitZero: true},
	}}},
}}

// meta.k8s.io's metadata-only view of any object, which clients ask for
// with as=PartialObjectMetadata (k8s.io/apimachinery meta/v1 and v1beta1
// generated.proto). v1beta1's list numbers its fields the other way round.
var (
	partialObjectMetadata = &message{name: "PartialObjectMetadata", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
	}}
	partialObjectMetadataListV1beta1 = &message{name: "PartialObjectMetadataList", typeMeta: true, fields: []field{
		{name: "items", num: 1, kind: kMessage, pres: repeated, msg: partialObjectMetadata},
		{name: "metadata", num: 2, kind: kMessage, msg: listMeta},
	}}
)

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

// list returns the List message of item: ListMeta and a JSON items array that
// is null, not left out, when empty (the Go field lacks omitempty).
func list(item *message) *message {
	return &message{name: item.name + "List", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: listMeta},
		{name: "items", num: 2, kind: kMessage, pres: repeated, msg: item},
	}}
}

// groupKinds are the built-in kinds by apiVersion, then by kind.
var groupKinds = map[string]map[string]*message{
	"v1": kindTable(namespace, list(namespace), configMap, list(configMap),
		secret, list(secret), event, list(event), serviceAccount, list(serviceAccount)),
	"coordination.k8s.io/v1": kindTable(lease, list(lease)),
	"events.k8s.io/v1":       kindTable(eventV1, list(eventV1)),
	"rbac.authorization.k8s.io/v1": kindTable(role, list(role), clusterRole, list(clusterRole),
		roleBinding, list(roleBinding), clusterRoleBinding, list(clusterRoleBinding)),
	"authorization.k8s.io/v1":  authorizationKinds,
	"authentication.k8s.io/v1": authenticationKinds,
	"apiextensions.k8s.io/v1":  kindTable(crd, list(crd)),
	"admissionregistration.k8s.io/v1": kindTable(mutatingWebhookConfiguration, list(mutatingWebhookConfiguration),
		validatingWebhookConfiguration, list(validatingWebhookConfiguration),
		validatingAdmissionPolicy, list(validatingAdmissionPolicy), validatingAdmissionPolicyBinding, list(validatingAdmissionPolicyBinding)),
	"autoscaling/v1":      kindTable(scaleMessage),
	"meta.k8s.io/v1":      kindTable(partialObjectMetadata, list(partialObjectMetadata)),
	"meta.k8s.io/v1beta1": kindTable(partialObjectMetadata, partialObjectMetadataListV1beta1),
}

// metaKinds are registered in every group version, as Kubernetes registers
// them with metav1.AddToGroupVersion, so any apiVersion is accepted.
var metaKinds = kindTable(status, deleteOptions)

func kindTable(msgs ...*message) map[string]*message {
	t := make(map[string]*message, len(msgs))
	for _, m := range msgs {
		t[m.name] = m
	}
	return t
}

// lookup returns the message of apiVersion and kind, or nil.
func lookup(apiVersion, kind string) *message {
	if m := metaKinds[kind]; m != nil && apiVersion != "" {
		return m
	}
	if m := dataKinds()[apiVersion][kind]; m != nil {
		return m
	}
	return groupKinds[apiVersion][kind]
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
