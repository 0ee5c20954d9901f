package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/patch"
)

// kubeJSONPatch applies a JSON Patch as kube-apiserver's PATCH handler
// does (apiserver pkg/endpoints/handlers/patch.go, jsonPatcher.applyJSPatch
// with fieldValidation Ignore), with kube's copy limit (set in json-patch
// v4's global at start, 3 MiB); a panic is kube's panic filter's 500.
func kubeJSONPatch(doc, p []byte) (out []byte, err error) {
	defer func() {
		if recover() != nil {
			out, err = nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
				Reason: metav1.StatusReasonInternalError, Message: "This request caused apiserver to panic. Look in the logs for details."}}
		}
	}()
	jsonpatch.AccumulatedCopySizeLimit = 3 << 20
	ops, err := jsonpatch.DecodePatch(p)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > 10000 {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", 10000, len(ops)))
	}
	out, err = ops.Apply(doc)
	if err != nil {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return out, nil
}

// patchOutcome is a patch's result: the object, or the error's code and
// message.
type patchOutcome struct {
	Object  any
	Code    int32
	Message string
	Details bool // the Status has details
}

func kubeOutcome(doc, p []byte) patchOutcome {
	out, err := kubeJSONPatch(doc, p)
	if err != nil {
		st := err.(*apierrors.StatusError).ErrStatus
		return patchOutcome{Code: st.Code, Message: st.Message, Details: st.Details != nil}
	}
	return patchOutcome{Object: decodeJSON(out)}
}

func decodeJSON(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "undecodable: " + string(b)
	}
	return v
}

// TestJSONPatchAsKubeRandom: on random objects and random patches (paths
// into the object and beside it: missing members, indices past either end,
// negative, "-", leading zeros; values absent, null or nested), listwatch's
// JSON Patch gives what kube's handler gives with json-patch v4: the same
// object, or the same code and message.
func TestJSONPatchAsKubeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const cases = 5000
	applied, codes := 0, map[int32]int{}
	for i := range cases {
		doc := randomObject(rng, 3)
		docJSON, _ := json.Marshal(doc)
		ops := []map[string]any{randomOp(rng, doc)}
		for len(ops) < 4 && rng.IntN(3) == 0 {
			ops = append(ops, randomOp(rng, doc))
		}
		p, _ := json.Marshal(ops)
		want := kubeOutcome(docJSON, p)
		var got patchOutcome
		out, err := patch.ApplyTo(patch.JSONPatch, docJSON, p, patch.Options{})
		if err != nil {
			var se *api.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("case %d: %v is not a Status", i, err)
			}
			got = patchOutcome{Code: se.Status.Code, Message: se.Status.Message, Details: se.Status.Details != nil}
			codes[got.Code]++
		} else {
			got = patchOutcome{Object: decodeJSON(out)}
			applied++
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d: patch %s on %s (-kube +listwatch):\n%s", i, p, docJSON, diff)
		}
	}
	// The generator must exercise every outcome.
	if applied < cases/10 || codes[http.StatusUnprocessableEntity] < cases/10 || codes[http.StatusInternalServerError] == 0 {
		t.Errorf("of %d patches, %d applied, errors by code %v: the generator is lopsided", cases, applied, codes)
	}
	t.Logf("of %d patches, %d applied, errors by code %v", cases, applied, codes)
}

// randomObject is a JSON object nesting at most depth levels.
func randomObject(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(4) {
		m[randomKey(rng)] = randomValue(rng, depth-1)
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) any {
	n := 6
	if depth > 0 {
		n = 8
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(3)
	case 2:
		return rng.IntN(2) == 0
	case 3, 4, 5:
		return []string{"", "a", "x/y", "~"}[rng.IntN(4)]
	case 6:
		return randomObject(rng, depth)
	}
	l := make([]any, rng.IntN(4))
	for i := range l {
		l[i] = randomValue(rng, depth-1)
	}
	return l
}

func randomKey(rng *rand.Rand) string {
	return []string{"a", "b", "0", "x/y", "m~n", ""}[rng.IntN(6)]
}

// randomOp is one operation with paths into doc or beside it.
func randomOp(rng *rand.Rand, doc map[string]any) map[string]any {
	op := map[string]any{"op": []string{"add", "remove", "replace", "move", "copy", "test", "merge"}[rng.IntN(7)], "path": randomPath(rng, doc)}
	if op["op"] == "move" || op["op"] == "copy" || rng.IntN(8) == 0 {
		op["from"] = randomPath(rng, doc)
	}
	switch rng.IntN(6) {
	case 0: // no value
	case 1:
		op["value"] = nil
	default:
		op["value"] = randomValue(rng, 2)
	}
	if op["op"] == "test" && rng.IntN(2) == 0 {
		op["value"] = valueAt(doc, op["path"].(string)) // a test that may pass
	}
	return op
}

// randomPath walks doc from its root, stopping at random, and sometimes
// steps beside it.
func randomPath(rng *rand.Rand, doc any) string {
	path := ""
	for (path == "" && rng.IntN(10) != 0) || rng.IntN(2) == 0 {
		switch v := doc.(type) {
		case map[string]any:
			k := randomKey(rng)
			for have := range v { // mostly a member it has
				if rng.IntN(4) != 0 {
					k = have
				}
				break
			}
			path, doc = path+"/"+escape(k), v[k]
		case []any:
			i := rng.IntN(len(v)+3) - 1
			tok := strconv.Itoa(i)
			switch rng.IntN(8) {
			case 0:
				tok, i = "-", -1
			case 1:
				tok, i = "-"+strconv.Itoa(1+rng.IntN(len(v)+1)), -1
			case 2:
				tok = "0" + tok
			}
			path, doc = path+"/"+tok, nil
			if i >= 0 && i < len(v) {
				doc = v[i]
			}
		default:
			if rng.IntN(4) == 0 {
				return path + "/" + randomKey(rng)
			}
			return path
		}
	}
	return path
}

func escape(k string) string {
	out := ""
	for _, c := range k {
		switch c {
		case '~':
			out += "~0"
		case '/':
			out += "~1"
		default:
			out += string(c)
		}
	}
	return out
}

// valueAt is the value at an object path of plain keys, or nil.
func valueAt(doc any, path string) any {
	var v any = doc
	key := ""
	for _, c := range path + "/" {
		if c != '/' {
			key += string(c)
			continue
		}
		if m, ok := v.(map[string]any); ok && key != "" {
			v = m[key]
		}
		key = ""
	}
	return v
}

// TestJSONPatchAsKubeBinary: client-go's JSON patches of a ConfigMap give
// from the binary what kube's handler makes of the same patch on the same
// object: a replace of a missing label adds it (json-patch v4), a negative
// index counts from the end, and a failed test or a missing parent is
// kube's 422 with kube's message.
func TestJSONPatchAsKubeBinary(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("default")
	for i, p := range []string{
		`[{"op":"replace","path":"/metadata/labels/new","value":"v"}]`,
		`[{"op":"add","path":"/metadata/finalizers/-1","value":"example.com/f"}]`,
		`[{"op":"test","path":"/data/k","value":"other"},{"op":"add","path":"/data/n","value":"1"}]`,
		`[{"op":"add","path":"/spec/x","value":"1"}]`,
		`[{"op":"remove","path":"/data/none"}]`,
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			ctx := t.Context()
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i), Labels: map[string]string{"a": "1"},
				Finalizers: []string{"example.com/a"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.APIVersion, cm.Kind = "v1", "ConfigMap"
			doc, _ := json.Marshal(cm)
			want := kubeOutcome(doc, []byte(p))
			var got patchOutcome
			patched, err := cms.Patch(ctx, cm.Name, types.JSONPatchType, []byte(p), metav1.PatchOptions{})
			if err != nil {
				var se *apierrors.StatusError
				if !errors.As(err, &se) {
					t.Fatal(err)
				}
				got = patchOutcome{Code: se.ErrStatus.Code, Message: se.ErrStatus.Message, Details: se.ErrStatus.Details != nil}
			} else {
				// Compare what the patch sets, not what the write adds.
				w, _ := want.Object.(map[string]any)
				wm, _ := w["metadata"].(map[string]any)
				want.Object = map[string]any{"data": w["data"], "labels": wm["labels"], "finalizers": wm["finalizers"]}
				b, _ := json.Marshal(map[string]any{"data": patched.Data, "labels": patched.Labels, "finalizers": patched.Finalizers})
				got.Object = decodeJSON(b)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patch %s (-kube +listwatch):\n%s", p, diff)
			}
		})
	}
}
