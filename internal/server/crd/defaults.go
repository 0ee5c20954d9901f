package crd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// checkDefaults is kube's ValidateDefaults (apiserver/schema/defaulting)
// of the schema s, found at path, its rules compiled: every default, at
// the properties and items of the structural part, must be kept whole by
// pruning, hold valid embedded resources, be valid against its schema,
// and pass the CEL rules of its schema and below, run on it as an update
// from itself and, if they pass, as a create; the rules of all defaults
// share one runtime budget. A default inside a resource's apiVersion,
// kind or metadata is not held to pruning but must make valid typeMeta
// and metadata names where it sits, as kube.
func (s *Schema) checkDefaults(path string) []api.StatusCause {
	// Bounded in time as a request's rules are (the definition's write
	// has no context here).
	ctx, cancel := context.WithTimeout(context.Background(), celEvalTimeout)
	defer cancel()
	d := defaultsCheck{e: &celEval{ctx: ctx, budget: celRuntimeBudget}}
	d.node(s, path, nil, true, false)
	return d.causes
}

// defaultsCheck walks a schema's defaults, its rules' budget shared.
type defaultsCheck struct {
	e      *celEval
	causes []api.StatusCause
}

// descent is one step from a resource's root down to a schema: a property,
// or the items of a list.
type descent struct {
	key   string
	items bool
}

// node checks the default of s, found at path, and those below it;
// around is the way from the root of the resource s is in (the schema's
// root or an embedded resource) to s; resource says s is that root,
// insideMeta that s is within its apiVersion, kind or metadata. It stops
// once the rules' budget is spent.
func (d *defaultsCheck) node(s *Schema, path string, around []descent, resource, insideMeta bool) {
	if s.EmbeddedResource {
		around, resource, insideMeta = nil, true, false
	}
	if v, ok := s.defaultValue(); ok {
		d.value(s, v, path+".default", around, insideMeta)
		if d.e.out {
			return
		}
	}
	if s.Items != nil {
		if d.node(s.Items, path+".items", append(slices.Clip(around), descent{items: true}), false, insideMeta); d.e.out {
			return
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		meta := insideMeta || resource && (k == "metadata" || k == "apiVersion" || k == "kind")
		if p := s.Properties[k]; p != nil {
			d.node(p, path+".properties["+k+"]", append(slices.Clip(around), descent{key: k}), false, meta)
		}
		if d.e.out {
			return
		}
	}
}

// value checks v, the default of s, found at at.
func (d *defaultsCheck) value(s *Schema, v any, at string, around []descent, insideMeta bool) {
	var c checker
	if insideMeta {
		// kube checks the typeMeta and metadata of an object holding
		// only this default where it belongs, and says so as one cause.
		if errs := surroundingMeta(v, around); len(errs) > 0 {
			d.causes = append(d.causes, apierror.Field(api.CauseTypeFieldValueInvalid, at, "Invalid value: "+show(kubeNumbers(v))+": must result in valid metadata: "+aggregate(errs)))
			return
		}
	} else {
		if s.prunes(v, false) {
			d.causes = append(d.causes, apierror.Field(api.CauseTypeFieldValueInvalid, at, "Invalid value: "+show(kubeNumbers(v))+": must not have unknown fields"))
		}
		// As kube: objectmeta's Coerce (its first error), then its
		// Validate, each only if the one before passed.
		if c.coerce(s, v, ""); len(c.causes) == 0 {
			c.embedded(s, v, "")
		}
	}
	if len(c.causes) == 0 {
		c.value(s, v, nil, "")
	}
	if len(c.causes) > 0 {
		seen := map[api.StatusCause]bool{}
		for _, x := range c.causes {
			if !seen[x] {
				seen[x] = true
				x.Field = at + prefixed(x.Field)
				d.causes = append(d.causes, x)
			}
		}
		return
	}
	if !s.hasRules {
		return
	}
	e := d.e
	e.causes = e.causes[:0]
	budget := e.budget
	e.node(s, v, v, at, ratchet{})
	if len(e.causes) == 0 && !e.out {
		// As an update from nil: transition rules do not run.
		left := e.budget
		e.budget = budget
		e.node(s, v, nil, at, ratchet{})
		e.budget = min(e.budget, left)
	}
	d.causes = append(d.causes, e.causes...)
}

// surroundingMeta is kube's check of a default within a resource's
// apiVersion, kind or metadata: the object holding only v, where around
// leads, with kube's placeholder apiVersion and kind where v is not one,
// must pass objectmeta's Coerce and Validate of apiVersion, kind and the
// metadata's names, namespace, generation, labels and annotations (kube's
// ObjectMeta validation also checks owner references, finalizers and
// managed fields, which is not done here).
func surroundingMeta(v any, around []descent) []api.StatusCause {
	for i := len(around) - 1; i >= 0; i-- {
		if around[i].items {
			v = []any{v}
		} else {
			v = map[string]any{around[i].key: v}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := obj["kind"]; !ok {
		obj["kind"] = "Validation"
	}
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = "validation/v1"
	}
	root := &Schema{EmbeddedResource: true}
	var c checker
	if c.coerce(root, obj, ""); len(c.causes) > 0 {
		return c.causes
	}
	c.typeMeta(obj, "")
	md, _ := obj["metadata"].(map[string]any)
	for _, f := range []string{"generateName", "name"} {
		name, _ := md[f].(string)
		if f == "name" && name == "" {
			name = "fakename" // as kube, which only asks a name be valid
		}
		if f == "generateName" && (name == "." || name == "..") {
			continue // a prefix is checked only for what it may not contain
		}
		for _, msg := range api.PathSegmentNameErrors(name) {
			c.add(api.CauseTypeFieldValueInvalid, "metadata."+f, fmt.Sprintf("Invalid value: %q: %s", name, msg))
		}
	}
	if ns, _ := md["namespace"].(string); ns != "" {
		for _, msg := range kubefmt.Util.DNS1123Label(ns) {
			c.add(api.CauseTypeFieldValueInvalid, "metadata.namespace", fmt.Sprintf("Invalid value: %q: %s", ns, msg))
		}
	}
	if g, ok := asInt64(md["generation"]); ok && g < 0 {
		c.add(api.CauseTypeFieldValueInvalid, "metadata.generation", fmt.Sprintf("Invalid value: %d: must be greater than or equal to 0", g))
	}
	labels, _ := md["labels"].(map[string]any)
	for _, k := range sortedKeys(labels) {
		for _, msg := range kubefmt.LabelKey(k) {
			c.add(api.CauseTypeFieldValueInvalid, "metadata.labels", fmt.Sprintf("Invalid value: %q: %s", k, msg))
		}
		v, _ := labels[k].(string)
		for _, msg := range kubefmt.LabelValue(v) {
			c.add(api.CauseTypeFieldValueInvalid, "metadata.labels", fmt.Sprintf("Invalid value: %q: %s", v, msg))
		}
	}
	annotations, _ := md["annotations"].(map[string]any)
	size := 0
	for _, k := range sortedKeys(annotations) {
		v, _ := annotations[k].(string)
		size += len(k) + len(v)
		for _, msg := range kubefmt.LabelKey(strings.ToLower(k)) {
			c.add(api.CauseTypeFieldValueInvalid, "metadata.annotations", fmt.Sprintf("Invalid value: %q: %s", k, msg))
		}
	}
	if size > maxAnnotationBytes {
		c.add(api.CauseTypeFieldValueTooLong, "metadata.annotations", fmt.Sprintf("Too long: may not be more than %d bytes", maxAnnotationBytes))
	}
	return c.causes
}

// maxAnnotationBytes is kube's TotalAnnotationSizeLimitB.
const maxAnnotationBytes = 256 * 1024

// aggregate is field.ErrorList's ToAggregate().Error(): each distinct
// error once, one alone as it is, several in brackets.
func aggregate(causes []api.StatusCause) string {
	var msgs []string
	for _, c := range causes {
		if m := c.Field + ": " + c.Message; !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// prefixed is a value's path within a default as a suffix of the
// default's own path.
func prefixed(field string) string {
	switch {
	case field == "" || field == nilField:
		return ""
	case strings.HasPrefix(field, "["):
		return field
	}
	return "." + field
}

// prunes reports whether kube's pruning would drop anything of v, which s
// describes (nil: nothing is known); keep is kube's skipPrune, below
// x-kubernetes-preserve-unknown-fields, where only what the schema names
// is pruned. An embedded resource keeps its apiVersion, kind and metadata.
func (s *Schema) prunes(v any, keep bool) bool {
	if s != nil && s.PreserveUnknownFields {
		keep = true
	}
	switch v := v.(type) {
	case map[string]any:
		if s == nil {
			return !keep && len(v) > 0
		}
		for k, x := range v {
			switch {
			case s.EmbeddedResource && (k == "apiVersion" || k == "kind" || k == "metadata"):
			case s.Properties[k] != nil:
				if s.Properties[k].prunes(x, false) {
					return true
				}
			case s.AdditionalProperties != nil:
				if s.AdditionalProperties.Schema.prunes(x, false) {
					return true
				}
			case !keep:
				return true
			}
		}
	case []any:
		if s == nil && keep {
			return false
		}
		var items *Schema
		if s != nil {
			items = s.Items
		}
		return slices.ContainsFunc(v, func(x any) bool { return items.prunes(x, keep && items != nil) })
	}
	return false
}

// coerce is kube's objectmeta.Coerce of v, which s describes, found at
// path, as far as a default can fail it: the first apiVersion or kind of
// an embedded resource that is not a string (kube finds them in map
// order; here in order of keys).
func (c *checker) coerce(s *Schema, v any, path string) {
	eachResource(s, v, path, func(m map[string]any, path string) bool {
		for _, f := range []string{"apiVersion", "kind"} {
			if x, found := m[f]; found {
				if _, ok := x.(string); !ok {
					c.add(api.CauseTypeFieldValueInvalid, join(path, f), "Invalid value: "+show(kubeNumbers(x))+": must be a string")
					return false
				}
			}
		}
		return true
	})
}

// embedded is kube's objectmeta.Validate of v, which s describes, found
// at path: each embedded resource in it has a string apiVersion that
// parses and a kind that is a DNS-1035 label but for case. (kube checks
// its metadata as ObjectMeta too, which is not done here.)
func (c *checker) embedded(s *Schema, v any, path string) {
	eachResource(s, v, path, func(m map[string]any, path string) bool {
		c.typeMeta(m, path)
		return true
	})
}

// eachResource calls visit with every embedded resource in v, which s
// describes, found at path, and its path, until visit returns false.
func eachResource(s *Schema, v any, path string, visit func(m map[string]any, path string) bool) bool {
	if s == nil {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		if s.EmbeddedResource && !visit(v, path) {
			return false
		}
		for _, k := range sortedKeys(v) {
			next, at := s.Properties[k], join(path, k)
			if next == nil && s.AdditionalProperties != nil {
				next, at = s.AdditionalProperties.Schema, path+"["+k+"]"
			}
			if next != nil && !eachResource(next, v[k], at, visit) {
				return false
			}
		}
	case []any:
		for i, x := range v {
			if !eachResource(s.Items, x, fmt.Sprintf("%s[%d]", path, i), visit) {
				return false
			}
		}
	}
	return true
}

// typeMeta is kube's validateEmbeddedResource of apiVersion and kind,
// after coerce.
func (c *checker) typeMeta(m map[string]any, path string) {
	for _, f := range []string{"apiVersion", "kind"} {
		at := join(path, f)
		v, found := m[f]
		str, _ := v.(string) // coerce has found every one a string
		switch {
		case !found:
			c.add(api.CauseTypeFieldValueRequired, at, "Required value")
		case str == "":
			c.add(api.CauseTypeFieldValueInvalid, at, `Invalid value: "": must not be empty`)
		case f == "apiVersion" && strings.Count(str, "/") > 1:
			c.add(api.CauseTypeFieldValueInvalid, at, fmt.Sprintf("Invalid value: %q: unexpected GroupVersion string: %s", str, str))
		case f == "kind":
			var errs []string
			lower := strings.ToLower(str)
			if len(lower) > 63 {
				errs = append(errs, "must be no more than 63 characters")
			}
			if !dns1035Label.MatchString(lower) {
				errs = append(errs, dns1035Message)
			}
			if len(errs) > 0 {
				c.add(api.CauseTypeFieldValueInvalid, at, fmt.Sprintf("Invalid value: %q: may have mixed case, but should otherwise match: %s", str, strings.Join(errs, ",")))
			}
		}
	}
}
