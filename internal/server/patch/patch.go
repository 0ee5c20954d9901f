// Package patch applies the PATCH bodies kube-apiserver accepts to an
// object's JSON: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386),
// strategic merge patch for built-in kinds, and server-side apply.
package patch

import (
	"fmt"

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
}

// maxJSONPatchOps bounds a JSON Patch, as kube bounds it (10,000 operations).
const maxJSONPatchOps = 10000

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
			return nil, apierror.UnsupportedMediaType(typ, Types(false))
		}
		return applyStrategic(current, patch)
	}
	return nil, apierror.UnsupportedMediaType(typ, Types(opts.Strategic))
}

func applyJSONPatch(current, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("invalid JSON Patch: %v", err))
	}
	if len(p) > maxJSONPatchOps {
		return nil, apierror.BadRequest(fmt.Sprintf("the JSON Patch has %d operations, more than the %d allowed", len(p), maxJSONPatchOps))
	}
	out, err := p.Apply(current)
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

// applyStrategic applies a strategic merge patch. The built-in kinds served
// here have no lists with merge keys outside metadata, so merge-patch
// semantics plus the $patch directives cover them.
func applyStrategic(current, patch []byte) ([]byte, error) {
	return applyMergePatch(current, patch)
}

// invalidPatch is kube's 422 for a patch that does not apply.
func invalidPatch(err error) error {
	e := apierror.BadRequest(fmt.Sprintf("the server rejected our request due to an error in our request: %v", err))
	e.Status.Code = 422
	e.Status.Reason = "Invalid"
	return e
}
