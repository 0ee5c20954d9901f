package crd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// checkDefaults is kube's ValidateDefaults (apiserver/schema/defaulting)
// of the schema s, found at path, its rules compiled: every default, at
// the properties and items of the structural part, must be kept whole by
// pruning, be valid against its schema, and pass the CEL rules of its
// schema and below, run on it as an update from itself and, if they pass,
// as a create; the rules of all defaults share one runtime budget.
// Defaults inside an embedded resource's apiVersion, kind or metadata are
// not held to pruning, as kube; kube also checks the metadata those
// defaults make, which is not done here.
func (s *Schema) checkDefaults(path string) []api.StatusCause {
	e := &celEval{ctx: context.Background(), budget: celRuntimeBudget}
	var causes []api.StatusCause
	s.defaults(path, true, false, e, &causes)
	return causes
}

// defaults checks the default of s, found at path, and those below it;
// resource says s is the root of a resource (the schema's root or an
// embedded resource), insideMeta that s is within its typeMeta or
// metadata. It stops once the rules' budget is spent.
func (s *Schema) defaults(path string, resource, insideMeta bool, e *celEval, causes *[]api.StatusCause) {
	if s.EmbeddedResource {
		resource, insideMeta = true, false
	}
	if d, ok := s.defaultValue(); ok {
		at := path + ".default"
		if !insideMeta && s.prunes(d, false) {
			*causes = append(*causes, apierror.Field(api.CauseTypeFieldValueInvalid, at, "Invalid value: "+show(kubeNumbers(d))+": must not have unknown fields"))
		}
		// As kube: objectmeta's Coerce (its first error), then its
		// Validate, then the schema, each only if the one before passed.
		var c checker
		if c.coerce(s, d, ""); len(c.causes) == 0 {
			if c.embedded(s, d, ""); len(c.causes) == 0 {
				c.value(s, d, nil, "")
			}
		}
		if len(c.causes) > 0 {
			seen := map[api.StatusCause]bool{}
			for _, x := range c.causes {
				if !seen[x] {
					seen[x] = true
					x.Field = at + prefixed(x.Field)
					*causes = append(*causes, x)
				}
			}
		} else if s.hasRules {
			e.causes = e.causes[:0]
			budget := e.budget
			e.node(s, d, d, at, ratchet{})
			if len(e.causes) == 0 && !e.out {
				// As an update from nil: transition rules do not run.
				left := e.budget
				e.budget = budget
				e.node(s, d, nil, at, ratchet{})
				e.budget = min(e.budget, left)
			}
			*causes = append(*causes, e.causes...)
			if e.out {
				return
			}
		}
	}
	if s.Items != nil {
		s.Items.defaults(path+".items", false, insideMeta, e, causes)
		if e.out {
			return
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		meta := insideMeta || resource && (k == "metadata" || k == "apiVersion" || k == "kind")
		if p := s.Properties[k]; p != nil {
			p.defaults(path+".properties["+k+"]", false, meta, e, causes)
		}
		if e.out {
			return
		}
	}
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
