package apierror

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/api"
)

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc..."},
		{"ééé", 3, "ééé"},
		{"éééé", 3, "ééé..."},
		{"", 0, ""},
	} {
		if got := Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

// TestWarningsBounded: warnings are said once and whole while they fit
// MaxWarningRunes; the one that would pass it has them all written again
// cut to MaxItemRunes, and the rest are cut so until the bound is reached.
func TestWarningsBounded(t *testing.T) {
	h := http.Header{}
	w := NewWarnings(h)
	long := strings.Repeat("x", 2*MaxItemRunes)
	w.Add(long)
	w.Add(long)
	if got := h.Values("Warning"); len(got) != 1 || got[0] != `299 - "`+long+`"` {
		t.Fatalf("one long warning twice: %q", got)
	}
	for i := 0; i < 10*MaxWarningRunes/MaxItemRunes; i++ {
		w.Add(fmt.Sprintf("%0*d", MaxItemRunes, i))
	}
	got := h.Values("Warning")
	if len(got) != MaxWarningRunes/MaxItemRunes || got[0] != `299 - "`+long[:MaxItemRunes]+`"` {
		t.Errorf("%d warnings, the first %q; want %d, the first cut to %d runes", len(got), got[0], MaxWarningRunes/MaxItemRunes, MaxItemRunes)
	}
}

// TestWarningsHeaderText: quotes and backslashes are escaped, other text
// kept as it is; text a header cannot carry is left out.
func TestWarningsHeaderText(t *testing.T) {
	h := http.Header{}
	w := NewWarnings(h)
	for _, m := range []string{`a "b" \c`, "é\u2028", "tab\there", "bad \xff", ""} {
		w.Add(m)
	}
	if got, want := h.Values("Warning"), []string{`299 - "a \"b\" \\c"`, "299 - \"é\u2028\""}; !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

// TestMessagesBounded: a Status message holds at most MaxWarningRunes
// runes, and Invalid at most MaxCauses causes.
func TestMessagesBounded(t *testing.T) {
	if msg := BadRequest(strings.Repeat("é", MaxWarningRunes)).Status.Message; utf8.RuneCountInString(msg) != MaxWarningRunes {
		t.Errorf("a message at the limit was cut: %d runes", utf8.RuneCountInString(msg))
	}
	if msg := BadRequest(strings.Repeat("é", MaxWarningRunes+1)).Status.Message; !strings.HasSuffix(msg, "é...") || utf8.RuneCountInString(msg) != MaxWarningRunes+3 {
		t.Errorf("a message past the limit: %d runes", utf8.RuneCountInString(msg))
	}
	for _, n := range []int{MaxCauses, MaxCauses + 1} {
		causes := make([]api.StatusCause, n)
		for i := range causes {
			causes[i] = Field(api.CauseTypeFieldValueInvalid, strings.Repeat("f", 2*MaxItemRunes), "Invalid value")
		}
		e := Invalid("", "ConfigMap", "a", causes)
		if got := len(e.Status.Details.Causes); got != MaxCauses || len(e.Status.Details.Causes[0].Field) != MaxItemRunes+3 {
			t.Errorf("%d causes: %d kept, field %d bytes", n, got, len(e.Status.Details.Causes[0].Field))
		}
	}
}

// TestNamesBounded: a name a message and its details repeat is cut to
// MaxItemRunes; a name as long as kube allows (253) is whole.
func TestNamesBounded(t *testing.T) {
	for _, n := range []int{253, MaxItemRunes, MaxItemRunes + 1} {
		name := strings.Repeat("n", n)
		for _, e := range []*api.StatusError{NotFound(Target{Resource: "configmaps", Name: name}), Invalid("", "ConfigMap", name, nil)} {
			want := name
			if n > MaxItemRunes {
				want = name[:MaxItemRunes] + "..."
			}
			if e.Status.Details.Name != want || !strings.Contains(e.Status.Message, `"`+want+`"`) {
				t.Errorf("name of %d: details %d bytes, message %q", n, len(e.Status.Details.Name), e.Status.Message)
			}
		}
	}
}
