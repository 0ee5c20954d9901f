// Package patch applies the PATCH bodies kube-apiserver accepts to an
// object's JSON: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386),
// strategic merge patch for built-in kinds, and server-side apply with
// managed fields.
//
// Strategic merge and apply follow a Schema that says which lists merge
// and by which keys (kube's patchStrategy/patchMergeKey and listType tags);
// SchemaFor has the served built-in kinds, and any other kind gets
// metadata's schema with everything else deduced (maps merge, lists are
// atomic), as kube treats custom objects without a structural schema.
//
// Managed fields (metadata.managedFields) record which manager set which
// fields, in kube's FieldsV1 format. Manager.Update records a create,
// update or non-apply patch; Manager.Apply merges an apply configuration,
// removes fields the manager no longer applies, and fails with a 409
// naming the conflicting managers unless forced.
//
// Every function works on decoded JSON (map[string]any, []any, string,
// json.Number, bool, nil), never panics on arbitrary input, and returns
// Kubernetes Status errors (400, 409, 415, 422) for the HTTP edge.
// Nothing here holds state or locks.
package patch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Patch media types.
const (
	JSONPatch      = "application/json-patch+json"
	MergePatch     = "application/merge-patch+json"
	StrategicMerge = "application/strategic-merge-patch+json"
	Apply          = "application/apply-patch+yaml"
)

// Options tune how a patch applies.
type Options struct {
	// Strategic is true when the resource accepts strategic merge patches
	// (built-in kinds); they are 415 otherwise, as for CRDs in kube.
	Strategic bool
	// Schema says how lists merge in a strategic merge patch; nil is
	// the deduced schema.
	Schema *Schema
}

// Bounds on a JSON Patch: kube's 10,000 operations, and the bytes its copy
// operations may add (the largest object storage holds) so that a small
// patch cannot grow an object without bound.
const (
	maxJSONPatchOps     = 10000
	maxJSONPatchCopyLen = 3 << 20
)

// Types returns the patch media types a resource accepts.
func Types(strategic bool) []string {
	if strategic {
		return []string{JSONPatch, MergePatch, StrategicMerge, Apply}
	}
	return []string{JSONPatch, MergePatch, Apply}
}

// ApplyTo returns current (an object's JSON) with the patch of media type
// typ applied. Errors are Status errors: 415 for a type the resource does not
// accept, 400 or 422 for a malformed patch.
func ApplyTo(typ string, current, patch []byte, opts Options) ([]byte, error) {
	switch typ {
	case JSONPatch:
		return applyJSONPatch(current, patch)
	case MergePatch:
		return applyMergePatch(current, patch)
	case StrategicMerge:
		if !opts.Strategic {
			return nil, apierror.UnsupportedMediaType(Types(false))
		}
		return applyStrategic(current, patch, opts.Schema)
	}
	return nil, apierror.UnsupportedMediaType(Types(opts.Strategic))
}

func applyJSONPatch(current, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("invalid JSON Patch: %v", err))
	}
	if len(p) > maxJSONPatchOps {
		return nil, apierror.EntityTooLarge(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOps, len(p)))
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AccumulatedCopySizeLimit = maxJSONPatchCopyLen
	out, err := p.ApplyWithOptions(current, opts)
	if err != nil {
		return nil, invalidPatch(err)
	}
	return out, nil
}

func applyMergePatch(current, patch []byte) ([]byte, error) {
	out, err := jsonpatch.MergePatch(current, patch)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("invalid JSON Merge Patch: %v", err))
	}
	return out, nil
}

// invalidPatch is kube's 422 for a patch that does not apply.
func invalidPatch(err error) error {
	return invalid("the server rejected our request due to an error in our request: %v", err)
}

// decodeMap decodes one JSON object, keeping numbers as json.Number.
func decodeMap(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON object")
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
