package protobuf

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
)

// docs are objects in the JSON form Decode returns (as encoding/json writes
// k8s.io/api types), so that Decode(Encode(doc)) must give doc back.
var docs = map[string]string{
	"minimal configmap": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`,
	"empty namespace":   `{"apiVersion":"v1","kind":"Namespace","metadata":{},"spec":{},"status":{}}`,
	"namespace": `{"apiVersion":"v1","kind":"Namespace",
		"metadata":{"name":"ns","uid":"u-1","resourceVersion":"42","generation":3,
			"creationTimestamp":"2024-05-06T07:08:09Z","deletionTimestamp":"2024-05-07T00:00:00Z",
			"deletionGracePeriodSeconds":0,"labels":{"a":"1","b":"","é":"ü"},"annotations":{"x":"y"},
			"finalizers":["f1",""],
			"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u","controller":true,"blockOwnerDeletion":false},
				{"apiVersion":"","kind":"","name":"","uid":""}],
			"managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-01-01T00:00:00Z",
				"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:a":{}}}},"subresource":"status"}]},
		"spec":{"finalizers":["kubernetes"]},
		"status":{"phase":"Terminating","conditions":[
			{"type":"NamespaceDeletionDiscoveryFailure","status":"True","lastTransitionTime":"1970-01-01T00:00:00Z","reason":"r","message":"m"},
			{"type":"","status":"","lastTransitionTime":null}]}}`,
	"configmap": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"d"},
		"data":{"k":"v","empty":"","z":"multi\nline"},"binaryData":{"b":"AAEC/w==","e":""},"immutable":false}`,
	"secret": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"type":"Opaque",
		"data":{"tls.key":"c2VjcmV0"},"stringData":{"p":"q"},"immutable":true}`,
	"event": `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e.1","namespace":"d"},
		"involvedObject":{"kind":"Pod","namespace":"d","name":"p","uid":"u","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec.containers{c}"},
		"reason":"Started","message":"hi","source":{"component":"kubelet","host":"n1"},
		"firstTimestamp":"2024-01-01T00:00:00Z","lastTimestamp":"2024-01-01T00:00:05Z","count":-2,"type":"Normal",
		"eventTime":"2024-01-01T00:00:00.123456Z","series":{"count":5,"lastObservedTime":"2024-01-01T00:01:00.000001Z"},
		"action":"Start","related":{"name":"r"},"reportingComponent":"kubelet","reportingInstance":"n1"}`,
	"empty event": `{"apiVersion":"v1","kind":"Event","metadata":{},"involvedObject":{},"source":{},
		"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":""}`,
	"lease": `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"d"},
		"spec":{"holderIdentity":"a_1","leaseDurationSeconds":15,"acquireTime":"2024-01-01T00:00:00.000000Z",
			"renewTime":"2024-01-01T00:00:05.123456Z","leaseTransitions":0,"strategy":"OldestEmulationVersion","preferredHolder":""}}`,
	"empty lease": `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{},"spec":{}}`,
	"cluster role": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"system:view"},
		"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods","pods/log"],"resourceNames":["a"]},{"verbs":null,"nonResourceURLs":["/metrics"]}],
		"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"k","operator":"In","values":["v"]},{"key":"x","operator":"Exists"}]},{}]}}`,
	"empty role": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{},"rules":null}`,
	"role binding": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"d"},
		"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"jane"},{"kind":"ServiceAccount","name":"default","namespace":"d"}],
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}}`,
	"empty cluster role binding": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{},"roleRef":{"apiGroup":"","kind":"","name":""}}`,
	"empty list":                 `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":null}`,
	"list": `{"apiVersion":"v1","kind":"ConfigMapList",
		"metadata":{"selfLink":"/x","resourceVersion":"9","continue":"tok","remainingItemCount":-1,"shardInfo":{"selector":""}},
		"items":[{"metadata":{"name":"a"}},{"metadata":{}}]}`,
	"status": `{"apiVersion":"v1","kind":"Status","metadata":{},"status":"Failure","message":"m","reason":"NotFound",
		"details":{"name":"n","group":"g","kind":"k","uid":"u","retryAfterSeconds":1,
			"causes":[{"reason":"FieldValueInvalid","message":"bad","field":"metadata.name"},{}]},"code":404}`,
	"delete options": `{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions","gracePeriodSeconds":9007199254740992,
		"preconditions":{"uid":"","resourceVersion":"5"},"orphanDependents":false,"propagationPolicy":"Foreground",
		"dryRun":["All"],"ignoreStoreReadErrorWithClusterBreakingPotential":true}`,
}

func parse(t testing.TB, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("test document: %v", err)
	}
	return obj
}

func TestRoundTrip(t *testing.T) {
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			want := parse(t, doc)
			data, err := Encode(want)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Decode(Encode(doc)) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeGolden checks bytes worked out by hand from generated.pb.go.
func TestEncodeGolden(t *testing.T) {
	data, err := Encode(parse(t, docs["minimal configmap"]))
	if err != nil {
		t.Fatal(err)
	}
	want := "6b387300" + // k8s\x00
		"0a0f" + "0a027631" + "1209" + hex.EncodeToString([]byte("ConfigMap")) + // typeMeta
		"1213" + "0a11" + // raw: ConfigMap{metadata: ObjectMeta{...}}
		"0a0161" + "1200" + "1a00" + "2200" + "2a00" + "3200" + "3800" + "4200" +
		"1a00" + "2200" // contentEncoding, contentType
	if diff := cmp.Diff(want, hex.EncodeToString(data)); diff != "" {
		t.Errorf("Encode (-want +got):\n%s", diff)
	}
}

// TestEncodeNormalizes covers inputs Encode accepts that are not in the form
// Decode returns.
func TestEncodeNormalizes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"missing structs", `{"apiVersion":"v1","kind":"Namespace"}`, docs["empty namespace"]},
		{"nulls", `{"apiVersion":"v1","kind":"Event","metadata":null,"involvedObject":null,"source":null,
			"reason":null,"count":null,"series":null,"reportingComponent":null}`, docs["empty event"]},
		{"zero values omitted", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"","generation":0,
			"creationTimestamp":null,"labels":{},"finalizers":[]},"type":"","data":{}}`,
			`{"apiVersion":"v1","kind":"Secret","metadata":{}}`},
		{"null map values", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"a":null},"binaryData":{"b":null}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"a":""},"binaryData":{"b":""}}`},
		{"null pointers", `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":null,"preconditions":null}`,
			`{"apiVersion":"v1","kind":"DeleteOptions"}`},
		{"empty items", `{"apiVersion":"v1","kind":"EventList","items":[]}`,
			`{"apiVersion":"v1","kind":"EventList","metadata":{},"items":null}`},
		{"typed items", `{"apiVersion":"v1","kind":"NamespaceList","items":[{"apiVersion":"v1","kind":"Namespace"}]}`,
			`{"apiVersion":"v1","kind":"NamespaceList","metadata":{},"items":[{"metadata":{},"spec":{},"status":{}}]}`},
		{"times", `{"apiVersion":"v1","kind":"Event","firstTimestamp":"2024-01-01T01:00:00.9+01:00",
			"lastTimestamp":"0001-01-01T00:00:00Z","eventTime":"2024-01-01T01:00:00.123456+01:00"}`,
			`{"apiVersion":"v1","kind":"Event","metadata":{},"involvedObject":{},"source":{},
			"firstTimestamp":"2024-01-01T00:00:00Z","lastTimestamp":null,"eventTime":"2024-01-01T00:00:00.123456Z",
			"reportingComponent":"","reportingInstance":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Encode(parse(t, tt.in))
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(parse(t, tt.want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodeNumberForms(t *testing.T) {
	want, err := Encode(parse(t, `{"apiVersion":"v1","kind":"Status","code":404,"details":{"retryAfterSeconds":-1}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []any{json.Number("404"), 404, int64(404), float64(404)} {
		obj := map[string]any{"apiVersion": "v1", "kind": "Status", "code": code,
			"details": map[string]any{"retryAfterSeconds": -1}}
		got, err := Encode(obj)
		if err != nil {
			t.Fatalf("code %T: %v", code, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("code %T (-want +got):\n%s", code, diff)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      error
		msg       string // part of the error's text
	}{
		{"no kind", `{"apiVersion":"v1"}`, ErrUnsupported, `kind ""`},
		{"unknown kind", `{"apiVersion":"v1","kind":"Widget"}`, ErrUnsupported, `"Widget"`},
		{"core kind in another group", `{"apiVersion":"apps/v1","kind":"ConfigMap"}`, ErrUnsupported, `"apps/v1"`},
		{"meta kind without apiVersion", `{"kind":"Status"}`, ErrUnsupported, `"Status"`},
		{"unknown field", `{"apiVersion":"v1","kind":"ConfigMap","spec":{}}`, ErrInvalid, `unknown fields ["spec"] in ConfigMap`},
		{"unknown nested field", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"nam":"a"}}`, ErrInvalid, `metadata: unknown fields ["nam"] in ObjectMeta`},
		{"typeMeta in nested message", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"kind":"a"}}`, ErrInvalid, `unknown fields ["kind"]`},
		{"string type", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":1}}`, ErrInvalid, `name: want a string, got float64`},
		{"map value type", `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":true}}`, ErrInvalid, `data: key "a": want a string, got bool`},
		{"map type", `{"apiVersion":"v1","kind":"ConfigMap","data":["a"]}`, ErrInvalid, `data: want an object`},
		{"array type", `{"apiVersion":"v1","kind":"Namespace","spec":{"finalizers":"a"}}`, ErrInvalid, `finalizers: want an array`},
		{"array element", `{"apiVersion":"v1","kind":"Namespace","spec":{"finalizers":["a",2]}}`, ErrInvalid, `finalizers: [1]: want a string`},
		{"object type", `{"apiVersion":"v1","kind":"Namespace","spec":"a"}`, ErrInvalid, `spec: want an object`},
		{"bool type", `{"apiVersion":"v1","kind":"ConfigMap","immutable":"true"}`, ErrInvalid, `immutable: want a boolean`},
		{"int type", `{"apiVersion":"v1","kind":"Status","code":"404"}`, ErrInvalid, `code: want an integer`},
		{"fraction", `{"apiVersion":"v1","kind":"Status","code":1.5}`, ErrInvalid, `1.5 is not an int64`},
		{"int32 overflow", `{"apiVersion":"v1","kind":"Status","code":2147483648}`, ErrInvalid, `overflows int32`},
		{"int64 overflow", `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":1e19}`, ErrInvalid, `is not an int64`},
		{"bad base64", `{"apiVersion":"v1","kind":"Secret","data":{"k":"!!"}}`, ErrInvalid, `data: key "k": bytes`},
		{"base64 type", `{"apiVersion":"v1","kind":"Secret","data":{"k":1}}`, ErrInvalid, `want a base64 string`},
		{"bad time", `{"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":"yesterday"}}`, ErrInvalid, `creationTimestamp: parsing time`},
		{"empty time", `{"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":""}}`, ErrInvalid, `creationTimestamp`},
		{"time type", `{"apiVersion":"v1","kind":"Namespace","metadata":{"creationTimestamp":0}}`, ErrInvalid, `want an RFC 3339 string`},
		{"micro time without micros", `{"apiVersion":"v1","kind":"Event","eventTime":"2024-01-01T00:00:00Z"}`, ErrInvalid, `eventTime`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Encode(parse(t, tt.doc))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Encode error = %v, want %v containing %q", err, tt.want, tt.msg)
			}
		})
	}
}

// envelope wraps raw in the envelope of apiVersion and kind.
func envelope(apiVersion, kind string, raw []byte) []byte {
	b := appendBytes(append([]byte(nil), magic...), 1, appendString(appendString(nil, 1, apiVersion), 2, kind))
	return appendString(appendString(appendBytes(b, 2, raw), 3, ""), 4, "")
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"json", []byte(`{"kind":"Status"}`), ErrNotProtobuf, ""},
		{"empty", nil, ErrNotProtobuf, ""},
		{"truncated envelope", []byte("k8s\x00\x0a\x05"), ErrMalformed, "Unknown"},
		{"unsupported kind", envelope("v1", "Widget", nil), ErrUnsupported, `"Widget"`},
		{"content encoding", append(envelope("v1", "Status", nil), 0x1a, 1, 'g'), ErrMalformed, `content encoding "g"`},
		{"truncated object", envelope("v1", "Status", []byte{0x12, 5, 'a'}), ErrMalformed, "Status field 2"},
		{"wrong wire type", envelope("v1", "Status", appendVarint(nil, 2, 1)), ErrMalformed, "Status.status has wire type 0"},
		{"bad tag", envelope("v1", "Status", []byte{0x00}), ErrMalformed, "Status"},
		{"end group", envelope("v1", "Status", []byte{0x0c}), ErrMalformed, "Status"},
		{"nested", envelope("v1", "ConfigMap", appendBytes(nil, 1, appendVarint(nil, 1, 0))), ErrMalformed,
			"decoding v1 ConfigMap: metadata: protobuf: malformed data: ObjectMeta.name"},
		{"map entry", envelope("v1", "ConfigMap", appendBytes(nil, 2, appendVarint(nil, 2, 0))), ErrMalformed, "data: "},
		{"time", envelope("v1", "Namespace", appendBytes(nil, 1, appendBytes(nil, 8, []byte{0x0a, 0}))), ErrMalformed,
			"creationTimestamp: protobuf: malformed data: Timestamp.seconds"},
		{"int64 range", envelope("v1", "Namespace", appendBytes(nil, 1, appendVarint(nil, 7, 1<<53+1))), ErrNotRepresentable,
			"generation"},
		{"negative int64 range", envelope("v1", "DeleteOptions", appendVarint(nil, 1, 1<<63)), ErrNotRepresentable,
			"gracePeriodSeconds"},
		{"year", envelope("v1", "Namespace", appendBytes(nil, 1, appendBytes(nil, 8, appendVarint(nil, 1, 1<<40)))),
			ErrNotRepresentable, "year"},
		{"fieldsV1", envelope("v1", "Namespace", appendBytes(nil, 1, appendBytes(nil, 17,
			appendBytes(nil, 7, appendString(nil, 1, "{"))))), ErrMalformed, "fieldsV1: protobuf: malformed data: raw bytes are not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Decode error = %v, want %v containing %q", err, tt.want, tt.msg)
			}
		})
	}
}

// TestDecodeWire covers wire forms Encode never writes.
func TestDecodeWire(t *testing.T) {
	meta := func(fields ...[]byte) []byte { return appendBytes(nil, 1, concatBytes(fields...)) }
	tests := []struct {
		name string
		raw  []byte
		kind string
		want string
	}{
		{"unknown fields skipped", concatBytes(appendVarint(nil, 99, 7), appendString(nil, 3, "m"),
			fixed32Field(50)), "Status", `{"metadata":{},"message":"m"}`},
		{"last scalar wins", concatBytes(appendString(nil, 2, "a"), appendString(nil, 2, "b")), "Status",
			`{"metadata":{},"status":"b"}`},
		{"messages merge", concatBytes(meta(appendString(nil, 1, "n")), meta(appendString(nil, 3, "ns"))), "ConfigMap",
			`{"metadata":{"name":"n","namespace":"ns"}}`},
		{"map entries merge, missing parts empty", concatBytes(appendBytes(nil, 3, appendString(nil, 1, "k")),
			appendBytes(nil, 2, nil), appendBytes(nil, 2, appendString(nil, 2, "v"))), "ConfigMap",
			`{"metadata":{},"binaryData":{"k":""},"data":{"":"v"}}`},
		{"int32 truncates", appendVarint(nil, 6, 1<<32+5), "Status", `{"metadata":{},"code":5}`},
		{"bool is nonzero", appendVarint(nil, 4, 2), "ConfigMap", `{"metadata":{},"immutable":true}`},
		{"time drops nanos", meta(appendBytes(nil, 8, appendVarint(appendVarint(nil, 1, 60), 2, 999))), "Namespace",
			`{"metadata":{"creationTimestamp":"1970-01-01T00:01:00Z"},"spec":{},"status":{}}`},
		{"empty deletionTimestamp is null", meta(appendBytes(nil, 9, nil)), "Namespace",
			`{"metadata":{"deletionTimestamp":null},"spec":{},"status":{}}`},
		{"zero-time seconds", meta(appendBytes(nil, 8, appendVarint(nil, 1, uint64(zeroUnix)))), "Namespace",
			`{"metadata":{},"spec":{},"status":{}}`},
		{"micro time truncates", appendBytes(nil, 10, appendVarint(appendVarint(nil, 1, 0), 2, 1999)), "Event",
			`{"metadata":{},"involvedObject":{},"source":{},"firstTimestamp":null,"lastTimestamp":null,
			"eventTime":"1970-01-01T00:00:00.000001Z","reportingComponent":"","reportingInstance":""}`},
		{"empty fieldsV1 is null", meta(appendBytes(nil, 17, appendBytes(nil, 7, nil))), "Namespace",
			`{"metadata":{"managedFields":[{"fieldsV1":null}]},"spec":{},"status":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(envelope("v1", tt.kind, tt.raw))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := parse(t, tt.want)
			want["apiVersion"], want["kind"] = "v1", tt.kind
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// zeroUnix is the Unix time of Go's zero time, which metav1.Time treats as
// unset.
var zeroUnix = time.Time{}.Unix()

func concatBytes(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func fixed32Field(num protowire.Number) []byte {
	return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), 7)
}

func TestSupports(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             bool
	}{
		{"v1", "Namespace", true},
		{"v1", "NamespaceList", true},
		{"v1", "EventList", true},
		{"v1", "Status", true},
		{"meta.k8s.io/v1", "DeleteOptions", true},
		{"apps/v1", "DeleteOptions", true},
		{"coordination.k8s.io/v1", "Lease", true},
		{"coordination.k8s.io/v1", "LeaseList", true},
		{"v1", "Lease", false},
		{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", true},
		{"rbac.authorization.k8s.io/v1", "RoleList", true},
		{"rbac.authorization.k8s.io/v1beta1", "Role", false},
		{"events.k8s.io/v1", "Event", true},
		{"events.k8s.io/v1beta1", "Event", false},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", true},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinitionList", true},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", false},
		{"v1", "Pod", true},
		{"apps/v1", "Deployment", true},
		{"v1", "Widget", false},
		{"v1", "WatchEvent", false},
		{"", "Status", false},
	}
	for _, tt := range tests {
		if got := Supports(tt.apiVersion, tt.kind); got != tt.want {
			t.Errorf("Supports(%q, %q) = %v, want %v", tt.apiVersion, tt.kind, got, tt.want)
		}
	}
}

// TestSchema checks the tables: fields in ascending number order, as
// gogo-protobuf writes them, with unique names and a message where needed.
func TestSchema(t *testing.T) {
	seen := map[*message]bool{}
	var check func(m *message)
	check = func(m *message) {
		if seen[m] {
			return
		}
		seen[m] = true
		if _, schema, _ := m.unionParts(); m.union && schema < 0 {
			t.Errorf("%s: a union without a schema", m.name)
		}
		names := map[string]bool{}
		for i, f := range m.fields {
			if i > 0 && f.num <= m.fields[i-1].num {
				t.Errorf("%s.%s: number %d not above %d", m.name, f.name, f.num, m.fields[i-1].num)
			}
			if names[f.name] {
				t.Errorf("%s.%s: duplicate name", m.name, f.name)
			}
			names[f.name] = true
			if (f.kind == kMessage) != (f.msg != nil) || (f.kind == kMessageMap) != (f.value != nil) {
				t.Errorf("%s.%s: kind %d with message %v", m.name, f.name, f.kind, f.msg)
			}
			if f.pres == pointer && f.omitZero && f.kind != kBytes {
				t.Errorf("%s.%s: a pointer omitZero, which only a []byte may be", m.name, f.name)
			}
			if f.msg != nil {
				check(f.msg)
			}
		}
	}
	for _, kinds := range data().kinds {
		for _, m := range kinds {
			check(m)
		}
	}
	for _, m := range crdKinds() {
		check(m)
	}
	check(unknownMsg)
	check(watchEventMsg)
}
