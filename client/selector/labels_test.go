package selector_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/selector"
)

func TestParseLabels(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 63)
	prefix := strings.Repeat("p", 249) + ".com"
	tests := []struct {
		name, in string
		want     string // String() of the result
	}{
		{"empty", "", ""},
		{"blank", " \t\r\n", ""},
		{"equals", "app=web", "app=web"},
		{"double equals", "app==web", "app==web"},
		{"not equals", "app!=web", "app!=web"},
		{"empty value", "app=", "app="},
		{"in", "tier in (b,a)", "tier in (a,b)"},
		{"in deduplicates", "tier in (a,b,a)", "tier in (a,b)"},
		{"in empty set", "tier in ()", "tier in ()"},
		{"in empty values", "tier in (,a,,)", "tier in (,a)"},
		{"notin", "tier notin (a)", "tier notin (a)"},
		{"notin without space", "tier notin(a)", "tier notin (a)"},
		{"exists", "tier", "tier"},
		{"not exists", "!tier", "!tier"},
		{"not exists with space", "! tier", "!tier"},
		{"greater", "n>3", "n>3"},
		{"less", "n<3", "n<3"},
		{"sorted by key", "b=1,a=2,c", "a=2,b=1,c"},
		{"whitespace", " a = b ,\tc\nin\r( d , e ) ", "a=b,c in (d,e)"},
		{"keywords as key and value", "in in (in),notin=notin", "in in (in),notin=notin"},
		{"prefixed key", "example.com/app=web", "example.com/app=web"},
		{"longest name and value", long + "=" + long, long + "=" + long},
		{"longest prefix", prefix + "/a", prefix + "/a"},
		{"key of one character", "a=b", "a=b"},
		{"value with dot dash underscore", "a=b.c-d_e", "a=b.c-d_e"},
		{"NUL after token is skipped", "a=\x00b", "a=b"},
		{"NUL elsewhere ends input", "a=b \x00junk", "a=b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseLabels(tt.in)
			if err != nil {
				t.Fatalf("ParseLabels(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("ParseLabels(%q).String() mismatch (-want +got):\n-%q\n+%q", tt.in, tt.want, got)
			}
		})
	}
}

func TestParseLabelsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     string // in the message
	}{
		{"comma only", ",", `found "," at offset 0, expected '!', a key or end of string`},
		{"trailing comma", "a=b,", "found end of string, expected '!' or a key after ','"},
		{"double comma", "a,,b", `found "," at offset 2`},
		{"double bang", "!!a", `found "!" at offset 1, expected a key`},
		{"bang with operator", "!a=b", `found "=" at offset 2, expected ',' or end of string`},
		{"missing operator", "a b", `found "b" at offset 2, expected one of in, notin`},
		{"triple equals", "a===b", `found "=" at offset 3, expected a value`},
		{"in without parentheses", "a in b", `found "b" at offset 5, expected '('`},
		{"unclosed set", "a in (b", "found end of string, expected ',', ')' or a value"},
		{"two values without comma", "a in (b c)", `found "c"`},
		{"empty name", "example.com/=b", "name part must be non-empty"},
		{"empty prefix", "/a=b", "prefix part must be non-empty"},
		{"two slashes", "a/b/c", "optional DNS subdomain prefix"},
		{"name too long", strings.Repeat("x", 64), "name part must be no more than 63 bytes"},
		{"prefix too long", strings.Repeat("p", 254) + "/a", "prefix part must be no more than 253 bytes"},
		{"uppercase prefix", "Example.com/a", "prefix part must be a lowercase RFC 1123 subdomain"},
		{"empty prefix label", "a..b/c", "prefix part must be a lowercase"},
		{"name starts with dash", "-a", "name part must consist of"},
		{"name ends with dot", "a.", "name part must consist of"},
		{"non-ASCII key", "é", "name part must consist of"},
		{"value too long", "a=" + strings.Repeat("v", 64), "must be no more than 63 bytes"},
		{"bad value", "a=-b", `value "-b" of key "a": must be empty or consist of`},
		{"bang in set", "a in (b,c!)", `found "!" at offset 9`},
		{"bad value in set charset", "a in (b,é)", `value "é" of key "a"`},
		{"greater than non-integer", "a>b", `value "b": must be a base-10 64-bit integer`},
		{"greater than empty", "a>", "must be a base-10 64-bit integer"},
		{"greater than overflow", "a>9223372036854775808", "must be a base-10 64-bit integer"},
		{"vertical tab is not space", "a\v=b", "name part must consist of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := selector.ParseLabels(tt.in)
			if err == nil {
				t.Fatalf("ParseLabels(%q) succeeded, want error containing %q", tt.in, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseLabels(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
			var e *selector.Error
			if !errors.As(err, &e) || e.Kind != "label" || e.Selector != tt.in {
				t.Errorf("ParseLabels(%q) error = %#v, want *selector.Error{Kind: \"label\", Selector: input}", tt.in, err)
			}
		})
	}
}

func TestLabelsMatches(t *testing.T) {
	t.Parallel()
	web := map[string]string{"app": "web", "tier": "front", "n": "5"}
	tests := []struct {
		name, sel string
		labels    map[string]string
		want      bool
	}{
		{"everything matches nil", "", nil, true},
		{"equals", "app=web", web, true},
		{"equals other value", "app=db", web, false},
		{"equals missing", "zone=a", web, false},
		{"empty value matches empty", "app=", map[string]string{"app": ""}, true},
		{"empty value needs key", "app=", nil, false},
		{"not equals", "app!=db", web, true},
		{"not equals same", "app!=web", web, false},
		{"not equals missing", "zone!=a", web, true},
		{"in", "tier in (back,front)", web, true},
		{"in none", "tier in (back)", web, false},
		{"in missing", "zone in (a)", web, false},
		{"in empty value", "zone in (,a)", map[string]string{"zone": ""}, true},
		{"notin", "tier notin (back)", web, true},
		{"notin same", "tier notin (front)", web, false},
		{"notin missing", "zone notin (a)", web, true},
		{"exists", "tier", web, true},
		{"exists missing", "zone", web, false},
		{"not exists", "!zone", web, true},
		{"not exists present", "!tier", web, false},
		{"greater", "n>4", web, true},
		{"greater equal", "n>5", web, false},
		{"less", "n<6", web, true},
		{"greater non-integer label", "app>1", web, false},
		{"greater missing", "zone>1", web, false},
		{"greater negative label", "n>1", map[string]string{"n": "-7"}, false},
		{"less negative label", "n<1", map[string]string{"n": "-7"}, true},
		{"and", "app=web,tier in (front),!zone", web, true},
		{"and one fails", "app=web,tier in (back)", web, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseLabels(tt.sel)
			if err != nil {
				t.Fatalf("ParseLabels(%q): %v", tt.sel, err)
			}
			if got := s.Matches(tt.labels); got != tt.want {
				t.Errorf("ParseLabels(%q).Matches(%v) = %v, want %v", tt.sel, tt.labels, got, tt.want)
			}
		})
	}
}

func TestLabelsRequiresExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sel, key string
		want           string
		wantOK         bool
	}{
		{"equals", "app=web", "app", "web", true},
		{"double equals", "app==web", "app", "web", true},
		{"in one value", "app in (web)", "app", "web", true},
		{"in two values", "app in (db,web)", "app", "", false},
		{"not equals", "app!=web", "app", "", false},
		{"exists", "app", "app", "", false},
		{"other key", "app=web", "tier", "", false},
		{"first requirement on key decides", "app!=db,app=web", "app", "", false},
		{"empty value", "app=", "app", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseLabels(tt.sel)
			if err != nil {
				t.Fatalf("ParseLabels(%q): %v", tt.sel, err)
			}
			got, ok := s.RequiresExactMatch(tt.key)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseLabels(%q).RequiresExactMatch(%q) mismatch (-want +got):\n-%q %v\n+%q %v", tt.sel, tt.key, tt.want, tt.wantOK, got, ok)
			}
		})
	}
}

func TestLabelsZeroValueSelectsEverything(t *testing.T) {
	t.Parallel()
	var s selector.Labels
	if !s.Empty() || !s.Matches(nil) || s.String() != "" {
		t.Errorf("zero Labels: Empty() = %v, Matches(nil) = %v, String() = %q; want true, true, \"\"", s.Empty(), s.Matches(nil), s.String())
	}
	parsed, err := selector.ParseLabels("a")
	if err != nil || parsed.Empty() {
		t.Errorf("ParseLabels(\"a\") = %v, %v; want a non-empty selector", parsed, err)
	}
}
