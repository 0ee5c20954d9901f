package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
)

// change is one field that differs between two versions of an object.
type change struct {
	Path string `json:"path"`
	Old  any    `json:"old,omitempty"`
	New  any    `json:"new,omitempty"`
}

// String is `path: old -> new`, with <none> for a missing side.
func (c change) String() string {
	return fmt.Sprintf("%s: %s -> %s", c.Path, jsonText(c.Old), jsonText(c.New))
}

func jsonText(v any) string {
	if v == nil {
		return "<none>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ignoredPaths change on every write and say nothing of what changed.
var ignoredPaths = map[string]bool{"metadata.resourceVersion": true, "metadata.managedFields": true}

// diffObjects lists the fields that differ between old and new, by path
// (data.k, spec.items[2].name), in order.
func diffObjects(old, new map[string]any) []change {
	var out []change
	diffValue("", old, new, &out)
	return out
}

func diffValue(path string, old, new any, out *[]change) {
	if ignoredPaths[path] || reflect.DeepEqual(old, new) {
		return
	}
	om, oldIsMap := old.(map[string]any)
	nm, newIsMap := new.(map[string]any)
	if oldIsMap && newIsMap {
		keys := slices.Sorted(maps.Keys(om))
		for _, k := range slices.Sorted(maps.Keys(nm)) {
			if _, ok := om[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			diffValue(join(path, k), om[k], nm[k], out)
		}
		return
	}
	ol, oldIsList := old.([]any)
	nl, newIsList := new.([]any)
	if oldIsList && newIsList && len(ol) == len(nl) {
		for i := range ol {
			diffValue(path+"["+strconv.Itoa(i)+"]", ol[i], nl[i], out)
		}
		return
	}
	*out = append(*out, change{Path: path, Old: old, New: new})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
