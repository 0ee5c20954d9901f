package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// maxSelectableFields is kube's MaxSelectableFields: how many fields a
// version may make selectable.
const maxSelectableFields = 8

// fieldPaths returns the version's selectableFields as field selector keys
// and their paths: a key is the jsonPath without its leading dot, as kube
// names it; validation has made each a dotted path to a scalar.
func (v *version) fieldPaths() map[string][]string {
	if len(v.SelectableFields) == 0 {
		return nil
	}
	out := make(map[string][]string, len(v.SelectableFields))
	for _, f := range v.SelectableFields {
		k := strings.TrimPrefix(f.JSONPath, ".")
		out[k] = strings.Split(k, ".")
	}
	return out
}

// shared says which parts of a definition's versions are the same in all
// of them: kube's conversion to its internal form moves those to spec,
// where they are validated once, at spec's paths.
type shared struct{ subresources, schema, selectableFields, columns bool }

func sharedParts(vs []version) shared {
	sh := shared{true, true, true, true}
	first := &vs[0]
	for i := range vs {
		v := &vs[i]
		sh.subresources = sh.subresources && reflect.DeepEqual(v.Subresources, first.Subresources)
		sh.schema = sh.schema && sameJSON(v.rawSchema(), first.rawSchema())
		sh.selectableFields = sh.selectableFields && slices.Equal(v.SelectableFields, first.SelectableFields)
		sh.columns = sh.columns && slices.Equal(v.AdditionalPrinterColumns, first.AdditionalPrinterColumns)
	}
	return sh
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return bytes.Equal(a, b) || json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// versionParts checks version v's scale and selectableFields where they are
// its own, as kube's validateCustomResourceDefinitionVersion: its
// selectableFields against its schema, which it has only when the versions'
// schemas differ.
func (c *checker) versionParts(path string, v *version, sh shared) {
	if !sh.subresources {
		c.scale(path+".subresources", v)
	}
	if !sh.selectableFields {
		var raw json.RawMessage
		if !sh.schema {
			raw = v.rawSchema()
		}
		c.selectableFields(path+".selectableFields", v.SelectableFields, raw, "may only be set when `version.schema.openAPIV3Schema` is not included")
	}
}

// specParts checks the scale and selectableFields all versions share, as
// kube's validation of spec: v is the first version.
func (c *checker) specParts(v *version, sh shared) {
	if sh.subresources {
		c.scale("spec.subresources", v)
	}
	if sh.selectableFields {
		var raw json.RawMessage
		if sh.schema {
			raw = v.rawSchema()
		}
		c.selectableFields("spec.selectableFields", v.SelectableFields, raw, "may only be set when validations.schema is included")
	}
}

// selectableFields checks selectableFields as kube's
// ValidateCustomResourceSelectableFields: each a path of the schema raw, in
// dot notation, to a string, boolean or integer outside metadata; no
// duplicates; at most maxSelectableFields. Without a schema, noSchema says
// why they may not be set.
func (c *checker) selectableFields(path string, fields []selectableField, raw json.RawMessage, noSchema string) {
	if len(fields) == 0 {
		return
	}
	if raw == nil {
		c.add(api.CauseTypeFieldValueInvalid, path, `Invalid value: "": `+noSchema)
		return
	}
	root, err := ParseSchema(raw)
	if err != nil {
		return // the schema's own check reports it
	}
	seen := map[string]bool{}
	for i, f := range fields {
		p := fmt.Sprintf("%s[%d].jsonPath", path, i)
		if c.required(p, f.JSONPath) {
			continue
		}
		s, err := fieldSchema(root, f.JSONPath)
		if err != nil {
			c.add(api.CauseTypeFieldValueInvalid, p, fmt.Sprintf("Invalid value: %q: is an invalid path: %v", f.JSONPath, err))
			continue
		}
		if pathTokens(f.JSONPath)[1] == "metadata" {
			c.add(api.CauseTypeFieldValueInvalid, p, fmt.Sprintf("Invalid value: %q: must not point to fields in metadata", f.JSONPath))
		}
		if s == nil || (s.Type != "string" && s.Type != "boolean" && s.Type != "integer") {
			c.add(api.CauseTypeFieldValueInvalid, p, fmt.Sprintf("Invalid value: %q: must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.", f.JSONPath))
		}
		if seen[f.JSONPath] {
			c.add(api.CauseTypeFieldValueDuplicate, p, fmt.Sprintf("Duplicate value: %q", f.JSONPath))
		}
		seen[f.JSONPath] = true
	}
	if len(seen) > maxSelectableFields {
		c.add(causeTooMany, path, fmt.Sprintf("Too many: %d: must have at most %d items", len(seen), maxSelectableFields))
	}
}

// fieldSchema returns the schema of the field jsonPath names, with the
// errors of kube's cel.ValidFieldPath without array notation: the path is
// "." then a name, repeated; a name is a property, or any key of a map
// (additionalProperties).
func fieldSchema(s *Schema, jsonPath string) (*Schema, error) {
	toks := pathTokens(jsonPath)
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "[":
			return nil, fmt.Errorf("array notation is not allowed")
		case ".":
			i++
			if i == len(toks) {
				return nil, fmt.Errorf("unexpected end of JSON path")
			}
			switch {
			case s != nil && s.Properties != nil:
				if s = s.Properties[toks[i]]; s == nil {
					return nil, fmt.Errorf("does not refer to a valid field")
				}
			case s != nil && s.AdditionalProperties != nil:
				s = s.AdditionalProperties.Schema
			default:
				return nil, fmt.Errorf("does not refer to a valid field")
			}
		default:
			return nil, fmt.Errorf("expected [ or . but got: %s", toks[i])
		}
	}
	return s, nil
}

// pathTokens splits a JSON path as kube's ValidFieldPath scanner does: each
// of ". [ ]" is a token, and so is the text between them; text opening
// with a single quote runs to the next unescaped one.
func pathTokens(p string) []string {
	var out []string
	for len(p) > 0 {
		n := 1
		switch {
		case p[0] == '\'':
			for n < len(p) && (p[n] != '\'' || p[n-1] == '\\') {
				n++
			}
			n = min(n+1, len(p))
		case !strings.ContainsRune(".[]", rune(p[0])):
			if n = strings.IndexAny(p, ".[]"); n < 0 {
				n = len(p)
			}
		}
		out = append(out, p[:n])
		p = p[n:]
	}
	return out
}
