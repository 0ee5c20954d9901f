package resource

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/validation"
)

// Builtins returns the resources every server serves: those of the
// group-versions kube-apiserver serves by default (package kubespec), less
// NotServed, each named and scoped as kube's discovery lists it, with its
// verbs and, where kube has it, its status subresource. The kinds whose
// kube strategies do more than store what the schema allows have it added
// here, keyed by group/version/plural (behaviours), and kube's Go
// validation of the kinds package validation has. Each call returns new
// values, so servers never share them.
func Builtins() []*Resource {
	extras := map[GVR]*Resource{}
	for _, r := range behaviours() {
		extras[gvrOf(r)] = r
	}
	columns := printed()
	var rs []*Resource
	for _, list := range kubespec.Load().GroupVersions {
		group, version := splitGroupVersion(list.GroupVersion)
		subs := map[string][]string{}
		for _, d := range list.APIResources {
			if plural, sub, ok := strings.Cut(d.Name, "/"); ok {
				subs[plural] = append(subs[plural], sub)
			}
		}
		for _, d := range list.APIResources {
			gvr := GVR{group, version, d.Name}
			if _, skip := NotServed[gvr]; skip || strings.Contains(d.Name, "/") {
				continue
			}
			r := extras[gvr]
			if r == nil {
				r = &Resource{Group: group, Version: version, Plural: d.Name}
			}
			describe(r, d, subs[d.Name])
			if r.Validate == nil {
				r.Validate = validation.For(group, version, d.Name)
			}
			if r.ValidateUpdate == nil {
				r.ValidateUpdate = validation.ForUpdate(group, version, d.Name)
			}
			if r.ValidateCreate == nil {
				r.ValidateCreate = validation.ForCreate(group, version, d.Name)
			}
			if r.ValidateStatusUpdate == nil {
				r.ValidateStatusUpdate = validation.ForStatusUpdate(group, version, d.Name)
			}
			selectFields(r)
			if r.Columns == nil {
				r.Columns = columns[gvr]
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// behaviours are the built-in resources with more than their schema: Go
// validation, defaulting, printing, field selectors, storage quirks.
func behaviours() []*Resource {
	events := coreEvents()
	rs := []*Resource{
		{
			Version: "v1", Plural: "namespaces",
			Prepare: prepareNamespace, ReturnDeletedObject: true,
			Columns: []Column{column("Status", "string", "", "The status of the namespace", stringCell("status", "phase")), ageColumn()},
		},
		{
			Version: "v1", Plural: "configmaps",
			Validate: validateConfigMap,
			Columns:  []Column{column("Data", "string", "", doc("core.v1.ConfigMap", "data"), dataCount("data", "binaryData")), ageColumn()},
		},
		{
			Version: "v1", Plural: "secrets",
			Validate: validateSecret, Prepare: prepareSecret,
			Columns: []Column{
				column("Type", "string", "", doc("core.v1.Secret", "type"), stringCell("type")),
				column("Data", "string", "", doc("core.v1.Secret", "data"), dataCount("data")),
				ageColumn(),
			},
		},
		events,
		serviceAccounts(),
		{
			Group: "coordination.k8s.io", Version: "v1", Plural: "leases",
			Validate: validateLease,
			Columns:  []Column{column("Holder", "string", "", doc("coordination.v1.LeaseSpec", "holderIdentity"), stringCell("spec", "holderIdentity")), ageColumn()},
		},
		eventsV1(events),
		rbacKind("roles", "Role", true),
		rbacKind("clusterroles", "ClusterRole", false),
		rbacKind("rolebindings", "RoleBinding", true),
		rbacKind("clusterrolebindings", "ClusterRoleBinding", false),
		{
			Group: "apiextensions.k8s.io", Version: "v1", Plural: "customresourcedefinitions",
			Columns: []Column{column("Created At", "date", "", "When the definition was created", stringCell("metadata", "creationTimestamp"))},
		},
	}
	rs = append(rs, ingressClasses(), storageVersionMigrations())
	rs = append(rs, horizontalPodAutoscalers()...)
	rs = append(rs, webhookConfigurations()...)
	rs = append(rs, admissionPolicies()...)
	return append(rs, mutatingPolicies()...)
}

// describe gives r the names, scope, verbs and subresources discovery lists
// for it (subs: its subresources' names).
func describe(r *Resource, d api.APIResource, subs []string) {
	r.Singular, r.Kind, r.ListKind = d.SingularName, d.Kind, d.Kind+"List"
	r.ShortNames, r.Categories, r.Namespaced = slices.Clone(d.ShortNames), slices.Clone(d.Categories), d.Namespaced
	r.StorageVersionHash = d.StorageVersionHash
	r.CreateOnly = slices.Equal(d.Verbs, createOnlyVerbs)
	r.NoDeleteCollection = !r.CreateOnly && !slices.Contains(d.Verbs, "deletecollection")
	r.StatusSubresource = slices.Contains(subs, "status")
	statusKeeps(r)
	r.StrategicMerge = true // every kind with a Go type takes strategic merge patches
	r.Definition = kubespec.DefinitionName(r.Group, r.Version, r.Kind)
	r.Generation = generation[GVR{r.Group, r.Version, r.Plural}]
	for _, strategy := range strategies[GVR{r.Group, r.Version, r.Plural}] {
		strategy(r)
	}
}

func splitGroupVersion(gv string) (group, version string) {
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return g, v
	}
	return "", gv
}

// NotServed are the resources of the served group-versions that are no
// stored data, and why; docs/ARCHITECTURE.md lists them with the
// subresources not served.
var NotServed = map[GVR]string{
	{"", "v1", "componentstatuses"}: "computed from the health of kube's own components, which listwatch has not",
}

// generation are the resources whose kube strategy keeps
// metadata.generation (sets it to 1 in PrepareForCreate: pkg/registry/*/
// strategy.go, and apiextensions-apiserver's for CRDs).
var generation = map[GVR]bool{
	{"", "v1", "pods"}: true, {"", "v1", "podtemplates"}: true, {"", "v1", "replicationcontrollers"}: true,
	{"admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"}:         true,
	{"admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings"}:   true,
	{"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"}:     true,
	{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"}:       true,
	{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"}: true,
	{"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"}:   true,
	{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}:                 true,
	{"apps", "v1", "daemonsets"}:                                                true, {"apps", "v1", "deployments"}: true,
	{"apps", "v1", "replicasets"}: true, {"apps", "v1", "statefulsets"}: true,
	{"autoscaling", "v1", "horizontalpodautoscalers"}: true, {"autoscaling", "v2", "horizontalpodautoscalers"}: true,
	{"batch", "v1", "cronjobs"}: true, {"batch", "v1", "jobs"}: true,
	{"discovery.k8s.io", "v1", "endpointslices"}:                          true,
	{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas"}:                 true,
	{"flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"}: true,
	{"networking.k8s.io", "v1", "ingresses"}:                              true, {"networking.k8s.io", "v1", "ingressclasses"}: true,
	{"networking.k8s.io", "v1", "networkpolicies"}: true,
	{"policy", "v1", "poddisruptionbudgets"}:       true,
	{"resource.k8s.io", "v1", "deviceclasses"}:     true, {"resource.k8s.io", "v1", "devicetaintrules"}: true,
	{"resource.k8s.io", "v1", "resourceslices"}:    true,
	{"scheduling.k8s.io", "v1", "priorityclasses"}: true,
}

// MetadataNameLabel is the label kube-apiserver gives every namespace, its
// name as value, so that namespace selectors can pick namespaces by name.
const MetadataNameLabel = "kubernetes.io/metadata.name"

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

// ageColumn is kube's Age column: the creation timestamp's age.
func ageColumn() Column {
	return column("Age", "string", "", CreationTimestampDescription, since("metadata", "creationTimestamp"))
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
			causes = append(causes, invalid("data["+k+"]", strconv.Quote(k)+": duplicate of key present in binaryData"))
		}
	}
	if size > maxDataSize {
		// kube names the whole object by field.NewPath(""), which prints "[]".
		causes = append(causes, tooLong("[]", maxDataSize))
	}
	return causes
}

// tooLong is field.TooLong, whose value kube omits.
func tooLong(field string, most int) api.StatusCause {
	return api.StatusCause{Type: api.CauseTypeFieldValueTooLong, Field: field, Message: fmt.Sprintf("Too long: may not be more than %d bytes", most)}
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
		causes = append(causes, tooLong("data", maxDataSize))
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
		for _, msg := range kubefmt.ConfigMapKey(k) {
			causes = append(causes, invalid(f, strconv.Quote(k)+": "+msg))
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
