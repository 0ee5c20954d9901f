package openapi

import (
	"fmt"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// v2RefPrefix is how Swagger 2.0 definitions reference each other.
const v2RefPrefix = "#/definitions/"

// v2Document is the Swagger 2.0 document of every resource, built from the
// same paths and schemas as the v3 documents.
func v2Document(rs []*resource.Resource) map[string]any {
	paths, schemas := renderPaths(rs, v2Params, v2Operation)
	defs := map[string]any{}
	for name, s := range schemas.out {
		defs[name] = v2Schema(s.(map[string]any))
	}
	return map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": "Kubernetes", "version": KubeVersion},
		"paths":       paths,
		"definitions": defs,
	}
}

func v2Operation(op operation) map[string]any {
	params := v2Params(op.params)
	if op.body != "" {
		params = append(params, map[string]any{
			"name": "body", "in": "body", "required": op.method != "delete",
			"schema": map[string]any{"$ref": v2RefPrefix + op.body},
		})
	}
	responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
	for _, code := range op.codes {
		responses[code] = map[string]any{"description": statusText[code], "schema": map[string]any{"$ref": v2RefPrefix + op.response}}
	}
	out := op.commonFields()
	out["consumes"] = api.StringList(op.accepts())
	out["produces"] = api.StringList(responseTypes)
	out["schemes"] = []any{"https"}
	out["responses"] = responses
	if len(params) > 0 {
		out["parameters"] = params
	}
	return out
}

func v2Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m := map[string]any{"name": p.name, "in": p.in, "description": p.desc, "type": p.typ, "uniqueItems": true}
		if p.in == "path" {
			m["required"] = true
		}
		out = append(out, m)
	}
	return out
}

// v2SchemaKeys are the keys a Swagger 2.0 schema may have besides
// extensions; the rest of JSON Schema (nullable, oneOf, anyOf, not, ...) is
// dropped, as kube drops it when it publishes a CRD's schema in v2.
var v2SchemaKeys = map[string]bool{
	"format": true, "title": true, "description": true, "default": true, "multipleOf": true,
	"maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"maxLength": true, "minLength": true, "pattern": true, "maxItems": true, "minItems": true,
	"uniqueItems": true, "maxProperties": true, "minProperties": true, "required": true,
	"enum": true, "type": true, "readOnly": true, "example": true, "externalDocs": true,
}

// v2Schema converts a v3 schema to Swagger 2.0: references point into
// definitions, and a property that is allOf one reference becomes that
// reference, as kube writes it.
func v2Schema(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		switch {
		case k == "$ref":
			out[k] = strings.Replace(v.(string), refPrefix, v2RefPrefix, 1)
		case k == "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				props[name] = v2Value(p)
			}
			out[k] = props
		case k == "items" || k == "additionalProperties" || k == "allOf":
			out[k] = v2Value(v)
		case strings.HasPrefix(k, "x-") || v2SchemaKeys[k]:
			out[k] = v
		}
	}
	if all, ok := out["allOf"].([]any); ok && len(all) == 1 {
		if r, ok := all[0].(map[string]any)["$ref"]; ok {
			delete(out, "allOf")
			out["$ref"] = r
		}
	}
	return out
}

// v2Value converts a schema, a list of schemas, or leaves a boolean.
func v2Value(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return v2Schema(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = v2Value(x)
		}
		return out
	}
	return v
}

// v2Protobuf encodes a Swagger 2.0 JSON document as the gnostic OpenAPIv2
// Document kubectl downloads, as kube-openapi does.
func v2Protobuf(doc []byte) ([]byte, error) {
	d, err := openapi_v2.ParseDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parsing the v2 document: %w", err)
	}
	b, err := proto.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding the v2 document as protobuf: %w", err)
	}
	return b, nil
}
