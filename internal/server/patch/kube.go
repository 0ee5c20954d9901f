package patch

import (
	"slices"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/internal/kubespec"
)

// kubeSchemas are the merge schemas of kube's published definitions, by
// name, built on first use; a definition that refers to itself
// (JSONSchemaProps) shares its node. complete holds the kinds' schemas once
// built, read without the lock (every write computes managed fields).
var kubeSchemas struct {
	mu       sync.Mutex
	byName   map[string]*Schema // guarded by mu: every definition built or being built
	complete sync.Map           // name -> *Schema
}

// kubeSchema returns the merge schema of kube's definition name: lists
// merge as its x-kubernetes-patch-strategy and patch-merge-key say (what
// kube's strategic merge patch reads from its Go tags), else as its
// x-kubernetes-list-type and list-map-keys (server-side apply's).
func kubeSchema(name string) *Schema {
	if s, ok := kubeSchemas.complete.Load(name); ok {
		return s.(*Schema)
	}
	kubeSchemas.mu.Lock()
	defer kubeSchemas.mu.Unlock()
	if kubeSchemas.byName == nil {
		kubeSchemas.byName = map[string]*Schema{}
	}
	s := definitionSchema(name)
	kubeSchemas.complete.Store(name, s)
	return s
}

// definitionSchema builds the schema of a definition; called with
// kubeSchemas.mu held.
func definitionSchema(name string) *Schema {
	if s, ok := kubeSchemas.byName[name]; ok {
		return s
	}
	s := &Schema{}
	kubeSchemas.byName[name] = s // before its fields, which may refer to it
	if built := nodeSchema(kubespec.Schema(name)); built != nil {
		*s = *built
	}
	return s
}

// nodeSchema is the merge schema of one node of a definition; nil (merged
// as deduced) for scalars and nodes with no type.
func nodeSchema(n map[string]any) *Schema {
	if ref := refOf(n); ref != "" {
		return definitionSchema(ref)
	}
	switch n["type"] {
	case "object":
		s := &Schema{}
		if props, ok := n["properties"].(map[string]any); ok {
			s.Struct = true
			s.Fields = make(map[string]*Schema, len(props))
			for k, p := range props {
				p, _ := p.(map[string]any)
				s.Fields[k] = nodeSchema(p)
			}
		}
		if ap, ok := n["additionalProperties"].(map[string]any); ok {
			s.Elem = nodeSchema(ap)
		}
		return s
	case "array":
		items, _ := n["items"].(map[string]any)
		s := &Schema{Elem: nodeSchema(items)}
		strategy, _ := n["x-kubernetes-patch-strategy"].(string)
		mergeKey, _ := n["x-kubernetes-patch-merge-key"].(string)
		listType, _ := n["x-kubernetes-list-type"].(string)
		switch {
		case slices.Contains(strings.Split(strategy, ","), "merge") && mergeKey != "":
			s.List, s.Keys = MapList, append([]string{mergeKey}, slices.DeleteFunc(stringsOf(n["x-kubernetes-list-map-keys"]), func(k string) bool { return k == mergeKey })...)
		case slices.Contains(strings.Split(strategy, ","), "merge"), listType == "set":
			s.List = SetList
		case listType == "map":
			s.List, s.Keys = MapList, stringsOf(n["x-kubernetes-list-map-keys"])
		}
		return s
	}
	return nil
}

// refOf returns the definition a node stands for ({"$ref": ...} or kube's
// {"allOf": [{"$ref": ...}]}), or "".
func refOf(n map[string]any) string {
	if r, ok := n["$ref"].(string); ok {
		return strings.TrimPrefix(r, "#/components/schemas/")
	}
	if all, ok := n["allOf"].([]any); ok && len(all) == 1 {
		if one, ok := all[0].(map[string]any); ok {
			return refOf(one)
		}
	}
	return ""
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
