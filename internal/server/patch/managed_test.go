package patch

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

var testTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mgr(name string) Manager {
	return Manager{Name: name, APIVersion: "v1", Schema: configMap, Now: testTime}
}

// managed returns obj's managedFields as "manager/operation" -> fieldsV1.
func managed(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	entries, err := decodeEntries(metadataOf(obj)["managedFields"])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, e := range entries {
		out[e.manager+"/"+e.operation] = e.set.FieldsV1()
	}
	return out
}

func TestApplyCreatesWithManagedFields(t *testing.T) {
	got, err := mgr("tool").Apply(nil, mustMap(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"x"},"finalizers":["f"],"ownerReferences":[{"uid":"u1","name":"o"}]},"data":{"k":"v"}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	want := mustMap(t, `{"tool/Apply":{
		"f:data":{"f:k":{}},
		"f:metadata":{"f:labels":{"f:app":{}},"f:finalizers":{"v:\"f\"":{}},
			"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{".":{},"f:name":{},"f:uid":{}}}}}}`)
	if diff := cmp.Diff(want, managed(t, got)); diff != "" {
		t.Errorf("managedFields (-want +got)\n%s", diff)
	}
	entry := metadataOf(got)["managedFields"].([]any)[0].(map[string]any)
	if entry["time"] != "2026-01-02T03:04:05Z" || entry["fieldsType"] != "FieldsV1" || entry["apiVersion"] != "v1" {
		t.Errorf("entry %v", entry)
	}
}

func TestApply(t *testing.T) {
	const live = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","b":"2"}}`
	tests := []struct {
		name    string
		steps   []step
		want    string         // the object's data at the end
		managed map[string]any // at the end
		code    int32          // of the last step, if it fails
		message string
	}{
		{name: "re-apply drops fields no longer applied",
			steps: []step{apply("tool", `{"data":{"a":"1","b":"2"}}`), apply("tool", `{"data":{"a":"1"}}`)},
			want:  `{"a":"1"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:a":{}}}`)}},
		{name: "a field another manager also applies stays",
			steps: []step{apply("tool", `{"data":{"a":"1","b":"2"}}`), apply("other", `{"data":{"b":"2"}}`), apply("tool", `{"data":{"a":"1"}}`)},
			want:  `{"a":"1","b":"2"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:a":{}}}`), "other/Apply": fv(`{"f:data":{"f:b":{}}}`)}},
		{name: "same value is shared, not a conflict",
			steps: []step{apply("tool", `{"data":{"a":"1"}}`), apply("other", `{"data":{"a":"1"}}`)},
			want:  `{"a":"1","b":"2"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:a":{}}}`), "other/Apply": fv(`{"f:data":{"f:a":{}}}`)}},
		{name: "changing another applier's field conflicts",
			steps: []step{apply("tool", `{"data":{"a":"1"}}`), apply("other", `{"data":{"a":"2"}}`)},
			code:  http.StatusConflict, message: `Apply failed with 1 conflict: conflict with "tool": .data.a`},
		{name: "changing an updater's field conflicts",
			steps: []step{update("kubectl-edit", `{"a":"9","b":"2"}`), apply("tool", `{"data":{"a":"1"}}`)},
			code:  http.StatusConflict, message: `Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a`},
		{name: "two conflicts",
			steps: []step{apply("x", `{"data":{"a":"1","b":"2"}}`), apply("tool", `{"data":{"a":"3","b":"4"}}`)},
			code:  http.StatusConflict, message: "Apply failed with 2 conflicts: conflicts with \"x\":\n- .data.a\n- .data.b"},
		{name: "force takes ownership",
			steps: []step{update("kubectl-edit", `{"a":"9","b":"2"}`), forceApply("tool", `{"data":{"a":"1"}}`)},
			want:  `{"a":"1","b":"2"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:a":{}}}`)}},
		{name: "an update takes fields from the applier",
			steps: []step{apply("tool", `{"data":{"a":"1"}}`), update("kubectl-edit", `{"a":"5","b":"2"}`), apply("tool", `{"data":{}}`)},
			want:  `{"a":"5","b":"2"}`, managed: map[string]any{"kubectl-edit/Update": fv(`{"f:data":{"f:a":{}}}`), "tool/Apply": fv(`{"f:data":{}}`)}},
		{name: "an update removing a field removes it from its owner",
			steps: []step{apply("tool", `{"data":{"a":"1","b":"2"}}`), update("kubectl-edit", `{"b":"2"}`)},
			want:  `{"b":"2"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:b":{}}}`)}},
		// kube's prune counts a struct's field as owned by whoever owns
		// anything in it (sigs.k8s.io/structured-merge-diff merge/update.go,
		// EnsureNamedFieldsAreMembers), on both sides:
		{name: "an Apply entry owning data itself keeps it, as kubectl's upgrade from client-side apply writes",
			steps: []step{applyEntry("tool", `{"f:data":{".":{},"f:a":{}}}`), apply("tool", `{"data":{"a":"1"}}`)},
			want:  `{"a":"1","b":"2"}`, managed: map[string]any{"tool/Apply": fv(`{"f:data":{"f:a":{}}}`)}},
		{name: "an applier no longer applying data removes it whole",
			steps: []step{applyEntry("tool", `{"f:data":{"f:a":{}}}`), apply("tool", `{}`)},
			want:  `null`, managed: map[string]any{}},
		{name: "an applier no longer applying data leaves what others own",
			steps: []step{applyEntry("tool", `{"f:data":{"f:a":{}}}`), update("kubectl-edit", `{"a":"1","b":"3"}`), apply("tool", `{}`)},
			want:  `{"b":"3"}`, managed: map[string]any{"kubectl-edit/Update": fv(`{"f:data":{"f:b":{}}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustMap(t, live)
			var err error
			for _, s := range tt.steps {
				if obj, err = s(t, obj); err != nil {
					break
				}
			}
			if tt.code != 0 {
				se, ok := err.(*api.StatusError)
				if !ok || se.Status.Code != tt.code || se.Status.Message != tt.message || se.Status.Reason != api.StatusReasonConflict {
					t.Fatalf("got %v, want %d %q", err, tt.code, tt.message)
				}
				if c := se.Status.Details.Causes; len(c) == 0 || c[0].Type != api.CauseTypeFieldManagerConflict || c[0].Field == "" {
					t.Errorf("causes %v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want any // null: no data
			if tt.want != "null" {
				want = mustMap(t, tt.want)
			}
			if diff := cmp.Diff(want, obj["data"]); diff != "" {
				t.Errorf("data (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.managed, managed(t, obj)); diff != "" {
				t.Errorf("managedFields (-want +got)\n%s", diff)
			}
		})
	}
}

// step is one write to an object in TestApply.
type step func(t *testing.T, obj map[string]any) (map[string]any, error)

func apply(manager, config string) step      { return applyStep(manager, config, false) }
func forceApply(manager, config string) step { return applyStep(manager, config, true) }

func applyStep(manager, config string, force bool) step {
	return func(t *testing.T, obj map[string]any) (map[string]any, error) {
		c := mustMap(t, config)
		c["apiVersion"], c["kind"] = "v1", "ConfigMap"
		return mgr(manager).Apply(obj, c, force)
	}
}

// applyEntry gives manager an Apply entry owning fieldsV1, as a client
// writing managedFields does.
func applyEntry(manager, fieldsV1 string) step {
	return func(t *testing.T, obj map[string]any) (map[string]any, error) {
		set, err := ParseFieldsV1(mustMap(t, fieldsV1))
		if err != nil {
			return nil, err
		}
		next := deepCopyMap(obj)
		setManaged(next, []*entry{{manager: manager, operation: OperationApply, apiVersion: "v1", set: set}})
		return next, nil
	}
}

// update replaces the object's data, as kubectl edit does.
func update(manager, data string) step {
	return func(t *testing.T, obj map[string]any) (map[string]any, error) {
		next := deepCopyMap(obj)
		next["data"] = mustMap(t, data)
		mgr(manager).Update(obj, next)
		return next, nil
	}
}

func fv(s string) map[string]any {
	m, err := decodeMap([]byte(s))
	if err != nil {
		panic(err)
	}
	return m
}

func TestUpdateRecordsChanges(t *testing.T) {
	created := mustMap(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"1"}},"data":{"k":"v"}}`)
	mgr("kubectl-create").Update(nil, created)
	want := map[string]any{"kubectl-create/Update": fv(`{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}}`)}
	if diff := cmp.Diff(want, managed(t, created)); diff != "" {
		t.Errorf("after create (-want +got)\n%s", diff)
	}
}

// TestUpdateTakesClientManagedFields: as kube's decodeLiveOrNew
// (k8s.io/apimachinery managedfields/internal/fieldmanager.go), a write's
// managedFields are taken as given when they decode, kept from the live
// object when they do not, cleared by [] or [{}] (an update then records
// nothing, a create its creator), and ignored on a subresource.
func TestUpdateTakesClientManagedFields(t *testing.T) {
	live := mustMap(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`)
	mgr("kubectl-create").Update(nil, live)
	liveManaged := managed(t, live)
	given := map[string]any{"tool/Apply": fv(`{"f:data":{".":{},"f:k":{}}}`)}
	tests := []struct {
		name          string
		managedFields string
		manager       Manager
		create        bool
		want          map[string]any
	}{
		{name: "valid are taken", managedFields: `[{"manager":"tool","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]`,
			manager: mgr("x"), want: given},
		{name: "an unknown operation keeps live's", managedFields: `[{"manager":"m","operation":"Nope","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{}}]`,
			manager: mgr("x"), want: liveManaged},
		{name: "a bad fieldsV1 keeps live's", managedFields: `[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"bad":{}}}]`,
			manager: mgr("x"), want: liveManaged},
		{name: "not a list keeps live's", managedFields: `{}`, manager: mgr("x"), want: liveManaged},
		{name: "null keeps live's", managedFields: `null`, manager: mgr("x"), want: liveManaged},
		{name: "[] clears", managedFields: `[]`, manager: mgr("x"), want: map[string]any{}},
		{name: "[{}] clears", managedFields: `[{}]`, manager: mgr("x"), want: map[string]any{}},
		{name: "an entry with an empty manager clears", managedFields: `[{"manager":"","time":null}]`, manager: mgr("x"), want: map[string]any{}},
		{name: "two empty entries are invalid: live's", managedFields: `[{},{}]`, manager: mgr("x"), want: liveManaged},
		{name: "a create after [] records its creator", managedFields: `[]`, manager: mgr("x"), create: true,
			want: map[string]any{"x/Update": fv(`{"f:data":{".":{},"f:k":{}}}`)}},
		{name: "a create with invalid ones records its creator", managedFields: `[{"operation":"Nope"}]`, manager: mgr("x"), create: true,
			want: map[string]any{"x/Update": fv(`{"f:data":{".":{},"f:k":{}}}`)}},
		{name: "an RFC 3339 time is taken", managedFields: `[{"manager":"tool","operation":"Apply","apiVersion":"v1","time":"2026-11-26T21:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]`,
			manager: mgr("x"), want: given},
		{name: "a time not RFC 3339 keeps live's", managedFields: `[{"manager":"tool","operation":"Apply","apiVersion":"v1","time":"garbage","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]`,
			manager: mgr("x"), want: liveManaged},
		{name: "two entries of one manager keep live's", managedFields: `[{"manager":"tool","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}},{"manager":"tool","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]`,
			manager: mgr("x"), want: liveManaged},
		{name: "a subresource keeps live's", managedFields: `[]`, manager: Manager{Name: "x", APIVersion: "v1", Subresource: "status", Schema: configMap, Now: testTime},
			want: liveManaged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := deepCopyMap(live)
			next["metadata"].(map[string]any)["managedFields"] = mustMap(t, `{"v":`+tt.managedFields+`}`)["v"]
			if tt.create {
				tt.manager.Update(nil, next)
			} else {
				tt.manager.Update(live, next)
			}
			if diff := cmp.Diff(tt.want, managed(t, next)); diff != "" {
				t.Errorf("managedFields (-want +got)\n%s", diff)
			}
		})
	}
}

func TestPathString(t *testing.T) {
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"f:data", "f:key"}, ".data.key"},
		{[]string{"f:metadata", "f:ownerReferences", `k:{"uid":"u"}`, "f:name"}, `.metadata.ownerReferences[uid="u"].name`},
		{[]string{"f:metadata", "f:finalizers", `v:"f"`}, `.metadata.finalizers[="f"]`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := pathString(tt.path); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestCreatedIsUpdate checks Update's shortcut for a create against the
// general computation.
func TestCreatedIsUpdate(t *testing.T) {
	for _, obj := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","uid":"u","generation":1,"creationTimestamp":"2026-01-02T03:04:05Z"},"data":{"ts":"1","pad":"xx"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"x"},"annotations":{},"finalizers":["f"],"ownerReferences":[{"uid":"u1","name":"o"}]},"data":{"k":"v"},"binaryData":null}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
		`{"kind":"ConfigMap"}`,
		`{"metadata":{"name":"c","ownerReferences":[{"uid":"u1","name":"a"},{"uid":"u1","name":"b","kind":"K"}]}}`,
		`{"metadata":{"finalizers":["a","a",{"x":1}],"labels":{}},"spec":{"list":[[1],{"a":null}],"empty":[],"n":null},"status":{"phase":"x"}}`,
		`{"metadata":"odd","data":{"k":"v"}}`,
		`{"metadata":null}`,
	} {
		for _, m := range []Manager{mgr("tool"), {Name: "ctl", APIVersion: "v1", Reset: statusReset(true), Now: testTime}} {
			shortcut, general := mustMap(t, obj), mustMap(t, obj)
			m.Update(nil, shortcut)
			m.update(nil, general)
			if diff := cmp.Diff(general, shortcut); diff != "" {
				t.Errorf("%s: the shortcut differs (-general +shortcut)\n%s", obj, diff)
			}
		}
	}
}

// entriesForm is what decodeEntries read, comparable.
func entriesForm(entries []*entry) []any {
	out := []any{}
	for _, e := range entries {
		out = append(out, []any{e.manager, e.operation, e.apiVersion, e.subresource, e.time, e.set.paths(-1), e.set.FieldsV1()})
	}
	return out
}

// checkPlainEntries checks that decodePlainEntries reads v as the JSON
// round trip does, when it reads it (ok), and that it reads it when plain.
func checkPlainEntries(t testing.TB, v any, plain bool) {
	t.Helper()
	got, ok := decodePlainEntries(v)
	want, err := decodeEntriesJSON(v)
	if plain && !ok {
		t.Errorf("%v: not read without JSON", v)
	}
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%v: read without JSON, the round trip fails: %v", v, err)
	}
	if diff := cmp.Diff(entriesForm(want), entriesForm(got)); diff != "" {
		t.Errorf("%v: entries (-want +got)\n%s", v, diff)
	}
}

func TestDecodePlainEntries(t *testing.T) {
	for _, tc := range []struct {
		name, mf string
		plain    bool
	}{
		{"one", `[{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]`, true},
		{"two, subresource", `[{"manager":"a","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{"v:\"f\"":{}}}}},
			{"manager":"b","operation":"Update","apiVersion":"v1","subresource":"status","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"k:{\"type\":\"A\"}":{".":{},"f:type":{}}}}}]`, true},
		{"empty fields", `[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`, true},
		{"empty list", `[]`, true},
		{"null", `null`, true},
		{"other case", `[{"Manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`, false},
		{"both cases", `[{"Manager":"x","manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`, false},
		{"unknown member", `[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{},"x":1}]`, false},
		{"null member", `[{"manager":null,"operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`, false},
		{"number", `[{"manager":1,"operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`, false},
		{"bad operation", `[{"manager":"m","operation":"Patch","fieldsType":"FieldsV1","fieldsV1":{}}]`, false},
		{"no fieldsType", `[{"manager":"m","operation":"Update","fieldsV1":{}}]`, false},
		{"no fieldsV1", `[{"manager":"m","operation":"Update","fieldsType":"FieldsV1"}]`, false},
		{"bad fieldsV1", `[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"x":{}}}]`, false},
		{"leaf not a map", `[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:a":1}}]`, false},
		{"null item", `[null]`, false},
		{"not a list", `{"manager":"m"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkPlainEntries(t, mustMap(t, `{"v":`+tc.mf+`}`)["v"], tc.plain)
		})
	}
	t.Run("invalid UTF-8", func(t *testing.T) {
		e := func() map[string]any {
			return map[string]any{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:a": map[string]any{}}}
		}
		name, key := e(), e()
		name["manager"] = "m\xff"
		key["fieldsV1"] = map[string]any{"f:\xff": map[string]any{}}
		for _, v := range []map[string]any{name, key} {
			if _, ok := decodePlainEntries([]any{v}); ok {
				t.Errorf("%q read without JSON, which writes U+FFFD", v)
			}
		}
	})
}

// FuzzDecodePlainEntries checks that managedFields read without the JSON
// round trip read as with it.
func FuzzDecodePlainEntries(f *testing.F) {
	f.Add(`[{"manager":"m","operation":"Update","apiVersion":"v1","time":"t","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]`)
	f.Add(`[{"manager":"a","operation":"Apply","subresource":"status","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"k:{\"type\":\"A\"}":{}}}}]`)
	f.Fuzz(func(t *testing.T, mf string) {
		v, err := decodeMap([]byte(`{"v":` + mf + `}`))
		if err != nil {
			return
		}
		checkPlainEntries(t, v["v"], false)
	})
}

func TestSameFieldsV1(t *testing.T) {
	set := func(fields string) *Set {
		s, err := ParseFieldsV1(mustMap(t, fields))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	leaf := &Set{member: true}
	bare := &Set{children: map[string]*Set{"f:a": {member: true}}}
	sets := []*Set{nil, {}, leaf, bare, set(`{}`), set(`{"f:a":{}}`), set(`{".":{},"f:a":{}}`), set(`{"f:b":{}}`),
		set(`{"f:a":{},"f:b":{}}`), set(`{"f:a":{"f:c":{}}}`), set(`{"f:a":{".":{},"f:c":{}}}`),
		union(set(`{"f:a":{}}`), set(`{"f:b":{}}`)), difference(set(`{"f:a":{},"f:b":{}}`), set(`{"f:b":{}}`))}
	for i, a := range sets {
		for j, b := range sets {
			if got, want := sameFieldsV1(a, b), equal(a.FieldsV1(), b.FieldsV1()); got != want {
				t.Errorf("sets %d %v and %d %v: same %v, want %v", i, a.FieldsV1(), j, b.FieldsV1(), got, want)
			}
		}
	}
}

// TestCompareHasNoEmptyNodes checks what nonEmpty relies on: the sets
// compare builds have no empty node below their root.
func TestCompareHasNoEmptyNodes(t *testing.T) {
	objects := []string{`{}`, `{"data":{"a":"1","b":"2"}}`, `{"data":{"a":"1","c":{}},"metadata":{"labels":{"x":"y"},"finalizers":["f","g"]}}`,
		`{"metadata":{"ownerReferences":[{"uid":"1","name":"a"},{"uid":"2"}]},"data":null}`, `{"data":[1,2],"metadata":{"finalizers":"f"}}`}
	var check func(path string, s *Set)
	check = func(path string, s *Set) {
		for pe, c := range s.childrenOrNil() {
			if c.empty() {
				t.Errorf("empty node at %s%s", path, pe)
			}
			check(path+pe+".", c)
		}
	}
	for _, a := range objects {
		for _, b := range objects {
			c := compare(mustMap(t, a), mustMap(t, b), configMap)
			for _, s := range []*Set{c.added, c.removed, c.modified} {
				check("", s)
			}
		}
	}
}

// TestApplyConflictsBounded: an apply conflict lists apierror.MaxCauses
// conflicts at most, and says how many it leaves out.
func TestApplyConflictsBounded(t *testing.T) {
	for _, n := range []int{apierror.MaxCauses, apierror.MaxCauses + 1} {
		data := func(v string) map[string]any {
			d := map[string]any{}
			for i := range n {
				d[fmt.Sprintf("k%03d", i)] = v
			}
			return d
		}
		live := map[string]any{"metadata": map[string]any{"name": "c"}, "data": data("old")}
		owner := Manager{Name: "owner", APIVersion: "v1", Schema: configMap, Now: testTime}
		owner.Update(nil, live)
		applier := Manager{Name: "applier", APIVersion: "v1", Schema: configMap, Now: testTime}
		_, err := applier.Apply(live, map[string]any{"data": data("new")}, false)
		se, ok := err.(*api.StatusError)
		if !ok {
			t.Fatalf("%d conflicts: %v", n, err)
		}
		more := strings.Contains(se.Status.Message, "...and 1 more")
		if len(se.Status.Details.Causes) != apierror.MaxCauses || more != (n > apierror.MaxCauses) ||
			!strings.HasPrefix(se.Status.Message, fmt.Sprintf("Apply failed with %d conflicts: ", n)) {
			t.Errorf("%d conflicts: %d causes, message %q", n, len(se.Status.Details.Causes), se.Status.Message)
		}
	}
}

// statusReset is Manager.Reset of a write to a resource with a status
// subresource (status true), or of one without.
func statusReset(status bool) [][]string {
	if status {
		return [][]string{{"status"}}
	}
	return nil
}

// A write limited by Only owns the fields its patterns reach, and the
// members on their way (a list item), as kube's include filters: a pod's
// resize owns its containers' resources, not their images or labels.
func TestManagedOnly(t *testing.T) {
	pod := SchemaFor("", "v1", "Pod")
	live := mustMap(t, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"a","resources":{"requests":{"cpu":"1"}}}]}}`)
	next := mustMap(t, `{"metadata":{"name":"p","labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"b","resources":{"requests":{"cpu":"2"}}}]}}`)
	m := Manager{Name: "kubectl", APIVersion: "v1", Subresource: "resize", Reset: statusReset(true), Schema: pod, Now: testTime,
		Only: [][]string{{"spec", "containers", "*", "resources"}}}
	got, err := m.Apply(live, next, true)
	if err != nil {
		t.Fatal(err)
	}
	want := mustMap(t, `{"kubectl/Apply":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}`)
	if diff := cmp.Diff(want, managed(t, got)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
