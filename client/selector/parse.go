package selector

import (
	"fmt"
	"slices"
)

// ParseLabels parses a label selector in Kubernetes' string syntax, accepting
// exactly what apimachinery's labels.Parse accepts:
//
//	selector    = "" | requirement *( "," requirement )
//	requirement = [ "!" ] KEY
//	            | KEY ( "=" | "==" | "!=" | ">" | "<" ) [ VALUE ]
//	            | KEY ( "in" | "notin" ) "(" [ VALUE ] *( "," [ VALUE ] ) ")"
//
// Spaces, tabs, carriage returns and newlines may separate tokens. KEY and
// VALUE are validated as Kubernetes label keys and values; the value of > and
// < must also be an integer. The empty string selects everything.
func ParseLabels(s string) (Labels, error) {
	p := labelParser{toks: lex(s)}
	reqs, err := p.parse()
	if err != nil {
		return Labels{}, &Error{Kind: "label", Selector: s, Err: err}
	}
	sortByKey(reqs)
	return Labels{reqs: reqs}, nil
}

type labelParser struct {
	toks []token // ends with tokEnd
	i    int     // next token
}

func (p *labelParser) peek() token { return p.toks[p.i] }

// next consumes a token; at the end it keeps returning tokEnd.
func (p *labelParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEnd {
		p.i++
	}
	return t
}

func (p *labelParser) parse() ([]requirement, error) {
	if t := p.peek(); t.kind == tokEnd {
		return nil, nil
	} else if !startsRequirement(t) {
		return nil, unexpected(t, "'!', a key or end of string")
	}
	var reqs []requirement
	for {
		r, err := p.requirement()
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
		switch t := p.next(); t.kind {
		case tokEnd:
			return reqs, nil
		case tokComma:
			if t := p.peek(); !startsRequirement(t) {
				return nil, unexpected(t, "'!' or a key after ','")
			}
		default:
			return nil, unexpected(t, "',' or end of string")
		}
	}
}

func startsRequirement(t token) bool { return t.isWord() || t.kind == tokBang }

func (p *labelParser) requirement() (requirement, error) {
	t := p.next()
	negated := t.kind == tokBang
	if negated {
		t = p.next()
	}
	if !t.isWord() {
		return requirement{}, unexpected(t, "a key")
	}
	key := t.text
	if next := p.peek().kind; negated || next == tokEnd || next == tokComma {
		return newRequirement(key, existence(negated), nil)
	}
	op, ok := binaryOps[p.peek().kind]
	if !ok {
		return requirement{}, unexpected(p.peek(), "one of in, notin, =, ==, !=, >, <")
	}
	p.next()
	values, err := p.values(op)
	if err != nil {
		return requirement{}, fmt.Errorf("key %q: %w", key, err)
	}
	return newRequirement(key, op, values)
}

func existence(negated bool) operator {
	if negated {
		return opDoesNotExist
	}
	return opExists
}

var binaryOps = map[tokenKind]operator{
	tokIn:       opIn,
	tokNotIn:    opNotIn,
	tokEq:       opEquals,
	tokDoubleEq: opDoubleEquals,
	tokNotEq:    opNotEquals,
	tokGreater:  opGreaterThan,
	tokLess:     opLessThan,
}

func (p *labelParser) values(op operator) ([]string, error) {
	if op == opIn || op == opNotIn {
		return p.valueSet()
	}
	return p.value()
}

// value parses the value after =, ==, !=, > or <; it may be empty.
func (p *labelParser) value() ([]string, error) {
	switch t := p.peek(); {
	case t.kind == tokEnd || t.kind == tokComma:
		return []string{""}, nil
	case t.isWord():
		p.next()
		return []string{t.text}, nil
	default:
		return nil, unexpected(t, "a value")
	}
}

// valueSet parses "(" [v] *("," [v]) ")": comma-separated values, any of
// them empty. It returns them sorted and without duplicates.
func (p *labelParser) valueSet() ([]string, error) {
	if t := p.next(); t.kind != tokOpen {
		return nil, unexpected(t, "'('")
	}
	var values []string
	for {
		t := p.next()
		v := ""
		if t.isWord() {
			v, t = t.text, p.next()
		}
		values = append(values, v)
		switch t.kind {
		case tokClose:
			slices.Sort(values)
			return slices.Compact(values), nil
		case tokComma:
		default:
			return nil, unexpected(t, "',', ')' or a value")
		}
	}
}

func unexpected(t token, want string) error {
	if t.kind == tokEnd {
		return fmt.Errorf("found end of string, expected %s", want)
	}
	return fmt.Errorf("found %q at offset %d, expected %s", t.text, t.pos, want)
}
