package apierror

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/listwatch/listwatch/api"
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

// TestWarningsBounded: warnings are cut to MaxItemRunes each, said once,
// and stop once they hold MaxWarningRunes.
func TestWarningsBounded(t *testing.T) {
	h := http.Header{}
	w := NewWarnings(h)
	long := strings.Repeat("x", 2*MaxItemRunes)
	w.Add(long)
	w.Add(long)
	if got := h.Values("Warning"); len(got) != 1 || !strings.Contains(got[0], strings.Repeat("x", MaxItemRunes)+"...") || strings.Contains(got[0], strings.Repeat("x", MaxItemRunes+1)) {
		t.Fatalf("one long warning twice: %q", got)
	}
	for i := 0; i < 10*MaxWarningRunes/MaxItemRunes; i++ {
		w.Add(fmt.Sprintf("%0*d", MaxItemRunes, i))
	}
	if got := len(h.Values("Warning")); got != MaxWarningRunes/MaxItemRunes {
		t.Errorf("%d warnings of %d runes, want %d", got, MaxItemRunes, MaxWarningRunes/MaxItemRunes)
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
