package crd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Cause types kube uses for schema violations that api does not name.
const (
	causeTypeInvalid = api.CauseType("FieldValueTypeInvalid")
	causeTooMany     = api.CauseType("FieldValueTooMany")
)

// Validate checks a custom object against s, after PruneAndDefault, as
// kube's apiextensions validator does, and returns the violations with
// kube's field paths and messages ("spec.replicas", "Invalid value:
// \"string\": spec.replicas in body must be of type integer: \"string\"").
// apiVersion, kind and metadata are left to the registry.
func (s *Schema) Validate(obj api.Object) []api.StatusCause {
	var c checker
	c.root(s, obj, nil)
	c.lists(s, map[string]any(obj), "")
	return c.causes
}

// ValidateUpdate is Validate with kube's validation ratcheting (1.30+): a
// violation in a value that the update leaves unchanged does not block it.
// A schema node's causes are dropped when its value equals the stored
// one's at the same place: fields by name, list-type map items by their
// keys, nothing in other lists. List-type duplicates count only if the
// stored object had none.
func (s *Schema) ValidateUpdate(obj, old api.Object) []api.StatusCause {
	var c checker
	prev := any(map[string]any(old))
	c.root(s, obj, &prev)
	var stored checker
	if stored.lists(s, prev, ""); len(stored.causes) == 0 {
		c.lists(s, map[string]any(obj), "")
	}
	return c.causes
}

// root checks a whole object against s, ratcheted against old unless nil.
// Like kube-openapi's Result, it reports a cause once however many checks
// find it (a node's enum and the same enum in one of its allOf).
func (c *checker) root(s *Schema, obj api.Object, old *any) {
	n := len(c.causes)
	c.junctors(s, map[string]any(obj), old, "")
	c.object(s, map[string]any(obj), old, "", true)
	c.ratchet(n, map[string]any(obj), old)
	seen := map[api.StatusCause]bool{}
	c.causes = slices.DeleteFunc(c.causes, func(x api.StatusCause) bool {
		dup := seen[x]
		seen[x] = true
		return dup
	})
}

// ratchet drops the causes added since the first n when v equals old.
func (c *checker) ratchet(n int, v any, old *any) {
	if old != nil && len(c.causes) > n && sameValue(v, *old) {
		c.causes = c.causes[:n]
	}
}

// field returns the correlated old value of a field of an object, or nil.
func field(old *any, k string) *any {
	if old == nil {
		return nil
	}
	m, _ := (*old).(map[string]any)
	if v, ok := m[k]; ok {
		return &v
	}
	return nil
}

// checker collects the violations of one object.
type checker struct{ causes []api.StatusCause }

func (c *checker) add(typ api.CauseType, path, msg string) {
	c.causes = append(c.causes, apierror.Field(typ, path, msg))
}

// invalid adds kube's Invalid cause: `Invalid value: <v>: <path> in body <detail>`.
func (c *checker) invalid(path string, v any, detail string) {
	c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %s: %s in body %s", show(v), path, detail))
}

// value checks v, found at path, against s; old is the stored object's
// correlated value, or nil.
func (c *checker) value(s *Schema, v any, old *any, path string) {
	n := len(c.causes)
	c.node(s, v, old, path)
	c.ratchet(n, v, old)
}

// node checks v against s as kube-openapi's SchemaValidator does: a type
// mismatch does not stop the other checks, each of which applies by the
// type v has (a null meets only the type and the enum).
func (c *checker) node(s *Schema, v any, old *any, path string) {
	if want, got, bad := s.typeMismatch(v); bad {
		c.add(causeTypeInvalid, path, fmt.Sprintf("Invalid value: %q: %s in body must be of type %s: %q", got, path, want, got))
	}
	if v != nil {
		c.junctors(s, v, old, path)
	}
	switch v := v.(type) {
	case map[string]any:
		c.object(s, v, old, path, s.EmbeddedResource)
	case []any:
		c.array(s, v, old, path)
	case string:
		c.str(s, v, path)
	case nil, bool:
	default:
		c.number(s, v, path)
	}
	if len(s.Enum) > 0 && !s.inEnum(v) {
		// kube's NotSupported quotes every value, JSON for other than strings.
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			if str, ok := e.(string); ok {
				vals[i] = strconv.Quote(str)
			} else {
				vals[i] = strconv.Quote(show(e))
			}
		}
		c.add(api.CauseTypeFieldValueNotSupported, path, fmt.Sprintf("Unsupported value: %s: supported values: %s", show(v), strings.Join(vals, ", ")))
	}
}

// inEnum is kube-openapi's enum check, which converts v to each value's
// Go type before comparing: JSON integers are int64, so a number is in an
// integer enum when its integer part is, and an integer in a string enum
// when the character it codes is.
func (s *Schema) inEnum(v any) bool {
	if s.enum[jsonKey(v)] {
		return true
	}
	f, ok := toFloat(v)
	if !ok {
		return false
	}
	for _, e := range s.Enum {
		switch e := e.(type) {
		case string:
			if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 && string(rune(int64(f))) == e {
				return true
			}
		default:
			if ef, ok := toFloat(e); ok && ef == math.Trunc(ef) && math.Trunc(f) == ef {
				return true
			}
		}
	}
	return false
}

// typeMismatch is kube-openapi's typeValidator: whether v's type does not
// fit s, and the type s wants and the one v has as its message names them.
// With a format, a value that is neither a string nor an array is named by
// its Go format ("int64"), and a string or an array always fits a
// non-numeric node.
func (s *Schema) typeMismatch(v any) (want, got string, bad bool) {
	var types []string
	switch {
	case s.IntOrString:
		types = []string{"integer", "string"}
	case s.Type != "":
		types = []string{s.Type}
	}
	format := s.kubeFormat()
	if len(types) == 0 && format == "" {
		return "", "", false
	}
	t := typeOf(v)
	if t == "null" {
		return strings.Join(types, ","), t, len(types) > 0 && !s.Nullable
	}
	if t == "integer" && !decodesAsInt64(v) {
		t = "number" // kube's decoder reads 2.0, and integers past int64, as float64
	}
	numeric := slices.Contains(types, "number") || slices.Contains(types, "integer")
	fits := slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number") ||
		t == "number" && slices.Contains(types, "integer") && isJSONInteger(v)
	switch {
	case format != "" && t != "string" && t != "array" && !fits && goFormat(t) != format:
		return format, goFormat(t), true
	case format != "" && !numeric && (t == "string" || t == "array"):
		return "", "", false
	}
	return strings.Join(types, ","), t, !fits
}

// decodesAsInt64 reports whether kube's JSON decoder reads the number v
// as an int64: an integer literal in its range.
func decodesAsInt64(v any) bool {
	_, ok := asInt64(v)
	return ok
}

// asInt64 is v as the int64 kube decodes it to, if it does.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// isJSONInteger is swag's IsFloat64AJSONInteger, which kube-openapi takes
// for an integer: within +-(2^53-1), whole to a relative 1e-9.
func isJSONInteger(v any) bool {
	f, _ := toFloat(v)
	r := math.Round(f)
	return math.Abs(f) <= 1<<53-1 && (f == r || r != 0 && math.Abs(f-r) < 1e-9*math.Abs(r))
}

// goFormat is the format kube-openapi infers from a decoded value's Go type.
func goFormat(t string) string {
	switch t {
	case "integer":
		return "int64"
	case "number":
		return "float64"
	}
	return ""
}

// kubeFormat is the format kube validates s with: its schema validator
// strips formats it does not support (StripUnsupportedFormatsPostProcessor),
// keeping string formats on strings and untyped nodes, int32 and int64 on
// integers, float and double on numbers.
func (s *Schema) kubeFormat() string {
	t := s.Type
	if s.IntOrString {
		t = ""
	}
	switch {
	case (t == "" || t == "string") && formatCheck(s.Format) != nil,
		t == "integer" && (s.Format == "int32" || s.Format == "int64"),
		t == "number" && (s.Format == "float" || s.Format == "double"):
		return s.Format
	}
	return ""
}

// object checks a JSON object; typeMeta says it is a resource whose
// apiVersion, kind and metadata are not the schema's.
func (c *checker) object(s *Schema, m map[string]any, old *any, path string, typeMeta bool) {
	for _, name := range s.Required {
		if _, ok := m[name]; !ok {
			c.add(api.CauseTypeFieldValueRequired, join(path, name), "Required value")
		}
	}
	if s.EmbeddedResource {
		for _, f := range []string{"apiVersion", "kind"} {
			if str, _ := m[f].(string); str == "" {
				c.add(api.CauseTypeFieldValueRequired, join(path, f), "Required value: must not be empty")
			}
		}
	}
	for _, k := range sortedKeys(m) {
		if typeMeta && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		if p := s.Properties[k]; p != nil {
			c.value(p, m[k], field(old, k), join(path, k))
		} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			c.value(s.AdditionalProperties.Schema, m[k], field(old, k), join(path, k))
		}
	}
	if s.MinProperties != nil && int64(len(m)) < *s.MinProperties {
		c.invalid(path, len(m), fmt.Sprintf("should have at least %d properties", *s.MinProperties))
	}
	if s.MaxProperties != nil && int64(len(m)) > *s.MaxProperties {
		c.tooMany(path, len(m), *s.MaxProperties)
	}
}

func (c *checker) array(s *Schema, a []any, old *any, path string) {
	if s.Items != nil {
		prev := s.oldItems(old)
		for i, e := range a {
			c.value(s.Items, e, prev(e), path+"["+strconv.Itoa(i)+"]")
		}
	}
	if s.MinItems != nil && int64(len(a)) < *s.MinItems {
		c.invalid(path, len(a), fmt.Sprintf("should have at least %d items", *s.MinItems))
	}
	if s.MaxItems != nil && int64(len(a)) > *s.MaxItems {
		c.tooMany(path, len(a), *s.MaxItems)
	}
}

// str checks a string as kube-openapi's stringValidator, which reports
// the first of maxLength, minLength and pattern that fails, then its
// formatValidator.
// tooMany adds kube's field.TooMany cause, "item" when at most one.
func (c *checker) tooMany(path string, n int, most int64) {
	items := "items"
	if most == 1 {
		items = "item"
	}
	c.add(causeTooMany, path, fmt.Sprintf("Too many: %d: must have at most %d %s", n, most, items))
}

func (c *checker) str(s *Schema, v, path string) {
	n := int64(utf8.RuneCountInString(v))
	switch {
	case s.MaxLength != nil && n > *s.MaxLength:
		c.add(api.CauseTypeFieldValueTooLong, path, fmt.Sprintf("Too long: may not be more than %d bytes", *s.MaxLength))
	case s.MinLength != nil && n < *s.MinLength:
		c.invalid(path, v, fmt.Sprintf("should be at least %d chars long", *s.MinLength))
	case s.pattern != nil && !s.pattern.MatchString(v):
		c.invalid(path, v, fmt.Sprintf("should match '%s'", s.Pattern))
	}
	if check := formatCheck(s.kubeFormat()); check != nil && !check(v) {
		c.add(causeTypeInvalid, path, fmt.Sprintf("Invalid value: %q: %s in body must be of type %s: %q", v, path, s.Format, v))
	}
}

func (c *checker) number(s *Schema, v any, path string) {
	f, _ := toFloat(v)
	if s.Maximum != nil {
		if x, limit, shown := s.bound(v, *s.Maximum); x > limit || (s.ExclusiveMaximum && x == limit) {
			c.invalid(path, v, "should be less than "+orEqual(!s.ExclusiveMaximum)+shown)
		}
	}
	if s.Minimum != nil {
		if x, limit, shown := s.bound(v, *s.Minimum); x < limit || (s.ExclusiveMinimum && x == limit) {
			c.invalid(path, v, "should be greater than "+orEqual(!s.ExclusiveMinimum)+shown)
		}
	}
	if m := s.MultipleOf; m != nil && *m > 0 && !isIntegral(f / *m) {
		c.invalid(path, v, "should be a multiple of "+formatFloat(*m))
	}
	if typ, ok := s.numberFits(f); !ok {
		c.add(api.CauseTypeFieldValueInvalid, nilField, fmt.Sprintf("Invalid value: \"\": Checked value must be of type %s in %s", typ, path))
	}
}

// bound is how kube-openapi compares v with a maximum or minimum: as
// integers, the limit truncated and printed as one, when its decoder reads
// v as an int64 and the limit fits the node's type; else as floats. It
// returns v, the limit and the limit as kube's message prints it.
func (s *Schema) bound(v any, limit float64) (x, lim float64, shown string) {
	f, _ := toFloat(v)
	if _, fits := s.numberFits(limit); fits && decodesAsInt64(v) {
		l := int64(limit)
		return f, float64(l), strconv.FormatInt(l, 10)
	}
	return f, limit, formatFloat(limit)
}

// numberFits is kube-openapi's IsValueValidAgainstRange for a value of an
// integer or number node: an integer node takes whole numbers of its
// format's range (int64 by default), a float node numbers that fit a
// float32. It returns the type kube's message names when f does not fit.
func (s *Schema) numberFits(f float64) (string, bool) {
	switch format := s.kubeFormat(); {
	case s.Type == "integer" && format == "int32":
		return "integer with format int32", f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32
	case s.Type == "integer" && format != "":
		return "integer with format " + format, f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64
	case s.Type == "integer":
		return "integer (default format)", f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64
	case s.Type == "number" && format == "float":
		return "number with format float", math.Abs(f) <= math.MaxFloat32
	}
	return "", true
}

// isIntegral reports whether f is a whole number, within rounding error.
func isIntegral(f float64) bool { return math.Abs(f-math.Round(f)) < 1e-9 }

func orEqual(inclusive bool) string {
	if inclusive {
		return "or equal to "
	}
	return ""
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// typeOf names the JSON type of a decoded value; integral numbers are
// "integer", others "number".
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	f, ok := toFloat(v)
	switch {
	case !ok:
		return fmt.Sprintf("%T", v)
	case f == math.Trunc(f) && !math.IsInf(f, 0):
		return "integer"
	}
	return "number"
}

// toFloat reads a number of any form the decoder or the server produces.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// jsonKey writes a decoded JSON value with its numbers in one form and
// its keys sorted, so equal values, however written, have equal keys.
func jsonKey(v any) string {
	var b strings.Builder
	writeKey(&b, v, false)
	return b.String()
}

// sameValue is kube's reflect.DeepEqual of decoded values, by which
// ratcheting finds a value unchanged: as jsonKey, but an integer (decoded
// to int64) is not the same number written as a float (1 and 1.0, 1e2).
func sameValue(a, b any) bool {
	var ka, kb strings.Builder
	writeKey(&ka, a, true)
	writeKey(&kb, b, true)
	return ka.String() == kb.String()
}

// writeKey writes v's key; typed marks integers apart from other numbers.
func writeKey(b *strings.Builder, v any, typed bool) {
	switch v := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeKey(b, v[k], typed)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeKey(b, e, typed)
		}
		b.WriteByte(']')
	default:
		if n, ok := asInt64(v); typed && ok {
			b.WriteString("i" + strconv.FormatInt(n, 10))
			return
		}
		if f, ok := toFloat(v); ok {
			b.WriteString(formatFloat(f + 0)) // + 0 makes -0 0
			return
		}
		b.WriteString(show(v))
	}
}

// show formats a value as kube's field errors do: strings quoted, numbers
// with %v of the int64 or float64 kube decodes them to ("2.0000005e+06"),
// others as JSON.
func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case json.Number, float64:
		if decodesAsInt64(v) {
			return fmt.Sprint(v)
		}
		f, _ := toFloat(v)
		return formatFloat(f)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
