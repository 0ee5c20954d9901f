package crd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// nilField is the field of causes kube reports without a path: its
// validator's junctor failures come from a nil field.Path.
const nilField = "<nil>"

// junctors checks v, found at path, against allOf, anyOf, oneOf and not as
// kube-openapi's schemaPropsValidator does: a failed anyOf or oneOf reports
// itself, then the causes of its alternative with the highest match count
// (matchCount); allOf reports
// the causes of every branch, then itself when any failed.
func (c *checker) junctors(s *Schema, v any, old *any, path string) {
	if len(s.AnyOf) > 0 {
		var failed []alternative
		for _, b := range s.AnyOf {
			causes := b.check(v, old, path)
			if len(causes) == 0 {
				failed = nil
				break
			}
			failed = append(failed, alternative{b, causes})
		}
		if failed != nil {
			c.composite(path, "must validate at least one schema (anyOf)")
			c.causes = append(c.causes, best(failed, v)...)
		}
	}
	if len(s.OneOf) > 0 {
		var failed []alternative
		valid := 0
		for _, b := range s.OneOf {
			if causes := b.check(v, old, path); len(causes) == 0 {
				valid++
			} else if valid == 0 {
				failed = append(failed, alternative{b, causes})
			}
		}
		switch valid {
		case 0:
			c.composite(path, "must validate one and only one schema (oneOf). Found none valid")
			c.causes = append(c.causes, best(failed, v)...)
		case 1:
		default:
			c.composite(path, fmt.Sprintf("must validate one and only one schema (oneOf). Found %d valid alternatives", valid))
		}
	}
	if len(s.AllOf) > 0 {
		valid := 0
		for _, b := range s.AllOf {
			causes := b.check(v, old, path)
			if len(causes) == 0 {
				valid++
			}
			c.causes = append(c.causes, causes...)
		}
		switch valid {
		case 0:
			c.composite(path, "must validate all the schemas (allOf). None validated")
		case len(s.AllOf):
		default:
			c.composite(path, "must validate all the schemas (allOf)")
		}
	}
	if s.Not != nil && len(s.Not.check(v, old, path)) == 0 {
		c.composite(path, "must not validate the schema (not)")
	}
}

// alternative is a junctor's schema that v failed, with its causes.
type alternative struct {
	s      *Schema
	causes []api.StatusCause
}

// best returns the causes of the failed alternative kube reports: the
// first of those with the highest match count.
func best(failed []alternative, v any) []api.StatusCause {
	if len(failed) == 1 {
		return failed[0].causes
	}
	top, count := 0, -1
	for i, a := range failed {
		if n := a.s.matchCount(v); n > count {
			top, count = i, n
		}
	}
	return failed[top].causes
}

// check returns the causes of v, found at path, against s alone. Like
// kube's, a junctor's alternatives ratchet their fields against old.
func (s *Schema) check(v any, old *any, path string) []api.StatusCause {
	var c checker
	c.value(s, v, old, path)
	return c.causes
}

// composite adds a junctor's failure as kube reports it: on no field, the
// path quoted in the message.
func (c *checker) composite(path, msg string) {
	c.add(api.CauseTypeFieldValueInvalid, nilField, fmt.Sprintf("Invalid value: \"\": %q %s", path, msg))
}

// lists checks x-kubernetes-list-type set and map below v, found at path,
// as kube's listtype validation does after the schema's: the second of
// equal set items, or of map items with equal keys, is a duplicate. Only
// properties and additionalProperties lead to lists, as in kube.
func (c *checker) lists(s *Schema, v any, path string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			if p := s.Properties[k]; p != nil {
				c.lists(p, v[k], join(path, k))
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				c.lists(s.AdditionalProperties.Schema, v[k], path+"["+k+"]") // kube's fldPath.Key here
			}
		}
	case []any:
		switch s.ListType {
		case "set":
			c.duplicates(path, v)
		case "map":
			c.mapKeys(s, v, path)
		}
		if s.Items != nil {
			for i, e := range v {
				c.lists(s.Items, e, path+"["+strconv.Itoa(i)+"]")
			}
		}
	}
}

// duplicates adds a Duplicate cause for the second of equal items.
func (c *checker) duplicates(path string, items []any) {
	seen := make(map[string]int, len(items))
	for i, x := range items {
		k := jsonKey(x) // quoted strings never equal numbers or booleans
		if seen[k]++; seen[k] == 2 {
			c.add(api.CauseTypeFieldValueDuplicate, path+"["+strconv.Itoa(i)+"]", "Duplicate value: "+show(x))
		}
	}
}

// mapKeys checks a list-type map: every item an object (or null), no two
// with the same values of the list-map keys they have.
func (c *checker) mapKeys(s *Schema, items []any, path string) {
	keys := make([]any, len(items))
	for i, x := range items {
		key, ok := s.mapKey(x)
		if !ok {
			c.add(api.CauseTypeFieldValueInvalid, path+"["+strconv.Itoa(i)+"]", fmt.Sprintf("Invalid value: %s: must be an object for an array of list-type map", show(x)))
			return
		}
		keys[i] = key
	}
	c.duplicates(path, keys)
}

// mapKey returns the list-map keys an item of a list-type map has; only
// objects and null are items.
func (s *Schema) mapKey(x any) (map[string]any, bool) {
	m, ok := x.(map[string]any)
	if x != nil && !ok {
		return nil, false
	}
	key := map[string]any{}
	for _, f := range s.ListMapKeys {
		if kv, ok := m[f]; ok {
			key[f] = kv
		}
	}
	return key, true
}

// oldItems returns what correlates an item of a list with one of old, the
// stored list, as kube's MapList does for ratcheting and oldSelf: in a
// list-type map, the first old item with the same values of every list-map
// key, each a scalar; in other lists, none.
func (s *Schema) oldItems(old *any) func(any) *any {
	none := func(any) *any { return nil }
	if old == nil || s.ListType != "map" || len(s.ListMapKeys) == 0 {
		return none
	}
	list, ok := (*old).([]any)
	if !ok {
		return none
	}
	byKey := make(map[string]*any, len(list))
	for i := range list {
		if key, ok := s.itemKey(list[i]); ok && byKey[key] == nil {
			byKey[key] = &list[i]
		}
	}
	return func(x any) *any {
		key, ok := s.itemKey(x)
		if !ok {
			return nil
		}
		return byKey[key]
	}
}

// itemKey is the key that correlates an item of a list-type map: the
// values of its list-map keys, all present and scalars.
func (s *Schema) itemKey(x any) (string, bool) {
	m, _ := x.(map[string]any)
	var b strings.Builder
	for _, f := range s.ListMapKeys {
		switch v := m[f].(type) {
		case nil, map[string]any, []any:
			return "", false
		default:
			b.WriteString(jsonKey(v))
			b.WriteByte(0)
		}
	}
	return b.String(), true
}
