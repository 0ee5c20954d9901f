package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

// rbacGroup is rbac.authorization.k8s.io, the group of the four RBAC kinds
// and of the User and Group subjects and role references.
const rbacGroup = "rbac.authorization.k8s.io"

// rbacKind is a kind of rbac.authorization.k8s.io/v1, defaulted, validated
// and printed as kube's pkg/apis/rbac (v1/defaults.go, validation) and
// pkg/printers/internalversion/printers.go do. Names are kube's
// ValidateRBACName: any path segment, so that "system:controller:x" is one.
// Roles have no printer there, so they keep the default Created At column.
func rbacKind(plural, kind string, namespaced bool) *Resource {
	r := &Resource{
		Group: rbacGroup, Version: "v1", Plural: plural,
		CreateOnUpdate: true, NameRule: api.PathSegmentNameErrors,
	}
	if kind == "Role" || kind == "ClusterRole" {
		r.Validate = func(o api.Object) []api.StatusCause { return validateRole(o, namespaced) }
		return r
	}
	r.Validate = func(o api.Object) []api.StatusCause { return validateBinding(o, namespaced) }
	r.ValidateUpdate = roleRefUnchanged
	what := strings.ToLower(kind[:1]) + kind[1:]
	// kube's printers describe roleRef with rbac/v1beta1's docs.
	roleRefDoc := "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
	if !namespaced {
		roleRefDoc = "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
	}
	wide := func(name, subjectKind string) Column {
		c := column(name, "string", "", name+" in the "+what, subjectsCell(subjectKind))
		c.Priority = 1
		return c
	}
	r.Columns = []Column{
		column("Role", "string", "", roleRefDoc, roleRefCell),
		ageColumn(),
		wide("Users", "User"),
		wide("Groups", "Group"),
		wide("ServiceAccounts", "ServiceAccount"),
	}
	return r
}

// roleRefCell is "Kind/name" of a binding's role.
func roleRefCell(o api.Object) any {
	kind, _ := Path(o, "roleRef", "kind").(string)
	name, _ := Path(o, "roleRef", "name").(string)
	return kind + "/" + name
}

// subjectsCell lists a binding's subjects of kind, joined by ", ", a
// ServiceAccount as "namespace/name" (rbac.SubjectsStrings).
func subjectsCell(kind string) func(api.Object) any {
	return func(o api.Object) any {
		subjects, _ := o["subjects"].([]any)
		var names []string
		for _, s := range subjects {
			s, _ := s.(map[string]any)
			if s["kind"] != kind {
				continue
			}
			name, _ := s["name"].(string)
			if kind == "ServiceAccount" {
				ns, _ := s["namespace"].(string)
				name = ns + "/" + name
			}
			names = append(names, name)
		}
		return strings.Join(names, ", ")
	}
}

// isEmpty reports a missing, null or empty string.
func isEmpty(v any) bool { return v == nil || v == "" }

// validateRole is kube's ValidateRole (namespaced) and ValidateClusterRole:
// each rule needs verbs; a rule of non-resource URLs holds nothing else and
// only in a ClusterRole; a resource rule needs API groups and resources.
// kube checks no verb, resource or group against a list: "unknown" verbs
// are stored and simply match no request.
func validateRole(o api.Object, namespaced bool) []api.StatusCause {
	c := &checker{}
	rules := c.list(o["rules"], "rules")
	type rule struct{ verbs, apiGroups, resources, resourceNames, urls []string }
	parsed := make([]rule, len(rules))
	for i, r := range rules {
		p := fmt.Sprintf("rules[%d]", i)
		m := c.object(r, p)
		parsed[i] = rule{
			verbs: c.strings(m["verbs"], p+".verbs"), apiGroups: c.strings(m["apiGroups"], p+".apiGroups"),
			resources: c.strings(m["resources"], p+".resources"), resourceNames: c.strings(m["resourceNames"], p+".resourceNames"),
			urls: c.strings(m["nonResourceURLs"], p+".nonResourceURLs"),
		}
	}
	const selectorsField = "aggregationRule.clusterRoleSelectors"
	var selectors []selector
	var agg map[string]any
	if !namespaced {
		agg = c.object(o["aggregationRule"], "aggregationRule")
		for i, s := range c.list(agg["clusterRoleSelectors"], selectorsField) {
			selectors = append(selectors, c.readSelector(s, fmt.Sprintf("%s[%d]", selectorsField, i)))
		}
	}
	if c.causes != nil {
		return c.causes // the rules below read what the types allow
	}
	for i, r := range parsed {
		p := fmt.Sprintf("rules[%d]", i)
		if len(r.verbs) == 0 {
			c.required(p+".verbs", "verbs must contain at least one value")
		}
		if len(r.urls) > 0 {
			if namespaced {
				c.invalid(p+".nonResourceURLs", r.urls, "namespaced rules cannot apply to non-resource URLs")
			}
			if len(r.apiGroups) > 0 || len(r.resources) > 0 || len(r.resourceNames) > 0 {
				c.invalid(p+".nonResourceURLs", r.urls, "rules cannot apply to both regular resources and non-resource URLs")
			}
			continue
		}
		if len(r.apiGroups) == 0 {
			c.required(p+".apiGroups", "resource rules must supply at least one api group")
		}
		if len(r.resources) == 0 {
			c.required(p+".resources", "resource rules must supply at least one resource")
		}
	}
	if agg != nil && len(selectors) == 0 {
		c.required(selectorsField, "at least one clusterRoleSelector required if aggregationRule is non-nil")
	}
	for i, s := range selectors {
		c.validSelector(s, fmt.Sprintf("%s[%d]", selectorsField, i))
	}
	return c.causes
}

// validateBinding is kube's ValidateRoleBinding (namespaced) and
// ValidateClusterRoleBinding. The role need not exist.
func validateBinding(o api.Object, namespaced bool) []api.StatusCause {
	c := &checker{}
	ref := c.object(o["roleRef"], "roleRef")
	group, kind, name := c.string(ref["apiGroup"], "roleRef.apiGroup"), c.string(ref["kind"], "roleRef.kind"), c.string(ref["name"], "roleRef.name")
	type subject struct{ kind, apiGroup, name, namespace string }
	var subjects []subject
	for i, s := range c.list(o["subjects"], "subjects") {
		p := fmt.Sprintf("subjects[%d]", i)
		m := c.object(s, p)
		subjects = append(subjects, subject{c.string(m["kind"], p+".kind"), c.string(m["apiGroup"], p+".apiGroup"),
			c.string(m["name"], p+".name"), c.string(m["namespace"], p+".namespace")})
	}
	if c.causes != nil {
		return c.causes
	}
	if group != rbacGroup {
		c.notSupported("roleRef.apiGroup", group, rbacGroup)
	}
	kinds := []string{"Role", "ClusterRole"}
	if !namespaced {
		kinds = kinds[1:]
	}
	if !slices.Contains(kinds, kind) {
		c.notSupported("roleRef.kind", kind, kinds...)
	}
	if name == "" {
		c.required("roleRef.name", "")
	}
	for _, msg := range api.PathSegmentNameErrors(name) {
		c.invalid("roleRef.name", name, msg)
	}
	for i, s := range subjects {
		p := fmt.Sprintf("subjects[%d]", i)
		if s.name == "" {
			c.required(p+".name", "")
		}
		switch s.kind {
		case "ServiceAccount":
			if s.name != "" {
				for _, msg := range DNS1123Subdomain(s.name) {
					c.invalid(p+".name", s.name, msg)
				}
			}
			if s.apiGroup != "" {
				c.notSupported(p+".apiGroup", s.apiGroup, "")
			}
			if !namespaced && s.namespace == "" {
				c.required(p+".namespace", "")
			}
		case "User", "Group":
			if s.apiGroup != rbacGroup {
				c.notSupported(p+".apiGroup", s.apiGroup, rbacGroup)
			}
		default:
			c.notSupported(p+".kind", s.kind, "ServiceAccount", "User", "Group")
		}
	}
	return c.causes
}

// roleRefUnchanged is kube's rule that a binding's roleRef is immutable (to
// move a binding to another role, delete and recreate it), with the
// message of ValidateImmutableField; the value in it is kube's internal
// RoleRef, which has no JSON tags, as encoding/json writes it.
func roleRefUnchanged(_ context.Context, obj, old api.Object) []api.StatusCause {
	ref := func(o api.Object) [3]string {
		var r [3]string
		for i, f := range []string{"apiGroup", "kind", "name"} {
			r[i], _ = Path(o, "roleRef", f).(string)
		}
		return r
	}
	now := ref(obj)
	if now == ref(old) {
		return nil
	}
	c := &checker{}
	c.invalid("roleRef", struct{ APIGroup, Kind, Name string }{now[0], now[1], now[2]}, "field is immutable")
	return c.causes
}

// selector is a meta/v1 LabelSelector as read from JSON.
type selector struct {
	keys   []string // of labels, sorted
	labels map[string]string
	exprs  []requirement
}

type requirement struct {
	key, operator string
	values        []string
}

// readSelector reads a LabelSelector, checking its types.
func (c *checker) readSelector(v any, p string) selector {
	m := c.object(v, p)
	labels := c.object(m["matchLabels"], p+".matchLabels")
	sel := selector{labels: make(map[string]string, len(labels))}
	for k, v := range labels {
		sel.keys = append(sel.keys, k)
		sel.labels[k] = c.string(v, p+".matchLabels["+k+"]")
	}
	slices.Sort(sel.keys)
	for i, e := range c.list(m["matchExpressions"], p+".matchExpressions") {
		ep := fmt.Sprintf("%s.matchExpressions[%d]", p, i)
		m := c.object(e, ep)
		sel.exprs = append(sel.exprs, requirement{c.string(m["key"], ep+".key"), c.string(m["operator"], ep+".operator"), c.strings(m["values"], ep+".values")})
	}
	return sel
}

// validSelector is apimachinery's ValidateLabelSelector, then the cause
// kube's ValidateClusterRole adds when the selector cannot be made a
// labels.Selector (which fails exactly when the checks before it do).
// Labels are checked in key order (kube's in map order).
func (c *checker) validSelector(sel selector, p string) {
	before := len(c.causes)
	for _, k := range sel.keys {
		for _, msg := range labelKey(k) {
			c.invalid(p+".matchLabels", k, msg)
		}
		for _, msg := range labelValue(sel.labels[k]) {
			c.invalid(p+".matchLabels", sel.labels[k], msg)
		}
	}
	for i, e := range sel.exprs {
		ep := fmt.Sprintf("%s.matchExpressions[%d]", p, i)
		switch e.operator {
		case "In", "NotIn":
			if len(e.values) == 0 {
				c.required(ep+".values", "must be specified when `operator` is 'In' or 'NotIn'")
			}
		case "Exists", "DoesNotExist":
			if len(e.values) > 0 {
				c.add(api.CauseTypeFieldValueForbidden, ep+".values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
			}
		default:
			c.invalid(ep+".operator", e.operator, "not a valid selector operator")
		}
		for _, msg := range labelKey(e.key) {
			c.invalid(ep+".key", e.key, msg)
		}
		for j, v := range e.values {
			for _, msg := range labelValue(v) {
				c.invalid(fmt.Sprintf("%s.values[%d]", ep, j), v, msg)
			}
		}
	}
	if len(c.causes) > before {
		c.invalid(p, nil, "invalid label selector.")
	}
}

// checker gathers causes: the type checks that kube's typed decoder makes
// (so that what is stored decodes in client-go and encodes as protobuf),
// and field errors worded as apimachinery's field.Error.
type checker struct{ causes []api.StatusCause }

func (c *checker) add(t api.CauseType, field, msg string) {
	c.causes = append(c.causes, api.StatusCause{Type: t, Field: field, Message: msg})
}

func (c *checker) mistyped(field, want string) {
	c.add(api.CauseTypeFieldValueInvalid, field, "Invalid value: must be "+want)
}

// object returns v as an object; null is no object, anything else a cause.
func (c *checker) object(v any, field string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		c.mistyped(field, "an object")
	}
	return m
}

func (c *checker) list(v any, field string) []any {
	l, ok := v.([]any)
	if !ok && v != nil {
		c.mistyped(field, "a list")
	}
	return l
}

func (c *checker) string(v any, field string) string {
	s, ok := v.(string)
	if !ok && v != nil {
		c.mistyped(field, "a string")
	}
	return s
}

// strings reads a list of strings; a null element is "", as in Go.
func (c *checker) strings(v any, field string) []string {
	var out []string
	for i, e := range c.list(v, field) {
		out = append(out, c.string(e, fmt.Sprintf("%s[%d]", field, i)))
	}
	return out
}

// invalid is field.Invalid: the value as field.Error prints it (a string
// quoted, anything else as JSON).
func (c *checker) invalid(field string, value any, detail string) {
	c.add(api.CauseTypeFieldValueInvalid, field, "Invalid value: "+badValue(value)+": "+detail)
}

// required is field.Required.
func (c *checker) required(field, detail string) {
	msg := "Required value"
	if detail != "" {
		msg += ": " + detail
	}
	c.add(api.CauseTypeFieldValueRequired, field, msg)
}

// notSupported is field.NotSupported.
func (c *checker) notSupported(field, value string, supported ...string) {
	quoted := make([]string, len(supported))
	for i, s := range supported {
		quoted[i] = strconv.Quote(s)
	}
	c.add(api.CauseTypeFieldValueNotSupported, field, "Unsupported value: "+strconv.Quote(value)+": supported values: "+strings.Join(quoted, ", "))
}

func badValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The checks of apimachinery's pkg/api/validate/content.
var (
	// DNS1123Subdomain is content.IsDNS1123Subdomain (ServiceAccount and
	// custom resource names).
	DNS1123Subdomain = kubefmt.Content.DNS1123Subdomain
	// QualifiedName is content.IsQualifiedName, which is IsLabelKey: what
	// finalizer names must be.
	QualifiedName = kubefmt.LabelKey
	labelKey      = kubefmt.LabelKey
	labelValue    = kubefmt.LabelValue
)
