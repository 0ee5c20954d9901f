package openapi

import (
	"github.com/listwatch/listwatch/internal/server/resource"
)

// responseTypes are the media types the server answers resources in.
var responseTypes = []string{"application/json", "application/yaml"}

// v3Document is the OpenAPI v3 document of one group-version's resources.
func v3Document(rs []*resource.Resource) map[string]any {
	paths, schemas := renderPaths(rs, v3Params, v3Operation)
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "Kubernetes", "version": KubeVersion},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas.out},
	}
}

func v3Operation(op operation) map[string]any {
	out := op.commonFields()
	out["responses"] = v3Responses(op)
	if len(op.params) > 0 {
		out["parameters"] = v3Params(op.params)
	}
	if op.body != "" {
		content := map[string]any{}
		for _, mt := range op.accepts() {
			content[mt] = map[string]any{"schema": map[string]any{"$ref": refPrefix + op.body}}
		}
		out["requestBody"] = map[string]any{"content": content, "required": op.method != "delete"}
	}
	return out
}

func v3Responses(op operation) map[string]any {
	out := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
	for _, code := range op.codes {
		content := map[string]any{}
		for _, mt := range responseTypes {
			content[mt] = map[string]any{"schema": map[string]any{"$ref": refPrefix + op.response}}
		}
		out[code] = map[string]any{"description": statusText[code], "content": content}
	}
	return out
}

func v3Params(ps []param) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m := map[string]any{
			"name": p.name, "in": p.in, "description": p.desc,
			"schema": map[string]any{"type": p.typ, "uniqueItems": true},
		}
		if p.in == "path" {
			m["required"] = true
		}
		out = append(out, m)
	}
	return out
}

var statusText = map[string]string{"200": "OK", "201": "Created", "202": "Accepted"}
