package patch

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// FuzzMergeStrategic checks that no original and patch make the strategic
// merge panic, and that a merge that succeeds yields JSON.
func FuzzMergeStrategic(f *testing.F) {
	for _, s := range [][2]string{
		{`{"data":{"a":"1"}}`, `{"data":{"a":null,"b":"2"}}`},
		{`{"metadata":{"finalizers":["a","b"]}}`, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["b"],"$setElementOrder/finalizers":["c","a"],"finalizers":["c"]}}`},
		{`{"metadata":{"ownerReferences":[{"uid":"1"},{"uid":"2"}]}}`, `{"metadata":{"$setElementOrder/ownerReferences":[{"uid":"2"}],"ownerReferences":[{"$patch":"delete","uid":"1"},{"$patch":"replace"}]}}`},
		{`{"spec":{"a":1}}`, `{"spec":{"$retainKeys":["b"],"$patch":"replace","b":[1,[2]]}}`},
		{`{"status":{"conditions":[{"type":"A"}]}}`, `{"status":{"conditions":[{"type":"A","status":"x"},{"type":{"x":1}}]}}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, original, patch string) {
		o, p, ok := decodeBoth(original, patch)
		if !ok {
			return
		}
		for _, s := range []*Schema{namespace, configMap} {
			_, _ = ApplyTo(StrategicMerge, []byte(original), []byte(patch), Options{Strategic: true, Schema: s})
			if merged, err := MergeStrategic(deepCopyMap(o), deepCopyMap(p), s); err == nil {
				if _, err := json.Marshal(merged); err != nil {
					t.Fatalf("merged object does not encode: %v", err)
				}
			}
		}
	})
}

// FuzzApply checks that no live object, managed fields and apply
// configuration make server-side apply or update tracking panic, and that
// the managed fields they write read back.
func FuzzApply(f *testing.F) {
	for _, s := range [][2]string{
		{`{"metadata":{"name":"c"},"data":{"a":"1"}}`, `{"data":{"a":"2","b":null}}`},
		{`{"metadata":{"name":"c","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]},"data":{"a":"1"}}`, `{"data":{"a":"2"}}`},
		{`{"metadata":{"finalizers":["a"],"ownerReferences":[{"uid":"1"},{"uid":"1"}]}}`, `{"metadata":{"finalizers":["b","a",{"x":1}],"ownerReferences":[{"uid":"2"},{"name":"x"}]}}`},
		{`{"status":{"conditions":[{"type":"A"}]}}`, `{"status":{"conditions":[{"type":"B"},{"type":"A","x":[1]}]}}`},
	} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, live, config string, force bool) {
		l, c, ok := decodeBoth(live, config)
		if !ok {
			return
		}
		for _, s := range []*Schema{namespace, configMap} {
			m := Manager{Name: "fuzz", APIVersion: "v1", Schema: s, Now: testTime}
			applied, err := m.Apply(deepCopyMap(l), deepCopyMap(c), force)
			if err == nil {
				if _, err := decodeEntries(metadataOf(applied)["managedFields"]); err != nil {
					t.Fatalf("apply wrote managed fields that do not read back: %v", err)
				}
			}
			next := deepCopyMap(c)
			m.Update(deepCopyMap(l), next)
			if _, err := decodeEntries(metadataOf(next)["managedFields"]); err != nil {
				t.Fatalf("update wrote managed fields that do not read back: %v", err)
			}
		}
	})
}

// decodeBoth decodes two JSON objects; ok is false unless both are.
func decodeBoth(a, b string) (ma, mb map[string]any, ok bool) {
	ma, errA := decodeMap([]byte(a))
	mb, errB := decodeMap([]byte(b))
	return ma, mb, errA == nil && errB == nil
}

// FuzzCreated checks Update's shortcut for a create against the general
// computation, for any object.
func FuzzCreated(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"c","labels":{"a":"1"}},"data":{"a":"1"}}`,
		`{"metadata":{"finalizers":["a","a"],"ownerReferences":[{"uid":"1"},{"uid":"1","name":"x"}]},"status":{"conditions":[{"type":"A"},{"type":{"x":1}}]}}`,
		`{"metadata":"x","spec":[[],{},null]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, obj string) {
		o, _, ok := decodeBoth(obj, "{}")
		if !ok {
			return
		}
		for _, s := range []*Schema{nil, namespace, configMap} {
			for _, status := range []bool{false, true} {
				m := Manager{Name: "m", APIVersion: "v1", Reset: statusReset(status), Schema: s, Now: testTime}
				shortcut, general := deepCopyMap(o), deepCopyMap(o)
				if _, set := metadataOf(shortcut)["managedFields"]; set {
					return
				}
				m.created(shortcut)
				m.update(nil, general)
				if !equal(shortcut, general) {
					t.Fatalf("%s: the shortcut gives\n%v\nthe general computation\n%v", obj, shortcut, general)
				}
			}
		}
	})
}

// FuzzMergePatch checks that our merge patch gives what json-patch's
// MergePatch (kube's) gives, for every object and patch.
func FuzzMergePatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":{"b":1,"c":2}}`, `{"a":{"b":null,"d":{"e":null,"f":[null,{"g":null}]}}}`},
		{`{"a":1}`, `{"a":{"b":null,"c":[{"d":null}]}}`},
		{`{"a":{"b":1}}`, `{"a":[{"c":null}]}`},
		{`{"a":null}`, `{"a":{"b":null}}`},
		{`{"a":{"b":1}}`, `{"a":{"b":{"c":1}},"x":"\u00e9<"}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, doc, patch string) {
		if _, err := decodeMap([]byte(doc)); err != nil {
			return
		}
		if _, err := decodeMap([]byte(patch)); err != nil {
			return
		}
		want, err := jsonpatch.MergePatch([]byte(doc), []byte(patch))
		if err != nil {
			return
		}
		got, err := applyMergePatch([]byte(doc), []byte(patch))
		if err != nil {
			t.Fatalf("merge failed: %v; json-patch gives %s", err, want)
		}
		w, _ := decodeMap(want)
		g, _ := decodeMap(got)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("merge of %s into %s (-json-patch +ours):\n%s", patch, doc, diff)
		}
	})
}
