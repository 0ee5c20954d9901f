package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
	"github.com/listwatch/listwatch/storage/memory"
)

const rbacPath = "/apis/rbac.authorization.k8s.io/v1/"

// pathOf returns the API path of an RBAC object.
func pathOf(obj api.Object) string {
	plural := policy.Plural(obj.Kind())
	if ns := obj.Namespace(); ns != "" {
		return rbacPath + "namespaces/" + ns + "/" + plural + "/" + obj.Name()
	}
	return rbacPath + plural + "/" + obj.Name()
}

func getRole(t *testing.T, ts *httptest.Server, name string) api.Object {
	t.Helper()
	code, obj := call(t, ts, "GET", rbacPath+"clusterroles/"+name, "", "")
	if code != http.StatusOK {
		t.Fatalf("get clusterrole %s: %d %v", name, code, obj)
	}
	return obj
}

// withoutServerFields returns obj without what the server sets on create.
func withoutServerFields(obj api.Object) api.Object {
	obj = obj.DeepCopy()
	md := obj.Metadata()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp"} {
		delete(md, f)
	}
	return obj
}

// startOnBolt starts a server on the bolt store in dir; stop closes both
// and returns the store's revision after the server stopped.
func startOnBolt(t *testing.T, dir string) (ts *httptest.Server, stop func() int64) {
	t.Helper()
	store, err := bolt.Open(dir, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ts = httptest.NewServer(s.Handler())
	stopped := false
	stop = func() int64 {
		if stopped {
			return 0
		}
		stopped = true
		s.Close()
		ts.Close()
		defer store.Close()
		// The policy's last write (the store's revision moves with the
		// controller Lease too).
		var rev int64
		for _, plural := range []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"} {
			res, _ := s.catalog.Get(policy.Group, "v1", plural)
			list, err := store.List(context.Background(), res.KeyPrefix(""), storage.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range list.KVs {
				rev = max(rev, kv.ModRevision)
			}
		}
		return rev
	}
	t.Cleanup(func() { stop() })
	return ts, stop
}

// TestPolicyDefaults: on a fresh store every default object exists as kube
// publishes it, and the aggregated roles have their parts' rules, view's
// in edit's and edit's in admin's.
func TestPolicyDefaults(t *testing.T) {
	ts := newTestServer(t)
	defaults := policy.Defaults()
	if len(defaults) < 100 {
		t.Fatalf("%d default objects; kube has over 100", len(defaults))
	}
	for _, want := range defaults {
		code, got := call(t, ts, "GET", pathOf(want), "", "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", pathOf(want), code, got)
		}
		got = withoutServerFields(got)
		if want["aggregationRule"] != nil {
			delete(got, "rules") // the aggregation's, below
			delete(want, "rules")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-kube +stored):\n%s", pathOf(want), diff)
		}
	}
	rules := func(name string) []any { r, _ := getRole(t, ts, name)["rules"].([]any); return r }
	// kube's order: the matching roles by name, each rule once.
	union := func(names ...string) []any {
		var out []any
		for _, n := range names {
			for _, r := range rules(n) {
				if !slices.ContainsFunc(out, func(o any) bool { return cmp.Equal(o, r) }) {
					out = append(out, r)
				}
			}
		}
		return out
	}
	for role, parts := range map[string][]string{
		"view":  {"system:aggregate-to-view"},
		"edit":  {"system:aggregate-to-edit", "view"},
		"admin": {"edit", "system:aggregate-to-admin"},
	} {
		if diff := cmp.Diff(union(parts...), rules(role)); diff != "" {
			t.Errorf("%s's rules (-%v +%s):\n%s", role, parts, role, diff)
		}
	}
}

// TestPolicyReconcile restarts a server on the same store: a restart with
// nothing to change writes nothing; a user's rule added to a default role
// stays, and a default rule removed from it comes back; a binding keeps
// its extra subject and gets its default one back; an object annotated
// autoupdate "false" is left as it is.
func TestPolicyReconcile(t *testing.T) {
	dir := t.TempDir()
	_, stop := startOnBolt(t, dir)
	first := stop()

	ts, stop := startOnBolt(t, dir)
	if rev := stop(); rev != first {
		t.Fatalf("a restart with nothing to change wrote the policy: revision %d -> %d", first, rev)
	}

	ts, stop = startOnBolt(t, dir)
	// system:aggregate-to-edit: its first rule (pods/attach, ... create,
	// delete, ...) replaced by a user's.
	role := getRole(t, ts, "system:aggregate-to-edit")
	defaultRules := role["rules"].([]any)
	userRule := map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets"}, "verbs": []any{"get"}}
	role["rules"] = append([]any{userRule}, defaultRules[1:]...)
	put(t, ts, role)
	// system:basic-user, protected: its rules emptied.
	protected := getRole(t, ts, "system:basic-user")
	protected.Metadata()["annotations"] = map[string]any{"rbac.authorization.kubernetes.io/autoupdate": "false"}
	protected["rules"] = []any{userRule}
	protected = put(t, ts, protected)
	// system:discovery's binding: a subject added, its default removed.
	code, binding := call(t, ts, "GET", rbacPath+"clusterrolebindings/system:discovery", "", "")
	if code != http.StatusOK {
		t.Fatalf("get binding: %d %v", code, binding)
	}
	defaultSubjects := binding["subjects"].([]any)
	userSubject := map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
	binding["subjects"] = []any{userSubject}
	put(t, ts, binding)
	stop()

	ts, _ = startOnBolt(t, dir)
	got := getRole(t, ts, "system:aggregate-to-edit")["rules"].([]any)
	if !cmp.Equal(got[0], any(userRule)) {
		t.Errorf("the user's rule is gone: rules %v", got)
	}
	// The removed rule is back, broken down into single verbs and resources.
	for _, r := range defaultRules[0].(map[string]any)["resources"].([]any) {
		for _, v := range defaultRules[0].(map[string]any)["verbs"].([]any) {
			want := map[string]any{"apiGroups": []any{""}, "resources": []any{r}, "verbs": []any{v}}
			if !slices.ContainsFunc(got, func(g any) bool { return cmp.Equal(g, any(want)) }) {
				t.Errorf("the default rule %v is not back", want)
			}
		}
	}
	if p := getRole(t, ts, "system:basic-user"); p.ResourceVersion() != protected.ResourceVersion() {
		t.Errorf("a protected role was changed: %v", p)
	}
	_, binding = call(t, ts, "GET", rbacPath+"clusterrolebindings/system:discovery", "", "")
	if diff := cmp.Diff(append([]any{userSubject}, defaultSubjects...), binding["subjects"]); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
	// The user's rule reached edit and admin through aggregation.
	for _, name := range []string{"edit", "admin"} {
		if !slices.ContainsFunc(getRole(t, ts, name)["rules"].([]any), func(g any) bool { return cmp.Equal(g, any(userRule)) }) {
			t.Errorf("%s lacks the rule added to system:aggregate-to-edit", name)
		}
	}
}

// TestPolicyRecreatesBinding: a default binding to another role is deleted
// and created again with the default roleRef, as kube does (roleRef cannot
// change).
func TestPolicyRecreatesBinding(t *testing.T) {
	dir := t.TempDir()
	ts, stop := startOnBolt(t, dir)
	path := rbacPath + "clusterrolebindings/system:basic-user"
	if code, obj := call(t, ts, "DELETE", path, "", ""); code != http.StatusOK {
		t.Fatalf("delete: %d %v", code, obj)
	}
	if code, obj := call(t, ts, "POST", rbacPath+"clusterrolebindings", mediaJSON,
		`{"metadata":{"name":"system:basic-user"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"devs"}]}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	stop()
	ts, _ = startOnBolt(t, dir)
	_, got := call(t, ts, "GET", path, "", "")
	want := map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:basic-user"}
	if diff := cmp.Diff(any(want), got["roleRef"]); diff != "" {
		t.Errorf("roleRef (-want +got):\n%s", diff)
	}
	if subjects := got["subjects"].([]any); len(subjects) != 1 || subjects[0].(map[string]any)["name"] != "system:authenticated" {
		t.Errorf("subjects %v, want the default's alone", subjects)
	}
}

func put(t *testing.T, ts *httptest.Server, obj api.Object) api.Object {
	t.Helper()
	code, got := call(t, ts, "PUT", pathOf(obj), mediaJSON, string(mustJSON(t, obj)))
	if code != http.StatusOK {
		t.Fatalf("put %s: %d %v", pathOf(obj), code, got)
	}
	return got
}

func mustJSON(t *testing.T, obj api.Object) []byte {
	t.Helper()
	b, err := api.MarshalObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPolicyAggregation: a ClusterRole labeled aggregate-to-view adds its
// rule to view, edit and admin (edit aggregates view, admin edit); a
// change of its rules follows; removing the label, or deleting it, takes
// the rule out of all three; a user's rule written into edit is replaced
// by the aggregation, as in kube.
func TestPolicyAggregation(t *testing.T) {
	ts := newTestServer(t)
	const roles = rbacPath + "clusterroles"
	has := func(obj api.Object, resource string) bool {
		rules, _ := obj["rules"].([]any)
		return slices.ContainsFunc(rules, func(r any) bool {
			res, _ := r.(map[string]any)["resources"].([]any)
			return slices.Contains(res, any(resource))
		})
	}
	// waitAdmin reads admin's changes after rv until one satisfies ok:
	// admin is the last link of the chain, written after view and edit.
	waitAdmin := func(rv string, ok func(api.Object) bool) {
		t.Helper()
		w := openWatch(t, ts.Client(), ts.URL+roles+"?watch=true&fieldSelector=metadata.name%3Dadmin&resourceVersion="+rv)
		for !ok(w.next(1, false)[0].Object) {
		}
		w.resp.Body.Close()
	}
	check := func(resource string, want bool) {
		t.Helper()
		for _, name := range []string{"view", "edit", "admin"} {
			if got := has(getRole(t, ts, name), resource); got != want {
				t.Errorf("%s has %s: %v, want %v", name, resource, got, want)
			}
		}
	}

	code, extra := call(t, ts, "POST", roles, mediaJSON, `{"metadata":{"name":"widgets-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
		"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","list","watch"]}]}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, extra)
	}
	waitAdmin(extra.ResourceVersion(), func(o api.Object) bool { return has(o, "widgets") })
	check("widgets", true)

	extra["rules"] = []any{map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"gadgets"}, "verbs": []any{"get"}}}
	extra = put(t, ts, extra)
	waitAdmin(extra.ResourceVersion(), func(o api.Object) bool { return has(o, "gadgets") && !has(o, "widgets") })
	check("widgets", false)
	check("gadgets", true)

	code, unlabeled := call(t, ts, "PATCH", roles+"/widgets-view", "application/merge-patch+json", `{"metadata":{"labels":null}}`)
	if code != http.StatusOK {
		t.Fatalf("patch: %d %v", code, unlabeled)
	}
	waitAdmin(unlabeled.ResourceVersion(), func(o api.Object) bool { return !has(o, "gadgets") })
	check("gadgets", false)

	code, relabeled := call(t, ts, "PATCH", roles+"/widgets-view", "application/merge-patch+json", `{"metadata":{"labels":{"rbac.authorization.k8s.io/aggregate-to-edit":"true"}}}`)
	if code != http.StatusOK {
		t.Fatalf("patch: %d %v", code, relabeled)
	}
	waitAdmin(relabeled.ResourceVersion(), func(o api.Object) bool { return has(o, "gadgets") })
	if has(getRole(t, ts, "view"), "gadgets") || !has(getRole(t, ts, "edit"), "gadgets") {
		t.Error("aggregate-to-edit should reach edit and admin, not view")
	}
	before := getRole(t, ts, "admin").ResourceVersion()
	if code, deleted := call(t, ts, "DELETE", roles+"/widgets-view", "", ""); code != http.StatusOK {
		t.Fatalf("delete: %d %v", code, deleted)
	}
	waitAdmin(before, func(o api.Object) bool { return !has(o, "gadgets") })
	check("gadgets", false)

	edit := getRole(t, ts, "edit")
	edit["rules"] = append(edit["rules"].([]any), map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"sprockets"}, "verbs": []any{"get"}})
	edit = put(t, ts, edit)
	w := openWatch(t, ts.Client(), ts.URL+roles+"?watch=true&fieldSelector=metadata.name%3Dedit&resourceVersion="+edit.ResourceVersion())
	if got := w.next(1, false)[0].Object; has(got, "sprockets") {
		t.Errorf("the aggregation kept a rule written into edit: %v", got["rules"])
	}
}

// TestPolicyTwoServers starts two servers on one store at once: both
// start, and each default object is created once.
func TestPolicyTwoServers(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	var wg sync.WaitGroup
	servers := make([]*Server, 2)
	errs := make([]error, 2)
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = New(t.Context(), Config{Storage: store}) })
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(s.Close)
	}
	// Each is as created, but for the rules of the aggregated ones.
	for _, want := range policy.Defaults() {
		res, _ := servers[0].catalog.Get(policy.Group, "v1", policy.Plural(want.Kind()))
		kv, err := store.Get(t.Context(), res.Key(want.Namespace(), want.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if kv.CreateRevision != kv.ModRevision && want["aggregationRule"] == nil {
			t.Errorf("%s was written after its create", pathOf(want))
		}
	}
}

// failingUpdates is a store whose updates of one key fail while fail > 0.
type failingUpdates struct {
	storage.Interface
	key  atomic.Pointer[string]
	fail atomic.Int32
}

func (f *failingUpdates) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	if k := f.key.Load(); k != nil && key == *k && f.fail.Add(-1) >= 0 {
		return 0, errors.New("injected failure")
	}
	return f.Interface.Update(ctx, key, expected, value)
}

// TestPolicyAggregationRetries: a write of an aggregated role that fails
// is tried again after a backoff, while changes go on being followed.
func TestPolicyAggregationRetries(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	store := &failingUpdates{Interface: mem}
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	res, _ := s.catalog.Get(policy.Group, "v1", "clusterroles")
	key := res.Key("", "view")
	store.key.Store(&key)
	store.fail.Store(1)
	code, extra := call(t, ts, "POST", rbacPath+"clusterroles", mediaJSON, `{"metadata":{"name":"widgets-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
		"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get"]}]}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, extra)
	}
	w := openWatch(t, ts.Client(), ts.URL+rbacPath+"clusterroles?watch=true&fieldSelector=metadata.name%3Dview&resourceVersion="+extra.ResourceVersion())
	got := w.next(1, false)[0].Object
	if rules := got["rules"].([]any); !cmp.Equal(rules[len(rules)-1], any(map[string]any{"apiGroups": []any{"example.com"}, "resources": []any{"widgets"}, "verbs": []any{"get"}})) {
		t.Errorf("view's rules after the retry: %v", rules)
	}
	if n := store.fail.Load(); n >= 0 {
		t.Errorf("the write did not fail first (%d failures left)", n+1)
	}
}

// TestPolicyAggregationConcurrentLabels: roles labeled and unlabeled at
// once, while aggregations run, all reach admin, then all leave it.
func TestPolicyAggregationConcurrentLabels(t *testing.T) {
	ts := newTestServer(t)
	const roles = rbacPath + "clusterroles"
	const n = 8
	resources := func(obj api.Object) []string {
		var out []string
		rules, _ := obj["rules"].([]any)
		for _, r := range rules {
			res, _ := r.(map[string]any)["resources"].([]any)
			for _, x := range res {
				out = append(out, x.(string))
			}
		}
		return out
	}
	for i := range n {
		code, obj := call(t, ts, "POST", roles, mediaJSON, fmt.Sprintf(`{"metadata":{"name":"r%d"},"rules":[{"apiGroups":["example.com"],"resources":["res%d"],"verbs":["get"]}]}`, i, i))
		if code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, obj)
		}
	}
	for round, labels := range []string{`{"rbac.authorization.k8s.io/aggregate-to-view":"true"}`, `null`} {
		rv := getRole(t, ts, "admin").ResourceVersion()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				code, obj := call(t, ts, "PATCH", fmt.Sprintf("%s/r%d", roles, i), "application/merge-patch+json", `{"metadata":{"labels":`+labels+`}}`)
				if code != http.StatusOK {
					t.Errorf("patch: %d %v", code, obj)
				}
			})
		}
		wg.Wait()
		w := openWatch(t, ts.Client(), ts.URL+roles+"?watch=true&fieldSelector=metadata.name%3Dadmin&resourceVersion="+rv)
		for {
			got := resources(w.next(1, false)[0].Object)
			count := 0
			for i := range n {
				if slices.Contains(got, fmt.Sprintf("res%d", i)) {
					count++
				}
			}
			if (round == 0 && count == n) || (round == 1 && count == 0) {
				break
			}
		}
		w.resp.Body.Close()
	}
}
