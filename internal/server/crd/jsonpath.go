package crd

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Path is a parsed JSONPath of the subset additionalPrinterColumns use:
// fields (".spec.replicas", "['a.b']"), indexes ("[0]", "[-1]"), wildcards
// ("[*]", ".*") and filters comparing a relative path with a literal
// (`[?(@.type=="Ready")]`, `[?(@.ready)]`), optionally wrapped in braces.
type Path []step

// step is one segment of a Path.
type step struct {
	field    string  // a field name, when not wildcard, index or filter
	index    *int    // an array index, negative from the end
	wildcard bool    // ".*": every element or value
	each     bool    // "[*]": every element of an array
	filter   *filter // elements passing a test
}

// filter is `?(@<path> <op> <literal>)`, or just `?(@<path>)` (exists).
type filter struct {
	path    Path
	op      string // "" for an existence test
	literal any    // string, int64, float64 or bool
}

// ParsePath parses a JSONPath of the supported subset.
func ParsePath(s string) (Path, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		t = t[1 : len(t)-1]
	}
	t = strings.TrimPrefix(t, "$")
	p := &pathParser{s: t}
	path, err := p.steps(false)
	if err != nil {
		return nil, fmt.Errorf("parsing JSONPath %q: %w", s, err)
	}
	if len(path) == 0 {
		return nil, fmt.Errorf("parsing JSONPath %q: empty path", s)
	}
	return path, nil
}

type pathParser struct {
	s   string
	pos int
}

func (p *pathParser) more() bool { return p.pos < len(p.s) }

func (p *pathParser) peek() byte { return p.s[p.pos] }

// steps parses segments until the end, or, inside a filter, until an
// operator or the closing parenthesis.
func (p *pathParser) steps(inFilter bool) (Path, error) {
	var out Path
	for p.more() {
		switch c := p.peek(); {
		case c == '.':
			p.pos++
			st, err := p.field()
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		case c == '[':
			p.pos++
			st, err := p.bracket()
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		case inFilter && strings.IndexByte(" =!<>)", c) >= 0:
			return out, nil
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, p.pos)
		}
	}
	return out, nil
}

func (p *pathParser) field() (step, error) {
	start := p.pos
	for p.more() && strings.IndexByte(".[ =!<>)", p.peek()) < 0 {
		p.pos++
	}
	name := p.s[start:p.pos]
	switch name {
	case "":
		return step{}, fmt.Errorf("empty field name at %d", start)
	case "*":
		return step{wildcard: true}, nil
	}
	return step{field: name}, nil
}

// bracket parses what follows "[" up to and including "]".
func (p *pathParser) bracket() (step, error) {
	end := strings.IndexByte(p.s[p.pos:], ']')
	if end < 0 {
		return step{}, fmt.Errorf("unterminated [ at %d", p.pos)
	}
	if strings.HasPrefix(p.s[p.pos:], "?(") {
		return p.filterStep()
	}
	inner := strings.TrimSpace(p.s[p.pos : p.pos+end])
	p.pos += end + 1
	if inner == "*" {
		return step{each: true}, nil
	}
	if lit, ok := quoted(inner); ok {
		return step{field: lit}, nil
	}
	i, err := strconv.Atoi(inner)
	if err != nil {
		return step{}, fmt.Errorf("unsupported subscript [%s]", inner)
	}
	return step{index: &i}, nil
}

// filterStep parses `?(@path op literal)]`.
func (p *pathParser) filterStep() (step, error) {
	p.pos += len("?(")
	p.skipSpace()
	if !p.more() || p.peek() != '@' {
		return step{}, fmt.Errorf("filter must start with @ at %d", p.pos)
	}
	p.pos++
	f := &filter{}
	var err error
	if f.path, err = p.steps(true); err != nil {
		return step{}, err
	}
	p.skipSpace()
	if f.op = p.operator(); f.op != "" {
		p.skipSpace()
		if f.literal, err = p.literal(); err != nil {
			return step{}, err
		}
		p.skipSpace()
	}
	if !strings.HasPrefix(p.s[p.pos:], ")]") {
		return step{}, fmt.Errorf("filter must end with )] at %d", p.pos)
	}
	p.pos += len(")]")
	return step{filter: f}, nil
}

func (p *pathParser) skipSpace() {
	for p.more() && p.peek() == ' ' {
		p.pos++
	}
}

func (p *pathParser) operator() string {
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(p.s[p.pos:], op) {
			p.pos += len(op)
			return op
		}
	}
	return ""
}

// literal parses a quoted string, a number, true or false.
func (p *pathParser) literal() (any, error) {
	rest := p.s[p.pos:]
	if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
		end := strings.IndexByte(rest[1:], rest[0])
		if end < 0 {
			return nil, fmt.Errorf("unterminated string at %d", p.pos)
		}
		p.pos += end + 2
		return rest[1 : end+1], nil
	}
	end := strings.IndexAny(rest, " )")
	if end < 0 {
		end = len(rest)
	}
	tok := rest[:end]
	p.pos += end
	switch tok {
	case "true", "false":
		return tok == "true", nil
	}
	if i, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return nil, fmt.Errorf("unsupported literal %q", tok)
	}
	return f, nil
}

// quoted returns the content of a '…' or "…" literal.
func quoted(s string) (string, bool) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], true
	}
	return "", false
}

// Eval returns the first value the path finds in v.
func (p Path) Eval(v any) (any, bool) {
	found, ok := p.all(v)
	if !ok || len(found) == 0 {
		return nil, false
	}
	return found[0], true
}

// all returns every value the path finds in v, in document order. It
// fails (ok false) where kube's JSONPath fails the whole path: an index,
// [*] or filter on a value that is not an array, an index out of range, a
// filter comparing values of different kinds. Like kube's, [*] stops at
// the first empty array.
func (p Path) all(v any) (found []any, ok bool) {
	cur := []any{v}
	for _, st := range p {
		var next []any
		for _, c := range cur {
			got, ok := st.apply(c)
			if !ok {
				return nil, false
			}
			next = append(next, got...)
			if a, isArray := c.([]any); st.each && isArray && len(a) == 0 {
				break
			}
		}
		cur = next
	}
	return cur, true
}

func (st step) apply(v any) ([]any, bool) {
	switch {
	case st.index != nil, st.each:
		if v == nil {
			return nil, true
		}
		a, isArray := v.([]any)
		if !isArray {
			return nil, false
		}
		if st.each {
			return a, true
		}
		i := *st.index
		if i < 0 {
			i += len(a)
		}
		if i < 0 || i >= len(a) {
			return nil, false
		}
		return []any{a[i]}, true
	case st.wildcard:
		return elements(v), true
	case st.filter != nil:
		a, isArray := v.([]any)
		if !isArray {
			return nil, false
		}
		var out []any
		for _, e := range a {
			pass, ok := st.filter.match(e)
			if !ok {
				return nil, false
			}
			if pass {
				out = append(out, e)
			}
		}
		return out, true
	}
	m, _ := v.(map[string]any)
	if f, ok := m[st.field]; ok {
		return []any{f}, true
	}
	return nil, true
}

// elements returns an array's elements or an object's values (in key order).
func elements(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case map[string]any:
		out := make([]any, 0, len(v))
		for _, k := range sortedKeys(v) {
			out = append(out, v[k])
		}
		return out
	}
	return nil
}

// match tests one array element as kube's JSONPath filter does: values
// compare only with a literal of their kind (string, boolean, integer,
// floating point), and a failed comparison fails the path (ok false).
func (f *filter) match(v any) (pass, ok bool) {
	found, ok := f.path.all(v)
	if f.op == "" {
		return ok && len(found) > 0, true
	}
	switch {
	case !ok || len(found) > 1:
		return false, false
	case len(found) == 0:
		return false, true
	}
	var c int
	switch got := kubeNumbers(found[0]).(type) {
	case string:
		lit, isString := f.literal.(string)
		if !isString {
			return false, false
		}
		c = strings.Compare(got, lit)
	case bool:
		lit, isBool := f.literal.(bool)
		if !isBool || (f.op != "==" && f.op != "!=") {
			return false, false
		}
		return (got == lit) == (f.op == "=="), true
	case int64:
		lit, isInt := f.literal.(int64)
		if !isInt {
			return false, false
		}
		c = cmp.Compare(got, lit)
	case float64:
		lit, isFloat := f.literal.(float64)
		if !isFloat {
			return false, false
		}
		c = cmp.Compare(got, lit)
	default:
		return false, false
	}
	return compare(f.op, c), true
}

// compare says whether a comparison result c satisfies op.
func compare(op string, c int) bool {
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}
