package selector

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Fields is a field selector: a conjunction of terms comparing named fields of
// an object with values. The zero value selects everything. A Fields is
// immutable and safe for concurrent use.
type Fields struct {
	terms []fieldTerm // in the order of their source text, sorted
}

type fieldTerm struct {
	key, value string
	not        bool // key!=value
}

// ParseFields parses a field selector as apimachinery's fields.ParseSelector
// does: comma-separated terms "key=value", "key==value" or "key!=value".
//
// A term is split at its first operator; the key is taken literally (spaces
// included) and the value is unescaped with UnescapeFieldValue, so "," "=" and
// "\" in a value must be written "\," "\=" and "\\". Empty terms, and terms
// whose key and value are both empty, are ignored. The empty string selects
// everything. Which keys are meaningful is the caller's business: see Keys.
func ParseFields(s string) (Fields, error) {
	terms, err := parseTerms(s)
	if err != nil {
		return Fields{}, &Error{Kind: "field", Selector: s, Err: err}
	}
	return Fields{terms: terms}, nil
}

func parseTerms(s string) ([]fieldTerm, error) {
	raw := splitUnescaped(s)
	slices.Sort(raw) // Kubernetes orders terms by their source text
	var terms []fieldTerm
	for _, r := range raw {
		if r == "" {
			continue
		}
		t, err := parseTerm(r)
		if err != nil {
			return nil, fmt.Errorf("term %q: %w", r, err)
		}
		if t.key != "" || t.value != "" {
			terms = append(terms, t)
		}
	}
	return terms, nil
}

// splitUnescaped splits s at commas not escaped by a backslash.
func splitUnescaped(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case ',':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// parseTerm splits a term at its first "!=", "==" or "=".
func parseTerm(term string) (fieldTerm, error) {
	i := strings.IndexByte(term, '=')
	if i < 0 {
		return fieldTerm{}, errors.New("expected an operator: =, == or !=")
	}
	t := fieldTerm{key: term[:i]}
	raw := term[i+1:]
	switch {
	case i > 0 && term[i-1] == '!':
		t.key, t.not = term[:i-1], true
	case strings.HasPrefix(raw, "="):
		raw = raw[1:]
	}
	v, err := UnescapeFieldValue(raw)
	if err != nil {
		return fieldTerm{}, err
	}
	t.value = v
	return t, nil
}

var fieldValueEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `=`, `\=`)

// EscapeFieldValue escapes "\", "," and "=" in a literal value for use in a
// field selector, as Kubernetes' fields.EscapeValue does.
func EscapeFieldValue(v string) string { return fieldValueEscaper.Replace(v) }

// UnescapeFieldValue reverses EscapeFieldValue, as Kubernetes'
// fields.UnescapeValue does: "\\", "\," and "\=" stand for "\", "," and "=";
// any other escape, a trailing "\", and an unescaped "," or "=" are errors.
// Like Kubernetes, a value that needs unescaping has any invalid UTF-8 in it
// replaced by U+FFFD.
func UnescapeFieldValue(v string) (string, error) {
	if !strings.ContainsAny(v, `\,=`) {
		return v, nil
	}
	var b strings.Builder
	escaped := false
	for _, c := range v {
		switch {
		case escaped && (c == '\\' || c == ',' || c == '='):
			escaped = false
		case escaped:
			return "", fmt.Errorf("invalid escape sequence %q in value (allowed: \\\\ \\, \\=)", `\`+string(c))
		case c == '\\':
			escaped = true
			continue
		case c == ',' || c == '=':
			return "", fmt.Errorf("unescaped %q in value (write \\%c)", c, c)
		}
		b.WriteRune(c)
	}
	if escaped {
		return "", errors.New(`value ends with an unfinished escape "\"`)
	}
	return b.String(), nil
}

// Matches reports whether fields satisfies every term. A field missing from
// fields has the value "", as in Kubernetes: "a=" matches an object without a.
func (s Fields) Matches(fields map[string]string) bool {
	for _, t := range s.terms {
		if (fields[t.key] == t.value) == t.not {
			return false
		}
	}
	return true
}

// Empty reports whether the selector selects everything.
func (s Fields) Empty() bool { return len(s.terms) == 0 }

// Keys returns the field keys the selector uses, sorted and without
// duplicates, so a server can reject keys it does not support.
func (s Fields) Keys() []string {
	keys := make([]string, 0, len(s.terms))
	for _, t := range s.terms {
		keys = append(keys, t.key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// RequiresExactMatch reports the value the first "key=value" term on key
// requires, so a server can serve a watch of one object by name.
func (s Fields) RequiresExactMatch(key string) (value string, ok bool) {
	for _, t := range s.terms {
		if t.key == key && !t.not {
			return t.value, true
		}
	}
	return "", false
}

// String returns the selector as Kubernetes writes it: terms in the order of
// their source text, each as key=value or key!=value with the value escaped.
func (s Fields) String() string {
	var b strings.Builder
	for i, t := range s.terms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.key)
		if t.not {
			b.WriteByte('!')
		}
		b.WriteByte('=')
		b.WriteString(EscapeFieldValue(t.value))
	}
	return b.String()
}

// FieldValue is the text a field selector compares with a field whose JSON
// value is v, as Kubernetes prints a custom resource's selectable field
// (fmt.Sprint of the decoded value): strings as they are, booleans as
// "true"/"false", integers in decimal and other numbers as Go prints a
// float64. Anything else (absent, null, an object, a list) is "".
func FieldValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return strconv.FormatInt(i, 10)
		}
		if f, err := v.Float64(); err == nil {
			return fmt.Sprint(f)
		}
	case float64:
		return fmt.Sprint(v)
	}
	return ""
}
