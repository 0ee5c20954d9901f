package crd

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Path is a parsed JSONPath of what kube's table convertor evaluates for
// additionalPrinterColumns (k8s.io/client-go/util/jsonpath, its semantics
// included): fields (".spec.replicas", "['a']"), slices and indexes
// ("[0]", "[-1]", "[1:3]", "[::2]", "[*]"), unions ("[0,2]",
// "['a','b']"), wildcards (".*"), recursive descent ("..name") and
// filters comparing a relative path with a literal
// (`[?(@.type=="Ready")]`, `[?(@.ready)]`), optionally wrapped in braces.
type Path []step

// step is one segment of a Path.
type step struct {
	field     string  // a field name, when nothing below is set
	slice     *slice  // [start:end:step], [i], [*]
	wildcard  bool    // ".*": every element or value
	recursive bool    // "..": every array, object and string at or below
	union     []Path  // "[a,b]": each path's results, in turn
	filter    *filter // elements passing a test
}

// slice is kube's ArrayNode: each bound may be absent (known false); an
// index [i] is [i:i+1] with the end derived, which counts from the end
// when it is 0 ([-1]).
type slice struct {
	start, end, step    int
	endKnown, stepKnown bool
	derived             bool
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
		case strings.HasPrefix(p.s[p.pos:], ".."):
			if len(out) > 0 && out[len(out)-1].recursive {
				return nil, fmt.Errorf("invalid multiple recursive descent at %d", p.pos)
			}
			p.pos += len("..")
			out = append(out, step{recursive: true})
			if p.more() && p.peek() != '[' {
				st, err := p.field()
				if err != nil {
					return nil, err
				}
				out = append(out, st)
			}
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

// field parses a field name; a backslash keeps the character after it
// ("app\.kubernetes\.io").
func (p *pathParser) field() (step, error) {
	start := p.pos
	for p.more() && strings.IndexByte(".[ =!<>)", p.peek()) < 0 {
		if p.peek() == '\\' {
			p.pos++
		}
		p.pos = min(p.pos+1, len(p.s))
	}
	name := strings.ReplaceAll(p.s[start:p.pos], "\\", "")
	switch name {
	case "":
		return step{}, fmt.Errorf("empty field name at %d", start)
	case "*":
		return step{wildcard: true}, nil
	}
	return step{field: name}, nil
}

// bracket parses what follows "[" up to and including "]", as kube's
// parser: "*" is ":", commas make a union, '…' is a field path, anything
// else a slice.
func (p *pathParser) bracket() (step, error) {
	if strings.HasPrefix(p.s[p.pos:], "?(") {
		return p.filterStep()
	}
	end := strings.IndexByte(p.s[p.pos:], ']')
	if end < 0 {
		return step{}, fmt.Errorf("unterminated [ at %d", p.pos)
	}
	inner := p.s[p.pos : p.pos+end]
	p.pos += end + 1
	return subscript(inner)
}

// subscript parses the text between brackets.
func subscript(inner string) (step, error) {
	if inner == "*" {
		inner = ":"
	}
	if parts := strings.Split(inner, ","); len(parts) > 1 {
		var u []Path
		for _, part := range parts {
			st, err := subscript(strings.Trim(part, " "))
			if err != nil {
				return step{}, err
			}
			u = append(u, Path{st})
		}
		return step{union: u}, nil
	}
	if m := dictKey.FindStringSubmatch(inner); m != nil {
		// kube reads ['a.b'] as .a.b.
		p := &pathParser{s: "." + m[1]}
		path, err := p.steps(false)
		if err != nil {
			return step{}, err
		}
		return step{union: []Path{path}}, nil
	}
	m := sliceSubscript.FindStringSubmatch(inner)
	if m == nil {
		return step{}, fmt.Errorf("invalid array index %s", inner)
	}
	var sl slice
	var err error
	if m[1] != "" {
		if sl.start, err = strconv.Atoi(m[1]); err != nil {
			return step{}, fmt.Errorf("array index %s is not a number", m[1])
		}
	}
	switch {
	case m[2] == "":
		sl.end, sl.endKnown, sl.derived = sl.start+1, true, true
	case m[2] != ":":
		sl.endKnown = true
		if sl.end, err = strconv.Atoi(m[2][1:]); err != nil {
			return step{}, fmt.Errorf("array index %s is not a number", m[2][1:])
		}
	}
	if len(m[3]) > 1 {
		sl.stepKnown = true
		if sl.step, err = strconv.Atoi(m[3][1:]); err != nil {
			return step{}, fmt.Errorf("array index %s is not a number", m[3][1:])
		}
	}
	return step{slice: &sl}, nil
}

// Subscripts kube's JSONPath parser recognises.
var (
	dictKey        = regexp.MustCompile(`^'([^']*)'$`)
	sliceSubscript = regexp.MustCompile(`^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`)
)

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

// all returns every value the path finds in v, in kube's order (object
// keys sorted where kube's follows map order). It fails (ok false) where
// kube's JSONPath fails the whole path: a slice or filter on a value that
// is not an array, an index out of range, a filter comparing values of
// different kinds, a step of 0 or less.
func (p Path) all(v any) (found []any, ok bool) {
	cur := []any{v}
	for _, st := range p {
		if cur, ok = st.eval(cur); !ok {
			return nil, false
		}
	}
	return cur, true
}

// eval applies one step to every value found so far.
func (st step) eval(in []any) ([]any, bool) {
	switch {
	case st.slice != nil:
		return st.slice.eval(in)
	case st.union != nil:
		var out []any
		for _, p := range st.union {
			got, ok := p.evalFrom(in)
			if !ok {
				return nil, false
			}
			out = append(out, got...)
		}
		return out, true
	case st.recursive:
		return descend(in), true
	}
	var out []any
	for _, v := range in {
		switch {
		case v == nil:
		case st.wildcard:
			out = append(out, elements(v)...)
		case st.filter != nil:
			a, isArray := v.([]any)
			if !isArray {
				return nil, false
			}
			for _, e := range a {
				pass, ok := st.filter.match(e)
				if !ok {
					return nil, false
				}
				if pass {
					out = append(out, e)
				}
			}
		default:
			m, _ := v.(map[string]any)
			if f, ok := m[st.field]; ok {
				out = append(out, f)
			}
		}
	}
	return out, true
}

// evalFrom is all, from several values.
func (p Path) evalFrom(in []any) ([]any, bool) {
	var ok bool
	for _, st := range p {
		if in, ok = st.eval(in); !ok {
			return nil, false
		}
	}
	return in, true
}

// eval is kube's evalArray: bounds counted from the end when negative, an
// empty range ending the evaluation (what was found stays found), a bound
// out of range failing it.
func (sl *slice) eval(in []any) ([]any, bool) {
	var out []any
	for _, v := range in {
		if v == nil {
			continue
		}
		a, isArray := v.([]any)
		if !isArray {
			return nil, false
		}
		start, end := sl.start, len(a)
		if start < 0 {
			start += len(a)
		}
		if sl.endKnown {
			end = sl.end
			if end < 0 || (end == 0 && sl.derived) {
				end += len(a)
			}
		}
		if start == end {
			return out, true
		}
		if start < 0 || start >= len(a) || end < 0 || end > len(a) || start > end {
			return nil, false
		}
		by := 1
		if sl.stepKnown {
			if sl.step <= 0 {
				return nil, false
			}
			by = sl.step
		}
		for i := start; i < end; i += by {
			out = append(out, a[i])
		}
	}
	return out, true
}

// descend is kube's recursive descent: every array, object and non-empty
// string at or below each value, a container before what it holds.
func descend(in []any) []any {
	var out []any
	for _, v := range in {
		var below []any
		switch v := v.(type) {
		case string:
			for i := range len(v) {
				below = append(below, v[i])
			}
		case map[string]any, []any:
			below = elements(v)
		}
		if len(below) > 0 {
			out = append(out, v)
			out = append(out, descend(below)...)
		}
	}
	return out
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
