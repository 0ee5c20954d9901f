package crd

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// present records only whether a schema keyword was given a value, for
// keywords kube forbids or restricts but never uses (description, title,
// $ref...), so their text is not kept.
type present bool

// UnmarshalJSON sets p unless the value is null or empty.
func (p *present) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null", `""`, "{}", "[]":
		*p = false
	default:
		*p = true
	}
	return nil
}

// level is where a node sits, which kube's "type" messages name.
type level int

const (
	rootLevel level = iota
	itemLevel
	fieldLevel
)

// Structural returns the causes kube's definition validation gives a v1
// schema found at path: those of apiserver/schema's ValidateStructural
// (invariants of the structural part, what value validations under
// allOf/anyOf/oneOf/not may hold, and their completeness at the root),
// sorted as kube sorts them, then those of
// ValidateCustomResourceDefinitionOpenAPISchema (keywords, list and map
// types). structural says the first found nothing: kube checks defaults
// and rules only then.
func (s *Schema) Structural(path string) (causes []api.StatusCause, structural bool) {
	var c checker
	// kube checks the structure only of a schema NewStructural converts,
	// and reports why it could not only when nothing else is wrong.
	unsupported := s.unsupported()
	if unsupported == "" {
		c.invariants(s, rootLevel, path)
		for _, j := range s.junctorList(path) {
			c.complete(j.s, s, path, j.path)
		}
	}
	structural = unsupported == "" && len(c.causes) == 0
	slices.SortFunc(c.causes, func(a, b api.StatusCause) int {
		return strings.Compare(a.Field+": "+a.Message, b.Field+": "+b.Message)
	})
	if s.Nullable {
		c.add(api.CauseTypeFieldValueForbidden, path+".nullable", "Forbidden: nullable cannot be true at the root")
	}
	c.openAPI(s, path, openAPIContext{root: true})
	if unsupported != "" && len(c.causes) == 0 {
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf(`Invalid value: "": OpenAPIV3Schema '%s' is not supported`, unsupported))
	}
	return c.causes, structural
}

// unsupported is the first keyword of s or below that kube's NewStructural
// does not convert, in its order of checking, or "".
func (s *Schema) unsupported() string {
	for _, u := range []struct {
		set     present
		keyword string
	}{{s.ID, "id"}, {s.JSONSchema, "schema"}, {s.Ref, "$ref"}, {s.PatternProperties, "patternProperties"},
		{s.Dependencies, "dependencies"}, {s.AdditionalItems, "additionalItems"}, {s.Definitions, "definitions"}} {
		if u.set {
			return u.keyword
		}
	}
	for _, c := range s.children() {
		if k := c.unsupported(); k != "" {
			return k
		}
	}
	return ""
}

// junctor is one schema under allOf, anyOf, oneOf or not, with its path.
type junctor struct {
	s    *Schema
	path string
}

// junctorList returns s's junctors in kube's order of checking: anyOf,
// allOf, oneOf, not.
func (s *Schema) junctorList(path string) []junctor {
	var out []junctor
	for _, j := range []struct {
		name string
		list []*Schema
	}{{"anyOf", s.AnyOf}, {"allOf", s.AllOf}, {"oneOf", s.OneOf}} {
		for i, b := range j.list {
			if b != nil {
				out = append(out, junctor{b, fmt.Sprintf("%s.%s[%d]", path, j.name, i)})
			}
		}
	}
	if s.Not != nil {
		out = append(out, junctor{s.Not, path + ".not"})
	}
	return out
}

// invariants is kube's validateStructuralInvariants of s at path.
func (c *checker) invariants(s *Schema, lvl level, path string) {
	if s.Type == "array" && s.Items == nil {
		c.add(api.CauseTypeFieldValueRequired, path+".items", "Required value: must be specified")
	}
	if s.Items != nil {
		c.invariants(s.Items, itemLevel, path+".items")
	}
	for _, k := range sortedKeys(s.Properties) {
		if p := s.Properties[k]; p != nil {
			c.invariants(p, fieldLevel, path+".properties["+k+"]")
		}
	}
	if s.AdditionalProperties != nil {
		if lvl == rootLevel {
			c.add(api.CauseTypeFieldValueForbidden, path+".additionalProperties", "Forbidden: must not be used at the root")
		}
		if s.AdditionalProperties.Schema != nil {
			c.invariants(s.AdditionalProperties.Schema, fieldLevel, path+".additionalProperties")
		}
	}
	if s.IntOrString && s.PreserveUnknownFields {
		c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-preserve-unknown-fields", "Invalid value: true: must be false if x-kubernetes-int-or-string is true")
	}
	if s.IntOrString && s.EmbeddedResource {
		c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-embedded-resource", "Invalid value: true: must be false if x-kubernetes-int-or-string is true")
	}
	c.valueValidation(s, isIntOrStringAnyOf(s.AnyOf), len(s.AllOf) > 0 && s.AllOf[0] != nil && isIntOrStringAnyOf(s.AllOf[0].AnyOf), path)

	const embeddedObject = "must be object if x-kubernetes-embedded-resource is true"
	switch {
	case s.EmbeddedResource && s.Type == "":
		c.add(api.CauseTypeFieldValueRequired, path+".type", "Required value: "+embeddedObject)
	case s.EmbeddedResource && s.Type != "object":
		c.add(api.CauseTypeFieldValueInvalid, path+".type", fmt.Sprintf("Invalid value: %q: %s", s.Type, embeddedObject))
	case s.Type == "" && !s.IntOrString && !s.PreserveUnknownFields:
		where := [...]string{rootLevel: "at the root", itemLevel: "for specified array items", fieldLevel: "for specified object fields"}[lvl]
		c.add(api.CauseTypeFieldValueRequired, path+".type", "Required value: must not be empty "+where)
	}
	if s.EmbeddedResource && s.AdditionalProperties != nil {
		c.add(api.CauseTypeFieldValueForbidden, path+".additionalProperties", "Forbidden: must not be used if x-kubernetes-embedded-resource is set")
	}
	if lvl == rootLevel && s.Type != "" && s.Type != "object" {
		c.add(api.CauseTypeFieldValueInvalid, path+".type", fmt.Sprintf("Invalid value: %q: must be object at the root", s.Type))
	}
	meta := lvl == rootLevel || s.EmbeddedResource
	for _, k := range []string{"kind", "apiVersion"} {
		if p := s.Properties[k]; p != nil && meta && p.Type != "string" {
			c.add(api.CauseTypeFieldValueInvalid, path+".properties["+k+"].type", fmt.Sprintf("Invalid value: %q: must be string", p.Type))
		}
	}
	if m := s.Properties["metadata"]; m != nil {
		mpath := path + ".properties[metadata]"
		if meta && m.Type != "object" {
			c.add(api.CauseTypeFieldValueInvalid, mpath+".type", fmt.Sprintf("Invalid value: %q: must be object", m.Type))
		}
		if lvl == rootLevel && !m.onlyNames() {
			c.add(api.CauseTypeFieldValueForbidden, mpath, "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")
		}
	}
	if s.EmbeddedResource && !s.PreserveUnknownFields && len(s.Properties) == 0 {
		c.add(api.CauseTypeFieldValueRequired, path+".properties", "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields")
	}
}

// onlyNames reports whether a root's metadata schema holds nothing but a
// type, a default and properties name and generateName, all kube lets a
// definition say of the metadata it owns.
func (s *Schema) onlyNames() bool {
	m := *s
	m.Type, m.Default = "", nil
	if _, n := s.Properties["name"]; n || len(s.Properties) == 0 {
		if _, g := s.Properties["generateName"]; len(s.Properties) == btoi(n)+btoi(g) {
			m.Properties = nil
		}
	} else if _, g := s.Properties["generateName"]; g && len(s.Properties) == 1 {
		m.Properties = nil
	}
	m.pattern, m.enum, m.rules, m.hasRules, m.root = nil, nil, nil, false, false
	m.dflt, m.hasDefault, m.defaulted = nil, false, nil
	return reflect.DeepEqual(m, Schema{})
}

// orNull shows an optional string as kube's messages do.
func orNull(s *string) string {
	if s == nil {
		return "null"
	}
	return show(*s)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isIntOrStringAnyOf reports whether alternatives are exactly
// [{type: integer}, {type: string}], the junctor kube lets an
// int-or-string schema hold.
func isIntOrStringAnyOf(alternatives []*Schema) bool {
	return len(alternatives) == 2 && alternatives[0] != nil && alternatives[1] != nil &&
		reflect.DeepEqual(*alternatives[0], Schema{Type: "integer"}) && reflect.DeepEqual(*alternatives[1], Schema{Type: "string"})
}

// valueValidation is kube's validateValueValidation: what the junctors of
// s may hold. skipAnyOf and skipFirstAllOfAnyOf leave out the
// int-or-string patterns.
func (c *checker) valueValidation(s *Schema, skipAnyOf, skipFirstAllOfAnyOf bool, path string) {
	if !skipAnyOf {
		for i, b := range s.AnyOf {
			c.nested(b, false, fmt.Sprintf("%s.anyOf[%d]", path, i))
		}
	}
	for i, b := range s.AllOf {
		c.nested(b, skipFirstAllOfAnyOf && i == 0, fmt.Sprintf("%s.allOf[%d]", path, i))
	}
	for i, b := range s.OneOf {
		c.nested(b, false, fmt.Sprintf("%s.oneOf[%d]", path, i))
	}
	c.nested(s.Not, false, path+".not")
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			c.add(api.CauseTypeFieldValueInvalid, path+".pattern", fmt.Sprintf("Invalid value: %q: must be a valid regular expression, but isn't: %v", s.Pattern, err))
		}
	}
}

// nested is kube's validateNestedValueValidation: a schema under a
// junctor only validates, so it must not say what a value is (type,
// additionalProperties, extensions), default or describe it, nor reach
// into metadata.
func (c *checker) nested(s *Schema, skipAnyOf bool, path string) {
	if s == nil {
		return
	}
	c.valueValidation(s, skipAnyOf, false, path)
	c.nested(s.Items, false, path+".items")
	for _, k := range sortedKeys(s.Properties) {
		c.nested(s.Properties[k], false, path+".properties["+k+"]")
	}
	forbid := func(ok bool, keyword, msg string) {
		if !ok {
			c.add(api.CauseTypeFieldValueForbidden, path+"."+keyword, "Forbidden: "+msg+" to be structural")
		}
	}
	const empty, undefined, unset = "must be empty", "must be undefined", "must be false"
	forbid(s.Type == "", "type", empty)
	forbid(s.AdditionalProperties == nil || (!s.AdditionalProperties.Allows && s.AdditionalProperties.Schema == nil), "additionalProperties", undefined)
	forbid(len(s.Default) == 0, "default", undefined)
	forbid(!bool(s.Title), "title", empty)
	forbid(!bool(s.Description), "description", empty)
	forbid(!s.Nullable, "nullable", unset)
	forbid(!s.PreserveUnknownFields, "x-kubernetes-preserve-unknown-fields", unset)
	forbid(!s.EmbeddedResource, "x-kubernetes-embedded-resource", unset)
	forbid(!s.IntOrString, "x-kubernetes-int-or-string", unset)
	forbid(len(s.ListMapKeys) == 0, "x-kubernetes-list-map-keys", empty)
	forbid(s.XListType == nil, "x-kubernetes-list-type", undefined)
	forbid(s.XMapType == nil, "x-kubernetes-map-type", undefined)
	forbid(len(s.Validations) == 0, "x-kubernetes-validations", empty)
	if s.Properties["metadata"] != nil {
		c.add(api.CauseTypeFieldValueForbidden, path+".properties[metadata]", "Forbidden: must not be specified in a nested context")
	}
}

// complete is kube's completeness check of the root's junctors: every
// property and items a junctor's schema v names (found at vpath) must be
// in the structural part s (found at spath) too.
func (c *checker) complete(v, s *Schema, spath, vpath string) {
	if v == nil {
		return
	}
	if s == nil {
		c.add(api.CauseTypeFieldValueRequired, spath, "Required value: because it is defined in "+vpath)
		return
	}
	for _, j := range v.junctorList(vpath) {
		c.complete(j.s, s, spath, j.path)
	}
	c.complete(v.Items, s.Items, spath+".items", vpath+".items")
	for _, k := range sortedKeys(v.Properties) {
		sk, vk := spath+".properties["+k+"]", vpath+".properties["+k+"]"
		if p := s.Properties[k]; p != nil {
			c.complete(v.Properties[k], p, sk, vk)
		} else {
			c.add(api.CauseTypeFieldValueRequired, sk, "Required value: because it is defined in "+vk)
		}
	}
}

// openAPIContext is what kube's specStandardValidator knows of a node's
// place: the root, inside a resource's metadata, kind or apiVersion, and
// why defaults are forbidden there.
type openAPIContext struct {
	root, insideMeta bool
	noDefaults       string
}

// openAPI is kube's ValidateCustomResourceDefinitionOpenAPISchema of s at
// path, CEL rules aside: keywords kube does not support, and the
// consistency of list and map types.
func (c *checker) openAPI(s *Schema, path string, ctx openAPIContext) {
	if s == nil {
		return
	}
	if s.Type != "" && !slices.Contains(schemaTypes, s.Type) {
		c.add(api.CauseTypeFieldValueNotSupported, path+".type", fmt.Sprintf(`Unsupported value: %q: supported values: "array", "boolean", "integer", "number", "object", "string"`, s.Type))
	}
	if len(s.Default) > 0 && ctx.noDefaults != "" {
		c.add(api.CauseTypeFieldValueForbidden, path+".default", "Forbidden: must not be set "+ctx.noDefaults)
	}
	for _, u := range []struct {
		set     present
		keyword string
	}{{s.ID, "id"}, {s.AdditionalItems, "additionalItems"}, {s.PatternProperties, "patternProperties"},
		{s.Definitions, "definitions"}, {s.Dependencies, "dependencies"}, {s.Ref, "$ref"}} {
		if u.set {
			c.add(api.CauseTypeFieldValueForbidden, path+"."+u.keyword, "Forbidden: "+u.keyword+" is not supported")
		}
	}
	if s.Type == "null" {
		c.add(api.CauseTypeFieldValueForbidden, path+".type", "Forbidden: type cannot be set to null, use nullable as an alternative")
	}
	if p := s.XPreserveUnknownFields; p != nil && !*p {
		c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or undefined")
	}
	if ctx.insideMeta && s.EmbeddedResource {
		c.add(api.CauseTypeFieldValueForbidden, path+".x-kubernetes-embedded-resource", "Forbidden: must not be used inside of resource meta")
	}
	if s.UniqueItems {
		c.add(api.CauseTypeFieldValueForbidden, path+".uniqueItems", "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")
	}
	if a := s.AdditionalProperties; a != nil {
		if len(s.Properties) > 0 && (!a.Allows || a.Schema != nil) {
			c.add(api.CauseTypeFieldValueForbidden, path+".additionalProperties", "Forbidden: additionalProperties and properties are mutual exclusive")
		}
		sub := ctx
		sub.root = false
		if ctx.insideMeta {
			sub.noDefaults = "inside additionalProperties applying to object metadata"
		}
		c.openAPI(a.Schema, path+".additionalProperties", sub)
	}
	for _, k := range sortedKeys(s.Properties) {
		sub := ctx
		sub.root = false
		if (ctx.root || s.EmbeddedResource) && (k == "metadata" || k == "kind" || k == "apiVersion") {
			sub.insideMeta = true
			if ctx.root {
				sub.noDefaults = "in top-level " + k
			}
		}
		c.openAPI(s.Properties[k], path+".properties["+k+"]", sub)
	}
	nested := ctx
	nested.root = false
	c.openAPI(s.Not, path+".not", nested)
	for _, j := range []struct {
		name string
		list []*Schema
	}{{"allOf", s.AllOf}, {"oneOf", s.OneOf}, {"anyOf", s.AnyOf}} {
		for i, b := range j.list {
			c.openAPI(b, fmt.Sprintf("%s.%s[%d]", path, j.name, i), nested)
		}
	}
	c.openAPI(s.Items, path+".items", nested)
	c.mapType(s, path)
	c.listType(s, path)
}

// mapType checks x-kubernetes-map-type: on objects, atomic or granular.
func (c *checker) mapType(s *Schema, path string) {
	if s.XMapType == nil {
		return
	}
	c.typeFor(s, "object", "x-kubernetes-map-type", path)
	if s.MapType != "atomic" && s.MapType != "granular" {
		c.add(api.CauseTypeFieldValueNotSupported, path+".x-kubernetes-map-type", fmt.Sprintf(`Unsupported value: %q: supported values: "atomic", "granular"`, s.MapType))
	}
}

// typeFor requires the type an extension applies to.
func (c *checker) typeFor(s *Schema, want, extension, path string) {
	msg := fmt.Sprintf("must be %s if %s is specified", want, extension)
	switch s.Type {
	case want:
	case "":
		c.add(api.CauseTypeFieldValueRequired, path+".type", "Required value: "+msg)
	default:
		c.add(api.CauseTypeFieldValueInvalid, path+".type", fmt.Sprintf("Invalid value: %q: %s", s.Type, msg))
	}
}

// listType checks x-kubernetes-list-type and x-kubernetes-list-map-keys
// as kube: on arrays; a set's items atomic; a map's items objects with
// scalar key properties, each required or defaulted, nothing nullable.
func (c *checker) listType(s *Schema, path string) {
	it := s.Items
	if s.XListType != nil && s.Type != "array" {
		c.typeFor(s, "array", "x-kubernetes-list-type", path)
	} else if s.ListType == "set" && it != nil {
		const atomic = "must be atomic as item of a list with x-kubernetes-list-type=set"
		switch {
		case it.Type == "array" && it.XListType != nil && it.ListType != "atomic":
			c.add(api.CauseTypeFieldValueInvalid, path+".items.x-kubernetes-list-type", fmt.Sprintf("Invalid value: %q: %s", it.ListType, atomic))
		case it.Type == "object" && it.MapType != "atomic":
			// kube shows the items' list type here, usually null.
			c.add(api.CauseTypeFieldValueInvalid, path+".items.x-kubernetes-map-type", "Invalid value: "+orNull(it.XListType)+": "+atomic)
		}
	}
	if s.XListType != nil && s.ListType != "atomic" && s.ListType != "set" && s.ListType != "map" {
		c.add(api.CauseTypeFieldValueNotSupported, path+".x-kubernetes-list-type", fmt.Sprintf(`Unsupported value: %q: supported values: "atomic", "set", "map"`, s.ListType))
	}
	if len(s.ListMapKeys) > 0 {
		const mapKeys = "must be map if x-kubernetes-list-map-keys is non-empty"
		switch {
		case s.ListType == "map":
		case s.XListType == nil:
			c.add(api.CauseTypeFieldValueRequired, path+".x-kubernetes-list-type", "Required value: "+mapKeys)
		default:
			c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-list-type", fmt.Sprintf("Invalid value: %q: %s", s.ListType, mapKeys))
		}
	}
	if s.ListType == "map" {
		c.listMap(s, path)
	}
	if it != nil && (s.ListType == "set" || s.ListType == "map") && it.Nullable {
		c.add(api.CauseTypeFieldValueForbidden, path+".items.nullable", "Forbidden: cannot be nullable when x-kubernetes-list-type is "+s.ListType)
	}
	if it != nil && s.ListType == "map" {
		for _, k := range s.ListMapKeys {
			p := it.Properties[k]
			if p == nil {
				continue
			}
			kpath := path + ".items.properties[" + k + "]"
			if len(p.Default) == 0 && !slices.Contains(it.Required, k) {
				c.add(api.CauseTypeFieldValueRequired, kpath+".default", "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property")
			}
			if p.Nullable {
				c.add(api.CauseTypeFieldValueForbidden, kpath+".nullable", "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable")
			}
		}
	}
}

// listMap checks the keys of a list-type map against its items.
func (c *checker) listMap(s *Schema, path string) {
	it := s.Items
	if len(s.ListMapKeys) == 0 {
		c.add(api.CauseTypeFieldValueRequired, path+".x-kubernetes-list-map-keys", "Required value: must not be empty if x-kubernetes-list-type is map")
	}
	if it == nil {
		c.add(api.CauseTypeFieldValueRequired, path+".items", "Required value: must have a schema if x-kubernetes-list-type is map")
		return
	}
	if it.Type != "object" {
		c.add(api.CauseTypeFieldValueInvalid, path+".items.type", fmt.Sprintf("Invalid value: %q: must be object if parent array's x-kubernetes-list-type is map", it.Type))
		return
	}
	keys := show(s.ListMapKeys)
	seen := map[string]bool{}
	for _, k := range s.ListMapKeys {
		if p := it.Properties[k]; p == nil {
			c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-list-map-keys", "Invalid value: "+keys+": entries must all be names of item properties")
		} else if p.Type == "array" || p.Type == "object" {
			// kube shows the items' type here, always "object".
			c.add(api.CauseTypeFieldValueInvalid, path+".items.properties["+k+"].type", `Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map`)
		}
		if seen[k] {
			c.add(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-list-map-keys", "Invalid value: "+keys+": must not contain duplicate entries")
		}
		seen[k] = true
	}
}

// itemArrays finds the items of raw given as arrays of schemas, which
// Schema cannot hold: it forbids each non-empty one as kube does, and
// returns raw without them (an empty one is as none, as in kube's
// NewStructural) and the elements' schemas with their paths, items[i].
func (c *checker) itemArrays(raw []byte, path string) (fixed []byte, elements []junctor, forbidden bool) {
	var tree any
	if decodeNumbers(raw, &tree) != nil {
		return nil, nil, false
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		m, _ := v.(map[string]any)
		if m == nil {
			return
		}
		if items, ok := m["items"].([]any); ok {
			delete(m, "items")
			if len(items) > 0 {
				forbidden = true
				c.add(api.CauseTypeFieldValueForbidden, path+".items", "Forbidden: items must be a schema object and not an array")
			}
			for i, e := range items {
				p := fmt.Sprintf("%s.items[%d]", path, i)
				walk(e, p)
				if b, err := json.Marshal(e); err == nil {
					if s, err := ParseSchema(b); err == nil {
						elements = append(elements, junctor{s, p})
					}
				}
			}
		}
		walk(m["items"], path+".items")
		walk(m["not"], path+".not")
		walk(m["additionalProperties"], path+".additionalProperties")
		props, _ := m["properties"].(map[string]any)
		for _, k := range sortedKeys(props) {
			walk(props[k], path+".properties["+k+"]")
		}
		for _, j := range []string{"allOf", "oneOf", "anyOf"} {
			list, _ := m[j].([]any)
			for i, e := range list {
				walk(e, fmt.Sprintf("%s.%s[%d]", path, j, i))
			}
		}
	}
	walk(tree, path)
	fixed, _ = json.Marshal(tree)
	return fixed, elements, forbidden
}

// openAPIOnly is what kube checks of a schema NewStructural refused for
// its items arrays: ValidateCustomResourceDefinitionOpenAPISchema of the
// rest, and of each array's elements.
func (c *checker) openAPIOnly(s *Schema, elements []junctor, path string) {
	if s.Nullable {
		c.add(api.CauseTypeFieldValueForbidden, path+".nullable", "Forbidden: nullable cannot be true at the root")
	}
	c.openAPI(s, path, openAPIContext{root: true})
	for _, e := range elements {
		c.openAPI(e.s, e.path, openAPIContext{})
	}
}
