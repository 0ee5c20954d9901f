package kubefmt

import (
	"slices"
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tt := range []struct {
		name  string
		check func(string) []string
		in    string
		want  []string
	}{
		{"content counts bytes", Content.DNS1123Label, long, []string{"must be no more than 63 bytes"}},
		{"util counts characters", Util.DNS1123Label, long, []string{"must be no more than 63 characters"}},
		{"a label has no dots", Util.DNS1123Label, "a.b", []string{"must not contain dots"}},
		{"a subdomain", Content.DNS1123Subdomain, "a.b", nil},
		{"a 1035 label starts with a letter", Util.DNS1035Label, "a1", nil},
		{"a prefix may end with a dash", func(s string) []string { return Util.DNS1123Label(MaskTrailingDash(s)) }, "ab-", nil},
		{"a key's empty prefix", LabelKey, "/n", []string{"prefix part must be non-empty"}},
		{"a label value may be empty", LabelValue, "", nil},
	} {
		if got := tt.check(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q gives %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	// kube's masking drops two bytes for one: "ab-" checks as "aa".
	if got := MaskTrailingDash("ab-"); got != "aa" {
		t.Errorf("MaskTrailingDash(ab-) = %q", got)
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[string]bool{"2020-01-01T10:00:00Z": true, "2020-01-01t10:00:00.5+01:00": true, "2020-01-01T24:00:00Z": false, "2020-01-01": false} {
		if IsDateTime(in) != want {
			t.Errorf("IsDateTime(%q) != %v", in, want)
		}
	}
	if IsBase64("") || !IsBase64("aGk=") || IsBase64("aGk") {
		t.Error("IsBase64 is not strfmt's")
	}
}
