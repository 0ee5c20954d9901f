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
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/listwatch/listwatch/client/api"
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

// Bounds on a JSON Patch: kube's 10,000 operations; the bytes its copy
// operations may add (kube's --json-patch-max-copy-bytes default, also the
// largest object storage holds) so that a small patch cannot grow an
// object without bound; and the bytes json-patch may
// scan to apply it. json-patch decodes each object or list a path passes
// through from its bytes, scanning all it holds, so a path of n levels into
// m bytes costs up to n*m (9,000 levels into 200 KB took 2.5 s); 32 MiB
// costs about 170 ms here (BenchmarkJSONPatchAtScanBound), and leaves paths
// of 10 levels into the largest object storage holds with as large a
// patch, 3,000 into 10 KiB.
const (
	maxJSONPatchOps     = 10000
	maxJSONPatchCopyLen = 3 << 20
	maxJSONPatchScan    = 32 << 20
)

// JSON Patch is json-patch v4's, as kube-apiserver applies it to requests,
// webhooks' and mutating policies' patches: v5 differs (it refuses a
// replace of a missing member, which v4 adds; its errors' words differ).
// kube-apiserver sets v4's copy limit, a global, when it starts
// (apiserver pkg/server/config.go); so do we, once, before any patch.
func init() {
	jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyLen
}

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
	out, err := ApplyJSONPatch(current, patch)
	var se *api.StatusError
	switch {
	case errors.As(err, &se):
		return nil, se
	case err != nil:
		// kube's 422 for a patch that does not apply, without json-patch's
		// words and with empty details (apimachinery's
		// NewGenericServerResponse).
		e := invalid("the server rejected our request due to an error in our request")
		e.Status.Details = &api.StatusDetails{}
		return nil, e
	}
	return out, nil
}

// ApplyJSONPatch applies a JSON Patch (a client's or a webhook's) to
// current within the bounds; the errors are Status errors for a patch that
// does not decode, is past a bound or panics json-patch, else json-patch's
// own, which kube's webhook dispatcher reports as they are.
func ApplyJSONPatch(current, patch []byte) ([]byte, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierror.BadRequest(err.Error())
	}
	return applyBounded(p, current, len(current)+len(patch))
}

// ApplyJSONPatchOps applies JSON Patch operations made by the server (a
// mutating admission policy's) to current within the bounds; the
// operations' own errors are json-patch's, for the caller to tell a failed
// test (jsonpatch.ErrTestFailed) from others.
func ApplyJSONPatchOps(current []byte, ops []map[string]any) ([]byte, error) {
	p := make(jsonpatch.Patch, len(ops))
	for i, op := range ops {
		p[i] = jsonpatch.Operation{}
		for k, v := range op {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			raw := json.RawMessage(b)
			p[i][k] = &raw
		}
	}
	return applyBounded(p, current, len(current))
}

// applyBounded applies p to current if it is within the bounds, size being
// the bytes of current and p; past a bound it is a Status error (413 or
// 422).
func applyBounded(p jsonpatch.Patch, current []byte, size int) ([]byte, error) {
	if len(p) > maxJSONPatchOps {
		return nil, apierror.EntityTooLarge(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOps, len(p)))
	}
	if levels, size := jsonPatchScan(p, size); levels*size > maxJSONPatchScan {
		return nil, invalid("the paths of the JSON Patch, %d levels deep, are too deep for %d bytes of object and patch: at most %d levels x bytes", levels, size, maxJSONPatchScan)
	}
	return applyKube(p, current)
}

// applyKube applies p to current as kube does, with json-patch v4. v4
// panics on a few patches (a test or a replace of the whole object without
// a value, a test of lists holding null); kube-apiserver's handler then
// answers 500, and so does this.
func applyKube(p jsonpatch.Patch, current []byte) (out []byte, err error) {
	defer func() {
		if recover() != nil {
			out, err = nil, panicked()
		}
	}()
	return p.Apply(current)
}

// testLevel is what json-patch's test costs per level of its value, in
// levels of a path: it compares the value with what it tests level by
// level, decoding both sides at each (a test at the scan bound took 0.5 to
// 1.2 s counting a level as one).
const testLevel = 8

// jsonPatchScan returns the most levels an operation of p leads
// json-patch through, and the bytes they may hold: the object and the
// patch's, and its copies'. The levels of an operation are its path's (or
// from's), and a test's value's depth, weighed by testLevel. A copy copies
// a part of the object, so it at most doubles it, up to the copy limit:
// counting the whole limit for any copy refused small patches kube takes.
func jsonPatchScan(p jsonpatch.Patch, size int) (levels, scanned int) {
	scanned = size
	for _, op := range p {
		path, _ := op.Path()
		from, _ := op.From()
		n := max(strings.Count(path, "/"), strings.Count(from, "/"))
		if v := op["value"]; v != nil && op.Kind() == "test" {
			n += testLevel * jsonDepth(*v)
		}
		levels = max(levels, n)
		if op.Kind() == "copy" {
			scanned = min(2*scanned, size+maxJSONPatchCopyLen)
		}
	}
	return levels, scanned
}

// jsonDepth is how deep the JSON value b nests objects and arrays.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// applyMergePatch applies an RFC 7386 merge patch as kube's merge
// (evanphx/json-patch's MergePatch) does, on decoded values in one pass:
// json-patch decodes each level of a nested patch again, time quadratic in
// its depth (4.8 s at 9,990 levels).
func applyMergePatch(current, patch []byte) ([]byte, error) {
	if t := bytes.TrimLeft(patch, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		if !json.Valid(patch) {
			return nil, apierror.BadRequest("invalid JSON Merge Patch: the patch is not valid JSON")
		}
		return patch, nil // it replaces the object, which it is not
	}
	p, err := api.ParseObject(patch)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("invalid JSON Merge Patch: %v", err))
	}
	doc, err := api.ParseObject(current)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("invalid JSON Merge Patch: the object is not a JSON object: %v", err))
	}
	mergeInto(doc, p)
	return api.MarshalObject(doc)
}

// mergeInto merges patch into doc: null removes a member, an object merges
// into an object, anything else replaces.
func mergeInto(doc, patch map[string]any) {
	for k, v := range patch {
		cur, has := doc[k]
		switch {
		case v == nil:
			delete(doc, k)
		case !has || cur == nil:
			doc[k] = withoutNulls(v)
		default:
			doc[k] = mergeValue(cur, v)
		}
	}
}

func mergeValue(cur, patch any) any {
	cm, isMap := cur.(map[string]any)
	if !isMap {
		return withoutNulls(patch)
	}
	pm, isMap := patch.(map[string]any)
	if !isMap {
		return patch // kept with its nulls, as json-patch does
	}
	mergeInto(cm, pm)
	return cm
}

// withoutNulls drops the null members of v's objects, at every level
// (nulls in lists stay).
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = withoutNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = withoutNulls(e)
		}
	}
	return v
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
