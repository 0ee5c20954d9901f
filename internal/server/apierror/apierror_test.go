package apierror

import (
	"testing"

	"github.com/listwatch/listwatch/client/api"
)

// TestInvalidMessage checks that the kind is qualified by its group as
// kube's GroupKind.String does.
func TestInvalidMessage(t *testing.T) {
	cause := []api.StatusCause{Field(api.CauseTypeFieldValueInvalid, "spec.x", "Invalid value: 0: bad")}
	for _, tt := range []struct{ group, kind, want string }{
		{"", "ConfigMap", `ConfigMap "n" is invalid: spec.x: Invalid value: 0: bad`},
		{"coordination.k8s.io", "Lease", `Lease.coordination.k8s.io "n" is invalid: spec.x: Invalid value: 0: bad`},
	} {
		if got := Invalid(tt.group, tt.kind, "n", cause).Status.Message; got != tt.want {
			t.Errorf("Invalid(%q, %q) message %q, want %q", tt.group, tt.kind, got, tt.want)
		}
	}
}
