package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
	"github.com/listwatch/listwatch/storage/memory"
)

// nested is n objects nested in one another ({"a":{"a":1}} for 2): JSON n
// levels deep.
func nested(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// nestedWithLeaves is nested with a leaf "v" at every level, which a
// manager that sets them owns one by one.
func nestedWithLeaves(n int, v string) string {
	return strings.Repeat(`{"v":`+v+`,"a":`, n) + "1" + strings.Repeat("}", n)
}

const thingsPath = "/apis/example.com/v1/namespaces/default/things"

// parseJSON decodes any JSON value.
func parseJSON(t *testing.T, s string) any {
	t.Helper()
	obj, err := api.ParseObject([]byte(`{"v":` + s + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return obj["v"]
}

// startOn serves built-ins and "things.example.com" (no schema: every field
// is kept) on store; the returned function stops it.
func startOn(t *testing.T, store storage.Interface) (*httptest.Server, func()) {
	t.Helper()
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	s.catalog.Replace("things.example.com", []*resource.Resource{{Group: "example.com", Version: "v1",
		Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList", Namespaced: true, Owner: "things.example.com"}})
	ts := httptest.NewServer(s.Handler())
	return ts, func() { ts.Close(); s.Close() }
}

// answer is a response read whole, whatever its body.
type answer struct {
	code   int
	body   []byte
	header http.Header
	took   time.Duration
}

// status is the answer's body as an object, or nil.
func (a answer) status() api.Object {
	obj, _ := api.ParseObject(a.body)
	return obj
}

func (a answer) String() string {
	b := a.body
	if len(b) > 300 {
		b = append(b[:300:300], "..."...)
	}
	return fmt.Sprintf("%d (%d bytes, %v): %s", a.code, len(a.body), a.took, b)
}

// ask makes one request and reads the whole answer.
func ask(t *testing.T, ts *httptest.Server, method, path, contentType, body string) answer {
	t.Helper()
	return askWith(t, ts, method, path, http.Header{"Content-Type": {contentType}}, body)
}

// askWith is ask with the request's headers (each if not empty).
func askWith(t *testing.T, ts *httptest.Server, method, path string, header http.Header, body string) answer {
	t.Helper()
	start := time.Now()
	resp, b := roundTrip(t, ts.Client(), method, ts.URL+path, header, body)
	return answer{resp.StatusCode, b, resp.Header, time.Since(start)}
}

// wantStatus fails unless a is a Status with code and a message containing msg.
func wantStatus(t *testing.T, a answer, code int, msg string) {
	t.Helper()
	st := a.status()
	if a.code != code || st["kind"] != "Status" || !strings.Contains(fmt.Sprint(st["message"]), msg) {
		t.Fatalf("got %v, want a %d Status saying %q", a, code, msg)
	}
}

// listLen lists path and returns how many items it holds (fatal unless 200).
func listLen(t *testing.T, ts *httptest.Server, path string) int {
	t.Helper()
	a := ask(t, ts, "GET", path, "", "")
	items, ok := a.status()["items"].([]any)
	if a.code != http.StatusOK || !ok {
		t.Fatalf("list %s: %v", path, a)
	}
	return len(items)
}

// TestDeepObjects drives the reported cases of nesting against the real
// server on the embedded store: at the decoders' limit and one past it, on
// create, merge patch and apply, and checks afterwards that every resource
// still lists, watches and deletes, also after a restart. Before the depth
// policy, the 9,996-deep ConfigMap was stored with managedFields deeper than
// the decoder reads, and every LIST of configmaps answered 500 for good.
func TestDeepObjects(t *testing.T) {
	dir := t.TempDir()
	store, err := bolt.Open(dir, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ts, stop := startOn(t, store)
	watch := openWatch(t, ts.Client(), ts.URL+"/api/v1/configmaps?watch=true&resourceVersion=1")

	// A ConfigMap has no field x: kube's decoder drops it (with a warning),
	// so managedFields, recorded after, do not name it.
	limit := ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"at-limit"},"x":`+nested(api.MaxDepth-1)+`}`)
	created := limit.status()
	if limit.code != http.StatusCreated || created["x"] != nil || strings.Contains(string(limit.body), "f:x") ||
		!strings.Contains(limit.header.Get("Warning"), `unknown field \"x\"`) {
		t.Fatalf("create at the decoder's limit: %v, warning %q", limit, limit.header.Get("Warning"))
	}
	wantStatus(t, ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"past-limit"},"x":`+nested(api.MaxDepth)+`}`),
		http.StatusBadRequest, "exceeded max depth")
	wantStatus(t, ask(t, ts, "POST", cmPath, "application/yaml", "metadata: {name: yaml}\nx: "+nested(api.MaxDepth)),
		http.StatusBadRequest, "exceeded max depth")
	// YAML's aliases grow a document by a power of its length: go-yaml
	// refuses a billion of them.
	bomb := "metadata: {name: bomb}\na0: &a0 [x,x,x,x,x,x,x,x,x,x]\n"
	for i := 1; i < 9; i++ {
		bomb += fmt.Sprintf("a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	wantStatus(t, ask(t, ts, "POST", cmPath, "application/yaml", bomb), http.StatusBadRequest, "excessive aliasing")

	// Protobuf nests only as its schema does, but for managedFields'
	// fieldsV1, which is JSON: a ConfigMap one level deeper than storable
	// through it (root, metadata, managedFields, an entry, then fieldsV1)
	// is refused.
	withFields := func(name string, depth int) string {
		t.Helper()
		fields := strings.Repeat(`{"f:a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
		pb, err := protobuf.Encode(api.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name,
			"managedFields": []any{map[string]any{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
				"fieldsV1": parseJSON(t, fields)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(pb)
	}
	if a := ask(t, ts, "POST", cmPath, mediaProtobuf, withFields("pb", api.MaxObjectDepth-4)); a.code != http.StatusCreated {
		t.Fatalf("protobuf create at the limit: %v", a)
	}
	wantStatus(t, ask(t, ts, "POST", cmPath, mediaProtobuf, withFields("pb-deeper", api.MaxObjectDepth-3)), http.StatusBadRequest, "exceeded max depth")

	// The same merge patch on namespace default: pruned, and namespaces
	// still list.
	if a := ask(t, ts, "PATCH", "/api/v1/namespaces/default", mediaMergePatch, `{"x":`+nested(api.MaxDepth-1)+`}`); a.code != http.StatusOK || strings.Contains(string(a.body), "f:x") {
		t.Fatalf("deep merge patch of namespace default: %v", a)
	}
	listLen(t, ts, "/api/v1/namespaces")

	// A Thing keeps every field, and its managedFields nest 5 levels deeper
	// than its deepest field (metadata, managedFields, an entry, fieldsV1,
	// the leaf's {}): the deepest whose lists and events decode is stored,
	// one deeper is refused before anything is written.
	const deepest = api.MaxObjectDepth - 6
	if a := ask(t, ts, "POST", thingsPath, mediaJSON, `{"metadata":{"name":"deepest"},"x":`+nested(deepest)+`}`); a.code != http.StatusCreated {
		t.Fatalf("create of the deepest storable thing: %v", a)
	}
	wantStatus(t, ask(t, ts, "POST", thingsPath, mediaJSON, `{"metadata":{"name":"deeper"},"x":`+nested(deepest+1)+`}`),
		http.StatusBadRequest, `Thing "deeper" cannot be stored: exceeded max depth of 9997`)
	wantStatus(t, ask(t, ts, "GET", thingsPath+"/deeper", "", ""), http.StatusNotFound, "not found")
	ask(t, ts, "POST", thingsPath, mediaJSON, `{"metadata":{"name":"patched"}}`)
	a := ask(t, ts, "PATCH", thingsPath+"/patched", mediaMergePatch, `{"x":`+nested(deepest)+`}`)
	if a.code != http.StatusOK {
		t.Fatalf("merge patch to the deepest storable thing: %v", a)
	}
	wantStatus(t, ask(t, ts, "PATCH", thingsPath+"/patched", mediaMergePatch, `{"y":`+nested(deepest+1)+`}`),
		http.StatusBadRequest, "cannot be stored: exceeded max depth of 9997")

	// Apply against fields another manager owns at every level: the
	// conflict names them all in its count, lists the first few, and its
	// answer stays small (it was 200 MB).
	const levels = deepest / 2
	ask(t, ts, "POST", thingsPath, mediaJSON, `{"metadata":{"name":"owned"},"x":`+nestedWithLeaves(levels, "1")+`}`)
	conflict := ask(t, ts, "PATCH", thingsPath+"/owned?fieldManager=other", "application/apply-patch+yaml",
		`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"owned"},"x":`+nestedWithLeaves(levels, "2")+`}`)
	wantStatus(t, conflict, http.StatusConflict, fmt.Sprintf("Apply failed with %d conflicts: conflicts with", levels))
	if causes := conflict.status()["details"].(map[string]any)["causes"].([]any); len(conflict.body) > 100<<10 ||
		!strings.Contains(string(conflict.body), fmt.Sprintf("...and %d more", levels-len(causes))) || len(causes) != 100 {
		t.Fatalf("apply conflict: %v with %d causes", conflict, len(causes))
	}

	// Everything still lists, watches and deletes, and lists after a restart.
	check := func(ts *httptest.Server) {
		t.Helper()
		if n := listLen(t, ts, cmPath); n != 2 {
			t.Errorf("%d configmaps in default, want 2", n)
		}
		listLen(t, ts, "/api/v1/configmaps")
		listLen(t, ts, "/api/v1/namespaces")
		if n := listLen(t, ts, thingsPath); n != 3 {
			t.Errorf("%d things, want 3", n)
		}
		// The deepest wrapping of an object, a Table row with it, decodes.
		table := askWith(t, ts, "GET", thingsPath+"?includeObject=Object", http.Header{"Accept": {tableAccept}}, "")
		if rows, _ := table.status()["rows"].([]any); table.code != http.StatusOK || len(rows) != 3 {
			t.Errorf("Table of things with their objects: %v", table)
		}
		if got := openWatch(t, ts.Client(), ts.URL+thingsPath+"?watch=true&resourceVersion=0").next(3, false); got[2].Type != "ADDED" {
			t.Errorf("watch of things: %v", got)
		}
	}
	check(ts)
	ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"later"}}`)
	if got := watch.next(3, false); got[1].Object.Name() != "pb" || got[2].Type != "ADDED" || got[2].Object.Name() != "later" {
		t.Fatalf("watch after the deep writes: %v", got)
	}
	if a := ask(t, ts, "DELETE", cmPath+"/later", "", ""); a.code != http.StatusOK {
		t.Fatalf("delete: %v", a)
	}
	stop()
	store.Close()

	store, err = bolt.Open(dir, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ts, stop = startOn(t, store)
	defer stop()
	check(ts)
	for _, p := range []string{cmPath + "/at-limit", cmPath + "/pb", thingsPath + "/deepest", thingsPath + "/patched", thingsPath + "/owned"} {
		if a := ask(t, ts, "DELETE", p, "", ""); a.code != http.StatusOK {
			t.Fatalf("delete %s after the restart: %v", p, a)
		}
	}
}

// builtinKey is the storage key of a built-in object.
func builtinKey(t *testing.T, plural, ns, name string) string {
	t.Helper()
	for _, r := range resource.Builtins() {
		if r.Group == "" && r.Plural == plural {
			return r.Key(ns, name)
		}
	}
	t.Fatalf("no built-in %s", plural)
	return ""
}

// TestUndecodableObjects writes values the server cannot decode straight
// into the store (as an older version or a bug might have left them) and
// drives the server: they are skipped by every list and by the watch
// cache, whose watchers go on receiving later writes, and each can still
// be deleted; a value that turns undecodable leaves lists and watchers as
// a deletion would. Each is counted once in the cache's metrics. Before, one such value made every list of its resource
// answer 500 and stopped the watch cache for good.
func TestUndecodableObjects(t *testing.T) {
	store := memory.New()
	defer store.Close()
	ts, stop := startOn(t, store)
	defer func() { stop() }()
	ctx := t.Context()
	ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"a"}}`)
	rv := ask(t, ts, "GET", cmPath, "", "").status()["metadata"].(map[string]any)["resourceVersion"].(string)
	watch := openWatch(t, ts.Client(), ts.URL+"/api/v1/configmaps?watch=true&resourceVersion="+rv)

	bad := map[string]string{
		"truncated":   `{"metadata":{"name":"truncated"`,
		"not-object":  `[1]`,
		"too-deep":    `{"metadata":{"name":"too-deep"},"x":` + nested(api.MaxDepth) + `}`,
		"bad-numbers": `{"metadata":{"name":"bad-numbers"},"x":01}`,
	}
	for name, v := range bad {
		if _, err := store.Create(ctx, builtinKey(t, "configmaps", "default", name), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Create(ctx, builtinKey(t, "namespaces", "", "broken"), []byte(`{"metadata":`)); err != nil {
		t.Fatal(err)
	}
	ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"b"}}`)
	if got := watch.next(1, false); got[0].Type != "ADDED" || got[0].Object.Name() != "b" {
		t.Fatalf("watch after the undecodable values: %v", got)
	}
	for _, p := range []string{cmPath, "/api/v1/configmaps", cmPath + "?limit=1", cmPath + "?resourceVersion=" + rv + "&resourceVersionMatch=Exact"} {
		if n := listLen(t, ts, p); n > 2 {
			t.Errorf("list %s: %d objects, want at most 2 (a and b)", p, n)
		}
	}
	listLen(t, ts, "/api/v1/namespaces")
	wantStatus(t, ask(t, ts, "GET", cmPath+"/truncated", "", ""), http.StatusInternalServerError, "decoding")
	wantStatus(t, ask(t, ts, "DELETE", cmPath+"/truncated", mediaJSON, `{"preconditions":{"uid":"x"}}`), http.StatusConflict, "does not match the UID in record ()")

	for name := range bad {
		if a := ask(t, ts, "DELETE", cmPath+"/"+name, "", ""); a.code != http.StatusOK || a.status()["details"].(map[string]any)["name"] != name {
			t.Errorf("delete %s: %v", name, a)
		}
	}
	if a := ask(t, ts, "DELETE", "/api/v1/namespaces/broken", "", ""); a.code != http.StatusOK {
		t.Errorf("delete of the undecodable namespace: %v", a)
	}
	if kvs, err := store.List(ctx, builtinKey(t, "configmaps", "default", ""), storage.ListOptions{}); err != nil || len(kvs.KVs) != 2 {
		t.Errorf("after the deletes the store holds %d configmaps (%v), want 2", len(kvs.KVs), err)
	}

	// "a" turns undecodable: to lists and watchers, it is gone.
	kv, err := store.Get(ctx, builtinKey(t, "configmaps", "default", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Update(ctx, kv.Key, kv.ModRevision, []byte(`{`)); err != nil {
		t.Fatal(err)
	}
	if got := watch.next(1, false); got[0].Type != "DELETED" || got[0].Object.Name() != "a" {
		t.Fatalf("watch after a turned undecodable: %v", got)
	}
	ask(t, ts, "POST", cmPath, mediaJSON, `{"metadata":{"name":"c"}}`)
	if got := watch.next(1, false); got[0].Type != "ADDED" || got[0].Object.Name() != "c" {
		t.Fatalf("watch after: %v", got)
	}
	metrics := ask(t, ts, "GET", "/metrics", "", "")
	if want := `listwatch_watch_cache_undecodable_total{resource="configmaps"} 5`; !strings.Contains(string(metrics.body), want) {
		t.Errorf("metrics lack %s", want)
	}
	stop()
	ts, stop = startOn(t, store)
	if n := listLen(t, ts, cmPath); n != 2 {
		t.Errorf("after a restart: %d configmaps listed, want 2 (b and c)", n)
	}
}
