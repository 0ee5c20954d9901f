package registry

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
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

// TestValidateOwnerReferencesBounded: kube's cause for each controller
// reference past the first quotes every reference; thousands of them, in
// a body the server accepts, must not cost memory quadratic in their
// number, and the answer is the same as from the unbounded causes.
func TestValidateOwnerReferencesBounded(t *testing.T) {
	const n = 3000 // 240 KB of references; unbounded, 700 MB of causes
	refs, typed := make([]any, n), make([]api.OwnerReference, n)
	yes := true
	for i := range refs {
		refs[i] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": fmt.Sprint(i), "uid": fmt.Sprint(i), "controller": true}
		typed[i] = api.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint(i), UID: fmt.Sprint(i), Controller: &yes}
	}
	obj := api.Object{"metadata": map[string]any{"name": "x", "ownerReferences": refs}}
	causes := boundedCauses(t, 16<<20, func() []api.StatusCause { return validateOwnerReferences(obj) })
	b, _ := json.Marshal(typed)
	full := fmt.Sprintf(`Invalid value: %s: Only one reference can have Controller set to true. Found "true" in references for ConfigMap/0 and ConfigMap/1`, b)
	want := apierror.Invalid("", "ConfigMap", "x", []api.StatusCause{{Type: api.CauseTypeFieldValueInvalid, Field: "metadata.ownerReferences", Message: full}})
	got := apierror.Invalid("", "ConfigMap", "x", causes[:1])
	if diff := cmp.Diff(want.Status, got.Status); diff != "" {
		t.Errorf("answer (-unbounded +ours):\n%s", diff)
	}
}

// boundedCauses runs validate, fails t if it allocated more than max bytes
// or made more causes than the answer keeps, and returns its causes.
func boundedCauses(t *testing.T, max uint64, validate func() []api.StatusCause) []api.StatusCause {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	causes := validate()
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > max {
		t.Errorf("validating allocated %d MB, want at most %d", alloc>>20, max>>20)
	}
	if len(causes) != apierror.MaxCauses {
		t.Fatalf("%d causes, want %d (the answer's bound)", len(causes), apierror.MaxCauses)
	}
	return causes
}
