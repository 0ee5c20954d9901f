package selector_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/selector"
)

func TestParseFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     string   // String() of the result
		wantKeys []string // Keys() of the result
	}{
		{"empty", "", "", []string{}},
		{"empty terms", ",,", "", []string{}},
		{"equals", "metadata.name=foo", "metadata.name=foo", []string{"metadata.name"}},
		{"double equals", "metadata.name==foo", "metadata.name=foo", []string{"metadata.name"}},
		{"not equals", "metadata.name!=foo", "metadata.name!=foo", []string{"metadata.name"}},
		{"empty value", "spec.nodeName=", "spec.nodeName=", []string{"spec.nodeName"}},
		{"empty key", "=foo", "=foo", []string{""}},
		{"empty key and value dropped", "=,!=,==", "", []string{}},
		{"sorted by text", "b=1,a=2,a!=3", "a!=3,a=2,b=1", []string{"a", "b"}},
		{"sorted by source text not output", "a==c,a=b", "a=c,a=b", []string{"a"}},
		{"spaces kept", " a = b ", " a = b ", []string{" a "}},
		{"escaped comma", `a=b\,c`, `a=b\,c`, []string{"a"}},
		{"escaped equals", `a=b\=c`, `a=b\=c`, []string{"a"}},
		{"escaped backslash", `a=b\\`, `a=b\\`, []string{"a"}},
		{"escaped comma in key", `a\,b=c`, `a\,b=c`, []string{`a\,b`}},
		{"first operator splits", "a!b=c", "a!b=c", []string{"a!b"}},
		{"bang before not equals", "a!!=b", "a!!=b", []string{"a!"}},
		{"bang in value", "a=!b", "a=!b", []string{"a"}},
		{"duplicate keys", "a=1,a=2", "a=1,a=2", []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseFields(tt.in)
			if err != nil {
				t.Fatalf("ParseFields(%q): %v", tt.in, err)
			}
			if got := s.String(); got != tt.want {
				t.Errorf("ParseFields(%q).String() mismatch (-want +got):\n-%q\n+%q", tt.in, tt.want, got)
			}
			if got := s.Keys(); !slices.Equal(got, tt.wantKeys) {
				t.Errorf("ParseFields(%q).Keys() mismatch (-want +got):\n-%q\n+%q", tt.in, tt.wantKeys, got)
			}
		})
	}
}

func TestParseFieldsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     string // in the message
	}{
		{"no operator", "a", `term "a": expected an operator`},
		{"no operator after valid term", "a=b,c", `term "c": expected an operator`},
		{"unescaped equals", "a=b=c", `unescaped '=' in value`},
		{"triple equals", "a===b", `unescaped '=' in value`},
		{"unescaped comma after escaped backslash", `a=b\\,c`, `term "c": expected an operator`},
		{"unknown escape", `a=\!`, `invalid escape sequence "\\!"`},
		{"trailing backslash", `a=b\`, `unfinished escape`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := selector.ParseFields(tt.in)
			if err == nil {
				t.Fatalf("ParseFields(%q) succeeded, want error containing %q", tt.in, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFields(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
			var e *selector.Error
			if !errors.As(err, &e) || e.Kind != "field" || e.Selector != tt.in {
				t.Errorf("ParseFields(%q) error = %#v, want *selector.Error{Kind: \"field\", Selector: input}", tt.in, err)
			}
		})
	}
}

func TestFieldsMatches(t *testing.T) {
	t.Parallel()
	pod := map[string]string{"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": ""}
	tests := []struct {
		name, sel string
		fields    map[string]string
		want      bool
	}{
		{"everything", "", nil, true},
		{"equals", "metadata.name=web-1", pod, true},
		{"equals other", "metadata.name=web-2", pod, false},
		{"not equals", "metadata.namespace!=kube-system", pod, true},
		{"not equals same", "metadata.namespace!=default", pod, false},
		{"empty value matches empty", "spec.nodeName=", pod, true},
		{"empty value matches missing", "status.phase=", pod, true},
		{"not equals missing", "status.phase!=Running", pod, true},
		{"not equals empty on missing", "status.phase!=", pod, false},
		{"escaped value", `a=x\,y`, map[string]string{"a": "x,y"}, true},
		{"and", "metadata.name=web-1,metadata.namespace=default", pod, true},
		{"and one fails", "metadata.name=web-1,metadata.namespace=other", pod, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseFields(tt.sel)
			if err != nil {
				t.Fatalf("ParseFields(%q): %v", tt.sel, err)
			}
			if got := s.Matches(tt.fields); got != tt.want {
				t.Errorf("ParseFields(%q).Matches(%v) = %v, want %v", tt.sel, tt.fields, got, tt.want)
			}
		})
	}
}

func TestFieldsRequiresExactMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sel, key string
		want           string
		wantOK         bool
	}{
		{"equals", "metadata.name=foo", "metadata.name", "foo", true},
		{"double equals", "metadata.name==foo", "metadata.name", "foo", true},
		{"unescaped", `metadata.name=a\,b`, "metadata.name", "a,b", true},
		{"not equals", "metadata.name!=foo", "metadata.name", "", false},
		{"other key", "metadata.namespace=foo", "metadata.name", "", false},
		{"first equals term", "a=2,a!=1,a=1", "a", "1", true},
		{"empty value", "a=", "a", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := selector.ParseFields(tt.sel)
			if err != nil {
				t.Fatalf("ParseFields(%q): %v", tt.sel, err)
			}
			got, ok := s.RequiresExactMatch(tt.key)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseFields(%q).RequiresExactMatch(%q) mismatch (-want +got):\n-%q %v\n+%q %v", tt.sel, tt.key, tt.want, tt.wantOK, got, ok)
			}
		})
	}
}

func TestFieldValueEscaping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, escaped string
	}{
		{"plain", "foo", "foo"},
		{"empty", "", ""},
		{"comma", "a,b", `a\,b`},
		{"equals", "a=b", `a\=b`},
		{"backslash", `a\b`, `a\\b`},
		{"bang is not escaped", "a!b", "a!b"},
		{"all", `\,=`, `\\\,\=`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := selector.EscapeFieldValue(tt.value); got != tt.escaped {
				t.Errorf("EscapeFieldValue(%q) mismatch (-want +got):\n-%q\n+%q", tt.value, tt.escaped, got)
			}
			got, err := selector.UnescapeFieldValue(tt.escaped)
			if err != nil || got != tt.value {
				t.Errorf("UnescapeFieldValue(%q) = %q, %v; want %q, nil", tt.escaped, got, err, tt.value)
			}
		})
	}
}

func TestFieldsZeroValueSelectsEverything(t *testing.T) {
	t.Parallel()
	var s selector.Fields
	if !s.Empty() || !s.Matches(nil) || s.String() != "" || len(s.Keys()) != 0 {
		t.Errorf("zero Fields: Empty() = %v, Matches(nil) = %v, String() = %q, Keys() = %q; want true, true, \"\", []",
			s.Empty(), s.Matches(nil), s.String(), s.Keys())
	}
}
