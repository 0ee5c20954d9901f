package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/api"
)

// TestValidateFinalizerNamesShape: a finalizer that is not a string is one
// cause (kube's decoder would refuse it). The interop module compares the
// names' causes with kube's own ValidateFinalizers.
func TestValidateFinalizerNamesShape(t *testing.T) {
	obj := api.Object{"metadata": map[string]any{"name": "x", "finalizers": []any{"example.com/cleanup", 1.0}}}
	want := []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "metadata.finalizers", Message: "Invalid value: must be a list of strings"}}
	if diff := cmp.Diff(want, validateFinalizerNames(obj)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}
