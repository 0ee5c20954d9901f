package selector_test

import (
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/selector"
)

func TestValidateLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, value string
		want             string // in the message; "" for valid
	}{
		{"simple", "app", "web", ""},
		{"empty value", "app", "", ""},
		{"prefixed", "app.kubernetes.io/name", "web", ""},
		{"longest", strings.Repeat("p", 253) + "/" + strings.Repeat("n", 63), strings.Repeat("v", 63), ""},
		{"empty key", "", "web", "name part must be non-empty"},
		{"long name", strings.Repeat("n", 64), "", "no more than 63 bytes"},
		{"long prefix", strings.Repeat("p", 254) + "/n", "", "no more than 253 bytes"},
		{"uppercase prefix", "App.io/n", "", "lowercase RFC 1123 subdomain"},
		{"long value", "app", strings.Repeat("v", 64), `of key "app": must be no more than 63 bytes`},
		{"bad value", "app", "a b", `value "a b" of key "app"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := selector.ValidateLabel(tt.key, tt.value)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ValidateLabel(%q, %q) = %v, want nil", tt.key, tt.value, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("ValidateLabel(%q, %q) = %v, want an error containing %q", tt.key, tt.value, err, tt.want)
			}
			if keyErr := selector.ValidateLabelKey(tt.key); (keyErr == nil) != (err == nil || strings.Contains(err.Error(), "value")) {
				t.Errorf("ValidateLabelKey(%q) = %v, inconsistent with ValidateLabel's %v", tt.key, keyErr, err)
			}
		})
	}
}
