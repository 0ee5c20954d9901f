package servicealloc

import "encoding/json"

// The Service's JSON as decoded: these read a missing or mistyped field as
// its zero value (validation judges it).

func mapOf(m map[string]any, key string) map[string]any {
	c, _ := m[key].(map[string]any)
	return c
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// list is the objects of the list m[key].
func list(m map[string]any, key string) []map[string]any {
	l, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(l))
	for _, v := range l {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

// intOf reads a number as JSON (json.Number), protobuf (float64) or Go
// (int, int64) leave it; 0 when it is none.
func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	}
	return 0
}
