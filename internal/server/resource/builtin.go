package resource

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/api"
)

// Builtins returns the resources every server serves: namespaces,
// configmaps, secrets, events, serviceaccounts, leases, the RBAC kinds and
// customresourcedefinitions, each with its OpenAPI schema, and the access
// reviews (reviews.go). Each call returns new values, so servers never
// share them.
func Builtins() []*Resource {
	events := coreEvents()
	rs := []*Resource{
		{
			Version: "v1", Plural: "namespaces", Singular: "namespace", Kind: "Namespace", ListKind: "NamespaceList",
			ShortNames: []string{"ns"}, StrategicMerge: true, StatusSubresource: true, Prepare: prepareNamespace, ReturnDeletedObject: true, NoDeleteCollection: true,
			Columns:    []Column{column("Status", "string", "", "The status of the namespace", stringCell("status", "phase")), ageColumn()},
			FieldPaths: map[string][]string{"status.phase": {"status", "phase"}},
		},
		{
			Version: "v1", Plural: "configmaps", Singular: "configmap", Kind: "ConfigMap", ListKind: "ConfigMapList",
			ShortNames: []string{"cm"}, Namespaced: true, StrategicMerge: true, Validate: validateConfigMap,
			Columns: []Column{column("Data", "integer", "", "Number of data items", dataCount("data", "binaryData")), ageColumn()},
		},
		{
			Version: "v1", Plural: "secrets", Singular: "secret", Kind: "Secret", ListKind: "SecretList",
			Namespaced: true, StrategicMerge: true, Validate: validateSecret, Prepare: prepareSecret,
			Columns: []Column{
				column("Type", "string", "", "The type of the secret", stringCell("type")),
				column("Data", "integer", "", "Number of data items", dataCount("data")),
				ageColumn(),
			},
			FieldPaths: map[string][]string{"type": {"type"}},
		},
		events,
		serviceAccounts(),
		{
			Group: "coordination.k8s.io", Version: "v1", Plural: "leases", Singular: "lease", Kind: "Lease", ListKind: "LeaseList",
			Namespaced: true, StrategicMerge: true, Validate: validateLease,
			Columns: []Column{column("Holder", "string", "", "holderIdentity contains the identity of the holder of a current lease.", stringCell("spec", "holderIdentity")), ageColumn()},
		},
		eventsV1(events),
		rbacKind("roles", "role", "Role", true),
		rbacKind("clusterroles", "clusterrole", "ClusterRole", false),
		rbacKind("rolebindings", "rolebinding", "RoleBinding", true),
		rbacKind("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false),
		{
			Group: "apiextensions.k8s.io", Version: "v1", Plural: "customresourcedefinitions", Singular: "customresourcedefinition",
			Kind: "CustomResourceDefinition", ListKind: "CustomResourceDefinitionList", ShortNames: []string{"crd", "crds"},
			Categories: []string{"api-extensions"}, StatusSubresource: true, Generation: true,
			Columns: []Column{column("Created At", "date", "", "When the definition was created", stringCell("metadata", "creationTimestamp"))},
		},
	}
	rs = append(rs, webhookConfigurations()...)
	rs = append(rs, admissionPolicies()...)
	rs = append(rs, mutatingPolicies()...)
	rs = append(rs, reviewKinds()...)
	for _, r := range rs {
		r.Schema = builtinSchema(r.Group, r.Version, r.Kind)
	}
	return rs
}

// MetadataNameLabel is the label kube-apiserver gives every namespace, its
// name as value, so that namespace selectors can pick namespaces by name.
const MetadataNameLabel = "kubernetes.io/metadata.name"

// prepareNamespace gives a new namespace phase Active and the kubernetes
// finalizer, as kube's strategy does (status is a subresource after that),
// and every namespace written the kubernetes.io/metadata.name label, as
// kube's strategy Canonicalize and its v1 defaulting do.
func prepareNamespace(obj, old api.Object) {
	if old == nil {
		obj["status"] = map[string]any{"phase": "Active"}
		obj["spec"] = map[string]any{"finalizers": []any{"kubernetes"}}
	}
	md := obj.Metadata()
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[MetadataNameLabel] = obj.Name()
}

// prepareSecret folds stringData into data (base64) and defaults the type,
// as kube's secret strategy does; stringData is never stored.
func prepareSecret(obj, _ api.Object) {
	if sd, ok := obj["stringData"].(map[string]any); ok {
		data, _ := obj["data"].(map[string]any)
		if data == nil {
			data = map[string]any{}
		}
		for k, v := range sd {
			if s, ok := v.(string); ok {
				data[k] = base64.StdEncoding.EncodeToString([]byte(s))
			}
		}
		obj["data"] = data
	}
	delete(obj, "stringData")
	if t, _ := obj["type"].(string); t == "" {
		obj["type"] = "Opaque"
	}
}

func column(name, typ, format, description string, cell func(api.Object) any) Column {
	return Column{TableColumnDefinition: api.TableColumnDefinition{Name: name, Type: typ, Format: format, Description: description}, Cell: cell}
}

func ageColumn() Column {
	return column("Age", "string", "", "Time since the object was created", since("metadata", "creationTimestamp"))
}

// Path returns the value at path in obj, or nil.
func Path(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func pathString(path ...string) func(api.Object) string {
	return func(o api.Object) string {
		s, _ := Path(o, path...).(string)
		return s
	}
}

func stringCell(path ...string) func(api.Object) any {
	f := pathString(path...)
	return func(o api.Object) any { return f(o) }
}

func dataCount(fields ...string) func(api.Object) any {
	return func(o api.Object) any {
		n := 0
		for _, f := range fields {
			m, _ := o[f].(map[string]any)
			n += len(m)
		}
		return n
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// configKey is what kube accepts as a ConfigMap or Secret data key.
var configKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// maxDataSize is kube's limit on a ConfigMap's or Secret's data (1 MiB).
const maxDataSize = 1 << 20

func validateConfigMap(o api.Object) []api.StatusCause {
	var causes []api.StatusCause
	size := 0
	causes = append(causes, checkDataMap(o, "data", false, &size)...)
	causes = append(causes, checkDataMap(o, "binaryData", true, &size)...)
	data, _ := o["data"].(map[string]any)
	bin, _ := o["binaryData"].(map[string]any)
	for k := range bin {
		if _, dup := data[k]; dup {
			causes = append(causes, invalid("data["+k+"]", "duplicate of key present in binaryData"))
		}
	}
	if size > maxDataSize {
		causes = append(causes, api.StatusCause{Type: api.CauseTypeFieldValueTooLong, Field: "data", Message: fmt.Sprintf("Too long: must have at most %d bytes", maxDataSize)})
	}
	return causes
}

func validateSecret(o api.Object) []api.StatusCause {
	size := 0
	causes := checkDataMap(o, "data", true, &size)
	if t, ok := o["type"]; ok {
		if _, isString := t.(string); !isString {
			causes = append(causes, invalid("type", "must be a string"))
		}
	}
	if size > maxDataSize {
		causes = append(causes, api.StatusCause{Type: api.CauseTypeFieldValueTooLong, Field: "data", Message: fmt.Sprintf("Too long: must have at most %d bytes", maxDataSize)})
	}
	return causes
}

// checkDataMap validates a map of data keys to string values (base64 when
// binary) and adds the decoded size to size.
func checkDataMap(o api.Object, field string, binary bool, size *int) []api.StatusCause {
	v, ok := o[field]
	if !ok || v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return []api.StatusCause{invalid(field, "must be an object of strings")}
	}
	var causes []api.StatusCause
	for k, val := range m {
		f := field + "[" + k + "]"
		if len(k) > 253 || !configKey.MatchString(k) {
			causes = append(causes, invalid(f, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"))
		}
		s, ok := val.(string)
		if !ok {
			causes = append(causes, invalid(f, "must be a string"))
			continue
		}
		if !binary {
			*size += len(s)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			causes = append(causes, invalid(f, "must be base64-encoded: "+err.Error()))
		}
		*size += len(b)
	}
	return causes
}

// rfc3339Micro is metav1.RFC3339Micro, the only form a MicroTime parses
// from: exactly six fractional digits.
const rfc3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// validateLease checks the types of a lease's spec, which kube's typed
// decoder enforces and our protobuf encoder needs (so that a stored lease
// can always be read), and kube's rules that users meet first: a duration
// above zero and a transition count not below it, when set.
func validateLease(o api.Object) []api.StatusCause {
	spec, ok := o["spec"].(map[string]any)
	if !ok {
		if o["spec"] != nil {
			return []api.StatusCause{invalid("spec", "must be an object")}
		}
		return nil
	}
	var causes []api.StatusCause
	for _, f := range []string{"holderIdentity", "strategy", "preferredHolder"} {
		if v := spec[f]; v != nil {
			if _, ok := v.(string); !ok {
				causes = append(causes, invalid("spec."+f, "must be a string"))
			}
		}
	}
	for _, f := range []string{"acquireTime", "renewTime"} {
		if v := spec[f]; v != nil {
			s, _ := v.(string)
			if _, err := time.Parse(rfc3339Micro, s); err != nil {
				causes = append(causes, invalid("spec."+f, fmt.Sprintf("%q: must be a time in RFC 3339 with microseconds (%s)", s, rfc3339Micro)))
			}
		}
	}
	for _, f := range []struct {
		name, rule string
		min        int64
	}{{"leaseDurationSeconds", "must be greater than 0", 1}, {"leaseTransitions", "must be greater than or equal to 0", 0}} {
		v := spec[f.name]
		if v == nil {
			continue
		}
		i, ok := int32Value(v)
		switch {
		case !ok:
			causes = append(causes, invalid("spec."+f.name, fmt.Sprintf("%v: must be a 32-bit integer", v)))
		case i < f.min:
			causes = append(causes, invalid("spec."+f.name, fmt.Sprintf("%d: %s", i, f.rule)))
		}
	}
	return causes
}

// int32Value reads an integer in int32's range from a number as JSON
// (json.Number) or protobuf (float64) bodies decode it, or a default set.
func int32Value(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), n >= math.MinInt32 && n <= math.MaxInt32
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 32)
		return i, err == nil
	case float64:
		return int64(n), n == math.Trunc(n) && n >= math.MinInt32 && n <= math.MaxInt32
	}
	return 0, false
}

// invalid is a FieldValueInvalid cause.
func invalid(field, msg string) api.StatusCause {
	return api.StatusCause{Type: api.CauseTypeFieldValueInvalid, Field: field, Message: "Invalid value: " + msg}
}
