package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/api"
)

// TestValidateOwnerReferencesShape: references that are not a list of
// owner references (kube's decoder would refuse them) are one cause, and a
// controller's reference passes. The interop module compares the rest
// with kube's own ValidateOwnerReferences.
func TestValidateOwnerReferencesShape(t *testing.T) {
	shape := []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "metadata.ownerReferences",
		Message: "Invalid value: must be a list of owner references"}}
	for _, tc := range []struct {
		name string
		refs any
		want []api.StatusCause
	}{
		{"absent", nil, nil},
		{"controller", []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u",
			"controller": true, "blockOwnerDeletion": true}}, nil},
		{"string", "owner", shape},
		{"list of strings", []any{"owner"}, shape},
		{"numeric uid", []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": 1}}, shape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := api.Object{"metadata": map[string]any{"name": "x", "ownerReferences": tc.refs}}
			if diff := cmp.Diff(tc.want, validateOwnerReferences(obj)); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}
