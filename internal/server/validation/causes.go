package validation

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// path is a field path as kube's field.Path prints it
// ("spec.containers[0].name", "spec.resources.limits[cpu]").
type path string

func (p path) child(names ...string) path {
	for _, name := range names {
		if p == "" {
			p = path(name)
		} else {
			p += "." + path(name)
		}
	}
	return p
}

func (p path) index(i int) path { return p + path("["+strconv.Itoa(i)+"]") }

func (p path) key(k string) path { return p + path("["+k+"]") }

// causes collects the errors of one object, each as apimachinery's
// field.Error becomes a StatusCause: its type, its path, and its ErrorBody
// (the type's words, the bad value, the detail).
type causes []api.StatusCause

func (c *causes) add(typ api.CauseType, p path, msg string) {
	*c = append(*c, api.StatusCause{Type: typ, Field: string(p), Message: msg})
}

// required is field.Required.
func (c *causes) required(p path, detail string) {
	c.add(api.CauseTypeFieldValueRequired, p, withDetail("Required value", detail))
}

// forbidden is field.Forbidden.
func (c *causes) forbidden(p path, detail string) {
	c.add(api.CauseTypeFieldValueForbidden, p, withDetail("Forbidden", detail))
}

// invalid is field.Invalid.
func (c *causes) invalid(p path, value any, detail string) {
	c.add(api.CauseTypeFieldValueInvalid, p, withDetail("Invalid value: "+render(value), detail))
}

// invalidOmitted is field.Invalid with field.OmitValueType for the value.
func (c *causes) invalidOmitted(p path, detail string) {
	c.add(api.CauseTypeFieldValueInvalid, p, withDetail("Invalid value", detail))
}

// duplicate is field.Duplicate.
func (c *causes) duplicate(p path, value any) {
	c.add(api.CauseTypeFieldValueDuplicate, p, "Duplicate value: "+render(value))
}

// notFound is field.NotFound.
func (c *causes) notFound(p path, value any) {
	c.add(api.CauseTypeFieldValueNotFound, p, "Not found: "+render(value))
}

// tooMany is field.TooMany of a list of n items.
func (c *causes) tooMany(p path, n, max int) {
	c.add(causeTypeTooMany, p, fmt.Sprintf("Too many: %d: must have at most %d items", n, max))
}

// causeTypeTooMany is metav1.CauseTypeTooMany.
const causeTypeTooMany api.CauseType = "FieldValueTooMany"

// tooLong is field.TooLong, whose value kube omits.
func (c *causes) tooLong(p path, max int) {
	c.add(api.CauseTypeFieldValueTooLong, p, fmt.Sprintf("Too long: may not be more than %d bytes", max))
}

// notSupported is field.NotSupported with a value of a named string type
// (rendered as JSON, as kube renders those).
func (c *causes) notSupported(p path, value string, valid ...string) {
	quoted := make([]string, len(valid))
	for i, v := range valid {
		quoted[i] = strconv.Quote(v)
	}
	c.add(api.CauseTypeFieldValueNotSupported, p, "Unsupported value: "+render(jsonValue{value})+": supported values: "+strings.Join(quoted, ", "))
}

// enum checks a string field kube's Go type leaves "" when unset: Required
// when empty, NotSupported when not one of valid.
func (c *causes) enum(p path, value string, valid ...string) {
	switch {
	case value == "":
		c.required(p, "")
	case !slices.Contains(valid, value):
		c.notSupported(p, value, valid...)
	}
}

// nonNegative is ValidateNonnegativeField on a field that is set.
func (c *causes) nonNegative(p path, v any) {
	if n, ok := integer(v); ok && n < 0 {
		c.invalid(p, n, "must be greater than or equal to 0")
	}
}

func withDetail(s, detail string) string {
	if detail == "" {
		return s
	}
	return s + ": " + detail
}

// jsonValue is a value kube holds in a named type, which its ErrorBody
// renders as JSON rather than with %q.
type jsonValue struct{ v any }

// render is the bad value as field.Error's ErrorBody prints it: numbers
// and booleans plainly, strings quoted, anything else as JSON.
func render(v any) string {
	switch v := v.(type) {
	case int64, bool:
		return fmt.Sprint(v)
	case string:
		return strconv.Quote(v)
	case jsonValue:
		b, _ := json.Marshal(v.v)
		return string(b)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// integer reads a number as JSON (json.Number), protobuf (float64) or
// defaulting (int, int64) leave it.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), n == math.Trunc(n) && math.Abs(n) < 1<<63
	}
	return 0, false
}

// Accessors for the generic object; the schema engine has checked types,
// so a mistyped value reads as absent.

func object(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func list(m map[string]any, key string) []any {
	v, _ := m[key].([]any)
	return v
}

func str(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}

// stringMap reads a map of strings (labels, selectors' matchLabels).
func stringMap(m map[string]any, key string) map[string]string {
	raw := object(m, key)
	if raw == nil {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k], _ = v.(string)
	}
	return out
}
