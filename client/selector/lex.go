package selector

// tokenKind classifies the tokens of a label selector.
type tokenKind int

const (
	tokEnd      tokenKind = iota // end of input
	tokWord                      // a key or a value
	tokIn                        // in
	tokNotIn                     // notin
	tokOpen                      // (
	tokClose                     // )
	tokComma                     // ,
	tokBang                      // !
	tokEq                        // =
	tokDoubleEq                  // ==
	tokNotEq                     // !=
	tokGreater                   // >
	tokLess                      // <
)

type token struct {
	kind tokenKind
	text string
	pos  int // byte offset in the input
}

// isWord reports whether t can be a key or a value: "in" and "notin" are
// operators only where an operator is expected ("in in (in)" is valid).
func (t token) isWord() bool {
	return t.kind == tokWord || t.kind == tokIn || t.kind == tokNotIn
}

var symbols = map[string]tokenKind{
	"(": tokOpen, ")": tokClose, ",": tokComma, "!": tokBang,
	"=": tokEq, "==": tokDoubleEq, "!=": tokNotEq, ">": tokGreater, "<": tokLess,
}

// lex splits a label selector into tokens, ending with tokEnd.
//
// It reproduces apimachinery's lexer byte for byte, including its handling of
// NUL, which that lexer cannot tell from the end of input: a NUL right after a
// token is skipped, and any other NUL ends the input.
func lex(s string) []token {
	var toks []token
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) || s[i] == 0 {
			return append(toks, token{kind: tokEnd, pos: i})
		}
		t := scan(s, i)
		toks = append(toks, t)
		i += len(t.text)
		if i < len(s) && s[i] == 0 {
			i++
		}
	}
}

// scan reads the token at s[i], which is not a space or NUL.
func scan(s string, i int) token {
	if isSymbol(s[i]) {
		if i+1 < len(s) {
			if kind, ok := symbols[s[i:i+2]]; ok {
				return token{kind: kind, text: s[i : i+2], pos: i}
			}
		}
		return token{kind: symbols[s[i:i+1]], text: s[i : i+1], pos: i}
	}
	j := i
	for j < len(s) && !isSymbol(s[j]) && !isSpace(s[j]) && s[j] != 0 {
		j++
	}
	t := token{kind: tokWord, text: s[i:j], pos: i}
	switch t.text {
	case "in":
		t.kind = tokIn
	case "notin":
		t.kind = tokNotIn
	}
	return t
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isSymbol(c byte) bool {
	switch c {
	case '=', '!', '(', ')', ',', '>', '<':
		return true
	}
	return false
}
