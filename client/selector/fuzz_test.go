package selector_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/selector"
)

// FuzzParseLabels checks that any input parses without panicking and that an
// accepted selector's String parses back to a selector with the same String
// that matches the same label sets. The second input is a label set written
// "k1=v1;k2=v2".
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "a==b,c!=d", "x in (foo,,baz),y,z notin ()", "!a,b", "n>3,n<9", "in in (in)",
		"example.com/app=web", " a = b ", "a in (b", "a=b,", "!!a", "a=b\x00c", "a=\x00b", "a\v", "a=é",
		strings.Repeat("x", 64), strings.Repeat("a,b=1,", 8) + "c",
	} {
		f.Add(s, "a=b;n=5;x=foo")
	}
	f.Fuzz(func(t *testing.T, s, set string) {
		sel, err := selector.ParseLabels(s)
		if err != nil {
			return
		}
		again, err := selector.ParseLabels(sel.String())
		if err != nil {
			t.Fatalf("ParseLabels(%q).String() = %q does not parse: %v", s, sel.String(), err)
		}
		if again.String() != sel.String() {
			t.Errorf("String() of ParseLabels(%q) is not stable (-want +got):\n-%q\n+%q", s, sel.String(), again.String())
		}
		for _, m := range []map[string]string{nil, parseSet(set)} {
			if sel.Matches(m) != again.Matches(m) {
				t.Errorf("ParseLabels(%q) and its String %q disagree on %q", s, sel.String(), m)
			}
		}
	})
}

// FuzzParseFields checks that any input parses without panicking, that an
// accepted selector's String parses back to one with the same keys that
// matches the same field sets, and that escaping round-trips.
func FuzzParseFields(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "a==b,c!=d", `a=b\,c`, `a=b\=c`, `a=b\\`, `a\,b=c`, "a!!=b", "=", "=,!=", " a = b ",
		"a", "a=b=c", `a=\!`, `a=b\`, "a=\xff\\,", "b=1,a=2", "a==c,a=b",
	} {
		f.Add(s, "a=b;metadata.name=foo")
	}
	f.Fuzz(func(t *testing.T, s, set string) {
		if utf8.ValidString(s) {
			if got, err := selector.UnescapeFieldValue(selector.EscapeFieldValue(s)); err != nil || got != s {
				t.Errorf("UnescapeFieldValue(EscapeFieldValue(%q)) = %q, %v", s, got, err)
			}
		}
		sel, err := selector.ParseFields(s)
		if err != nil {
			return
		}
		again, err := selector.ParseFields(sel.String())
		if err != nil {
			t.Fatalf("ParseFields(%q).String() = %q does not parse: %v", s, sel.String(), err)
		}
		if !slices.Equal(sel.Keys(), again.Keys()) {
			t.Errorf("ParseFields(%q) and its String %q have different keys: %q, %q", s, sel.String(), sel.Keys(), again.Keys())
		}
		for _, m := range []map[string]string{nil, parseSet(set), exactSet(sel)} {
			if sel.Matches(m) != again.Matches(m) {
				t.Errorf("ParseFields(%q) and its String %q disagree on %q", s, sel.String(), m)
			}
		}
	})
}

// parseSet reads "k1=v1;k2=v2" (a part without "=" is a key with value "").
func parseSet(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// exactSet returns the fields the selector's first = term on each key asks for.
func exactSet(s selector.Fields) map[string]string {
	m := map[string]string{}
	for _, k := range s.Keys() {
		if v, ok := s.RequiresExactMatch(k); ok {
			m[k] = v
		}
	}
	return m
}
