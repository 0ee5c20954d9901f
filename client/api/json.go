package api

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The server decodes every request body and encodes every stored object
// through the two functions below. encoding/json's reflection costs a 1 KiB
// ConfigMap about 20 µs each way on the test machine; these take the common
// shapes by hand and give everything else (a string with escapes, alone;
// invalid strings, other Go types, every error, with the whole object) to
// encoding/json, so that their results and errors are encoding/json's by
// construction. FuzzObjectJSON checks both against it.

// parseObject decodes data as one JSON object in one pass, numbers as
// json.Number. ok is false when data is anything else or uses what the
// fast path leaves to encoding/json; then nothing is returned.
func parseObject(data []byte) (o Object, ok bool) {
	p := parser{b: data}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	m, ok := p.object(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.b) {
		return nil, false
	}
	return m, true
}

type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

func (p *parser) literal(word string) bool {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// object parses an object; p.b[p.i] is '{'.
func (p *parser) object(depth int) (map[string]any, bool) {
	if depth++; depth > MaxDepth {
		return nil, false
	}
	p.i++
	m := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.string()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // the last of repeated keys wins, as in encoding/json
		if end, ok := p.next('}'); !ok || end {
			return m, ok
		}
	}
}

// next consumes the comma or the end after a member or element: ok is false
// on anything else, end is true at the end.
func (p *parser) next(closer byte) (end, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, true
	case closer:
		p.i++
		return true, true
	}
	return false, false
}

// array parses an array; p.b[p.i] is '['.
func (p *parser) array(depth int) ([]any, bool) {
	if depth++; depth > MaxDepth {
		return nil, false
	}
	p.i++
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if end, ok := p.next(']'); !ok || end {
			return a, ok
		}
	}
}

// string parses a string of printable ASCII or valid UTF-8, handing one
// with escapes to escaped; p.b[p.i] is '"'.
func (p *parser) string() (string, bool) {
	start := p.i + 1
	ascii := true
	for i := start; i < len(p.b); i++ {
		if plain[p.b[i]] {
			continue
		}
		switch c := p.b[i]; {
		case c == '"':
			s := p.b[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			p.i = i + 1
			return string(s), true
		case c == '\\':
			return p.escaped()
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escaped parses a string with escapes, p.b[p.i] being its '"', by
// encoding/json: the string alone leaves the fast path, not the object
// (every owned object's managedFields has one: `k:{\"uid\":...}`).
func (p *parser) escaped() (string, bool) {
	for i := p.i + 1; i < len(p.b); i++ {
		switch p.b[i] {
		case '\\':
			i++
		case '"':
			var s string
			if json.Unmarshal(p.b[p.i:i+1], &s) != nil {
				return "", false
			}
			p.i = i + 1
			return s, true
		}
	}
	return "", false
}

// number parses a number by JSON's grammar into a json.Number.
func (p *parser) number() (json.Number, bool) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	switch n := digits(); {
	case n == 0:
		return "", false
	case n > 1 && p.b[p.i-n] == '0':
		return "", false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return json.Number(p.b[start:p.i]), true
}

// MarshalObject returns json.Marshal(o): the same bytes (keys sorted,
// HTML characters escaped), faster for the values a decoded object holds.
func MarshalObject(o Object) ([]byte, error) {
	return appendValue(make([]byte, 0, 2048), map[string]any(o))
}

// appendValue appends v's JSON as json.Marshal writes it.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case map[string]any:
		return appendMap(b, v)
	case Object:
		return appendMap(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case string:
		return appendString(b, v)
	case json.Number:
		if v == "" || !validNumber(v) {
			break // "" is 0 to encoding/json; an invalid one is its error
		}
		return append(b, v...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case nil:
		return append(b, "null"...), nil
	}
	j, err := json.Marshal(v)
	return append(b, j...), err
}

func appendMap(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendValue(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendString appends s quoted; strings json.Marshal would escape
// anything in go to it.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			j, err := json.Marshal(s)
			return append(b, j...), err
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// plain holds the bytes json.Marshal writes as they are in a string:
// printable ASCII but for the quote, the backslash and <, >, &.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune(`"\\<>&`, rune(c))
	}
	return t
}()

// validNumber reports whether s follows JSON's number grammar.
func validNumber(s json.Number) bool {
	p := parser{b: []byte(s)}
	_, ok := p.number()
	return ok && p.i == len(p.b)
}
