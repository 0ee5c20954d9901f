package crd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// TestValidateUpdateOnlyOnceEstablished checks that, as in kube, only a
// definition whose Established condition is True keeps its scope and kind.
func TestValidateUpdateOnlyOnceEstablished(t *testing.T) {
	def := func(scope, kind string, conditions ...any) api.Object {
		return api.Object{
			"metadata": map[string]any{"name": "things.example.com"},
			"spec": map[string]any{"group": "example.com", "scope": scope,
				"names": map[string]any{"plural": "things", "kind": kind}},
			"status": map[string]any{"conditions": conditions},
		}
	}
	establishedTrue := map[string]any{"type": "Established", "status": "True"}
	establishedFalse := map[string]any{"type": "Established", "status": "False"}
	namesAccepted := map[string]any{"type": "NamesAccepted", "status": "True"}
	immutable := []api.StatusCause{
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.scope", Message: `Invalid value: "Cluster": field is immutable`},
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.names.kind", Message: `Invalid value: "Other": field is immutable`},
	}
	tests := []struct {
		name string
		old  api.Object
		want []api.StatusCause
	}{
		{"established", def("Namespaced", "Thing", namesAccepted, establishedTrue), immutable},
		{"not yet established", def("Namespaced", "Thing", namesAccepted, establishedFalse), nil},
		{"no status", def("Namespaced", "Thing"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := validateUpdate(t.Context(), def("Cluster", "Other"), tt.old)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
	if got := validateUpdate(t.Context(), def("Namespaced", "Thing"), def("Namespaced", "Thing", establishedTrue)); got != nil {
		t.Errorf("unchanged established definition: %v", got)
	}
}
