package api

import "fmt"

// MaxDepth is the deepest nesting of objects and arrays that any of our
// decoders accepts, the whole document counting as one level: the limit of
// encoding/json (maxNestingDepth), k8s.io/apimachinery's util/json and
// go-yaml (max_flow_level, max_indents), all 10,000.
const MaxDepth = 10000

// MaxObjectDepth is the deepest object the server stores, so that every
// answer carrying it decodes: a watch event nests it one level down, a
// list two (items), a Table with includeObject=Object three (rows, a row,
// its object).
const MaxObjectDepth = MaxDepth - 3

// ErrTooDeep is CheckObjectDepth's error, in apimachinery's words.
var ErrTooDeep = fmt.Errorf("exceeded max depth of %d", MaxObjectDepth)

// CheckObjectDepth returns ErrTooDeep when obj would encode to JSON nested
// deeper than MaxObjectDepth. It stops at the first level past it.
func CheckObjectDepth(obj Object) error {
	if over(map[string]any(obj), 0) {
		return ErrTooDeep
	}
	return nil
}

// over reports whether v, found at depth, nests past MaxObjectDepth.
func over(v any, depth int) bool {
	switch v := v.(type) {
	case map[string]any:
		if depth++; depth > MaxObjectDepth {
			return true
		}
		for _, e := range v {
			if over(e, depth) {
				return true
			}
		}
	case []any:
		if depth++; depth > MaxObjectDepth {
			return true
		}
		for _, e := range v {
			if over(e, depth) {
				return true
			}
		}
	}
	return false
}
