package crd

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// Schema is one node of a structural openAPIV3Schema, the subset kube's
// apiextensions server prunes, defaults and validates with.
type Schema struct {
	Type                   string             `json:"type"`
	Format                 string             `json:"format"`
	Properties             map[string]*Schema `json:"properties"`
	Required               []string           `json:"required"`
	Items                  *Schema            `json:"items"`
	AdditionalProperties   *Additional        `json:"additionalProperties"`
	Enum                   []any              `json:"enum"`
	Default                json.RawMessage    `json:"default"`
	Maximum                *float64           `json:"maximum"`
	Minimum                *float64           `json:"minimum"`
	ExclusiveMaximum       bool               `json:"exclusiveMaximum"`
	ExclusiveMinimum       bool               `json:"exclusiveMinimum"`
	MultipleOf             *float64           `json:"multipleOf"`
	MaxLength              *int64             `json:"maxLength"`
	MinLength              *int64             `json:"minLength"`
	MaxItems               *int64             `json:"maxItems"`
	MinItems               *int64             `json:"minItems"`
	MaxProperties          *int64             `json:"maxProperties"`
	MinProperties          *int64             `json:"minProperties"`
	Pattern                string             `json:"pattern"`
	Nullable               bool               `json:"nullable"`
	PreserveUnknownFields  bool               `json:"-"` // XPreserveUnknownFields is true
	XPreserveUnknownFields *bool              `json:"x-kubernetes-preserve-unknown-fields"`
	IntOrString            bool               `json:"x-kubernetes-int-or-string"`
	EmbeddedResource       bool               `json:"x-kubernetes-embedded-resource"`
	Validations            []ValidationRule   `json:"x-kubernetes-validations"`
	ListType               string             `json:"-"` // *XListType, or ""
	XListType              *string            `json:"x-kubernetes-list-type"`
	ListMapKeys            []string           `json:"x-kubernetes-list-map-keys"`
	MapType                string             `json:"-"` // *XMapType, or ""
	XMapType               *string            `json:"x-kubernetes-map-type"`
	UniqueItems            bool               `json:"uniqueItems"`
	// Keywords kube restricts but never uses: only their presence is kept.
	Title             present `json:"title"`
	Description       present `json:"description"`
	Example           present `json:"example"`
	ExternalDocs      present `json:"externalDocs"`
	ID                present `json:"id"`
	JSONSchema        present `json:"$schema"`
	Ref               present `json:"$ref"`
	PatternProperties present `json:"patternProperties"`
	Dependencies      present `json:"dependencies"`
	AdditionalItems   present `json:"additionalItems"`
	Definitions       present `json:"definitions"`
	// AllOf, AnyOf, OneOf and Not only validate: kube's structural rules
	// keep types, defaults and properties' meaning out of them.
	AllOf []*Schema `json:"allOf"`
	AnyOf []*Schema `json:"anyOf"`
	OneOf []*Schema `json:"oneOf"`
	Not   *Schema   `json:"not"`

	// omitEmpty drops the property when empty before it is stored, as the
	// Go field's json:",omitempty" makes kube's typed encoding of a
	// built-in kind leave it out (BuiltinSchema); holdsOmitEmpty says it
	// or a node below it has omitEmpty.
	omitEmpty, holdsOmitEmpty bool

	pattern  *regexp.Regexp  // compiled Pattern
	enum     map[string]bool // jsonKey of every Enum value, so huge enums cost one lookup
	rules    []*celRule      // compiled Validations (compileRules)
	hasRules bool            // rules here or below
	root     bool            // the resource's root, which rules see with typeMeta

	readsOldSelf bool // a rule here reads oldSelf: kube binds it only then

	dflt       any      // Default decoded (compileDefault)
	hasDefault bool     // Default is set and not null
	defaulted  []string // the properties that have a default
}

// Additional is additionalProperties: a boolean or a schema for every
// property not listed in properties. ParseSchema hands it to the decoder
// as {"allows": b} or {"schema": s}, so that no level decodes its subtree
// again (a custom decoding of either form did, costing time quadratic in
// the depth: 65 s for 1,000 levels over 2 MiB).
type Additional struct {
	Allows bool    `json:"allows"`
	Schema *Schema `json:"schema"`
}

// ParseSchema decodes an openAPIV3Schema and compiles its patterns.
func ParseSchema(raw []byte) (*Schema, error) {
	var tree any
	if err := decodeNumbers(raw, &tree); err != nil {
		return nil, fmt.Errorf("decoding openAPIV3Schema: %w", err)
	}
	wrapAdditional(tree)
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("decoding openAPIV3Schema: %w", err)
	}
	var s Schema
	if err := decodeNumbers(b, &s); err != nil {
		return nil, fmt.Errorf("decoding openAPIV3Schema: %w", err)
	}
	s.compile()
	return &s, nil
}

// wrapAdditional rewrites the additionalProperties of v and the schemas
// below it into Additional's form.
func wrapAdditional(v any) {
	m, _ := v.(map[string]any)
	if m == nil {
		return
	}
	switch a := m["additionalProperties"].(type) {
	case bool:
		m["additionalProperties"] = map[string]any{"allows": a}
	case map[string]any:
		wrapAdditional(a)
		m["additionalProperties"] = map[string]any{"allows": true, "schema": a}
	}
	props, _ := m["properties"].(map[string]any)
	for _, p := range props {
		wrapAdditional(p)
	}
	wrapAdditional(m["items"])
	wrapAdditional(m["not"])
	for _, j := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[j].([]any)
		for _, x := range list {
			wrapAdditional(x)
		}
	}
}

// compile compiles the patterns of s and every schema below it. A pattern
// that does not compile is left out: Structural reports it, as kube does,
// so no definition holding one is served.
func (s *Schema) compile() {
	s.PreserveUnknownFields = s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	// kube tells an empty list or map type from none: it is unsupported.
	if s.XListType != nil {
		s.ListType = *s.XListType
	}
	if s.XMapType != nil {
		s.MapType = *s.XMapType
	}
	if s.Pattern != "" {
		s.pattern, _ = regexp.Compile(s.Pattern)
	}
	if len(s.Enum) > 0 {
		s.enum = make(map[string]bool, len(s.Enum))
		for _, e := range s.Enum {
			s.enum[jsonKey(e)] = true
		}
	}
	for _, c := range s.children() {
		c.compile()
	}
	s.compileDefault()
}

// children returns the schemas directly below s.
func (s *Schema) children() []*Schema {
	var out []*Schema
	for _, p := range s.Properties {
		if p != nil {
			out = append(out, p)
		}
	}
	if s.Items != nil {
		out = append(out, s.Items)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = append(out, s.AdditionalProperties.Schema)
	}
	for _, j := range [][]*Schema{s.AllOf, s.AnyOf, s.OneOf, {s.Not}} {
		for _, c := range j {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// schemaTypes are the types a structural schema may name.
var schemaTypes = []string{"object", "array", "string", "integer", "number", "boolean"}

// sortedKeys returns m's keys in order, so causes come out stable.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
