package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
)

func revisionOf(obj api.Object) int64 {
	rv, _ := strconv.ParseInt(obj.ResourceVersion(), 10, 64)
	return rv
}

// namespaceCondition is a namespace's condition without its time.
type namespaceCondition struct{ Type, Status, Reason, Message string }

func conditionsOf(ns api.Object) []namespaceCondition {
	var out []namespaceCondition
	list, _ := at(ns, "status.conditions").([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		if str("lastTransitionTime") == "" {
			out = append(out, namespaceCondition{Type: "missing lastTransitionTime"})
		}
		out = append(out, namespaceCondition{str("type"), str("status"), str("reason"), str("message")})
	}
	return out
}

// TestNamespaceDeletionHeldByFinalizer: a namespace's DELETE answers at
// once with it marked; the controller deletes its contents, and an object
// its finalizer holds keeps the namespace Terminating, with kube's
// conditions saying what remains, and new content refused (kube's
// NamespaceLifecycle), until the finalizer goes; then the namespace goes.
func TestNamespaceDeletionHeldByFinalizer(t *testing.T) {
	req, _ := deleteServer(t)
	const nss, cms = "/api/v1/namespaces", "/api/v1/namespaces/team/configmaps"
	req("POST", nss, `{"metadata":{"name":"team"}}`)
	req("POST", cms, `{"metadata":{"name":"held","finalizers":["example.com/x"]}}`)
	req("POST", cms, `{"metadata":{"name":"free"}}`)

	got := req("DELETE", nss+"/team", "")
	if got.code != http.StatusOK || at(got.obj, "status.phase") != "Terminating" || got.obj.MetaString("deletionTimestamp") == "" ||
		!cmp.Equal(at(got.obj, "spec.finalizers"), []any{"kubernetes"}) {
		t.Fatalf("delete: %d %v, want the namespace marked Terminating", got.code, got.obj)
	}
	ok := func(typ, reason, msg string) namespaceCondition { return namespaceCondition{typ, "False", reason, msg} }
	want := []namespaceCondition{
		ok("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
		ok("NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
		ok("NamespaceDeletionContentFailure", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
		{"NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"},
		{"NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/x in 1 resource instances"},
	}
	var ns api.Object
	testwait.Until(t, 5*time.Second, "the namespace's conditions", func() bool {
		ns = req("GET", nss+"/team", "").obj
		return len(conditionsOf(ns)) == len(want)
	})
	if d := cmp.Diff(want, conditionsOf(ns)); d != "" {
		t.Errorf("conditions (-want +got):\n%s", d)
	}
	if at(ns, "status.phase") != "Terminating" || !cmp.Equal(at(ns, "spec.finalizers"), []any{"kubernetes"}) {
		t.Errorf("namespace with content left: %v, want Terminating, not finalized", ns)
	}
	if c := req("GET", cms+"/free", "").code; c != http.StatusNotFound {
		t.Errorf("a configmap without finalizers: %d, want deleted", c)
	}
	if held := req("GET", cms+"/held", "").obj; held.MetaString("deletionTimestamp") == "" {
		t.Errorf("the held configmap: %v, want it marked", held)
	}

	late := req("POST", cms, `{"metadata":{"generateName":"late-"}}`)
	wantRefusal := api.Object{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "reason": "Forbidden", "code": json.Number("403"),
		"message": `configmaps "late-" is forbidden: unable to create new content in namespace team because it is being terminated`,
		"details": map[string]any{"name": "late-", "kind": "configmaps", "causes": []any{map[string]any{
			"reason": "NamespaceTerminating", "message": "namespace team is being terminated", "field": "metadata.namespace"}}}}
	if d := cmp.Diff(wantRefusal, late.obj, cmpopts.EquateEmpty()); late.code != http.StatusForbidden || d != "" {
		t.Errorf("create in a Terminating namespace: %d (-want +got):\n%s", late.code, d)
	}

	if got := req("PATCH", cms+"/held", `{"metadata":{"finalizers":null}}`); got.code != http.StatusOK {
		t.Fatalf("finalizer removed: %d %v", got.code, got.obj)
	}
	// The controller looks again after kube's estimate (8 s) or at the
	// namespace's next change: make one.
	req("PATCH", nss+"/team", `{"metadata":{"labels":{"touched":"yes"}}}`)
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		return req("GET", nss+"/team", "").code == http.StatusNotFound
	})
}

// TestNamespaceFinalize: the finalize subresource (kube's FinalizeREST)
// serves update only, writes spec.finalizers (and metadata), keeps the
// status, checks kube's finalizer names; an update of the namespace itself
// keeps spec.finalizers. Emptying them deletes a Terminating namespace;
// a namespace whose spec.finalizers were empty before its DELETE is
// marked and left, as kube's storage and controller leave it, and a
// second DELETE deletes it.
func TestNamespaceFinalize(t *testing.T) {
	req, _ := deleteServer(t)
	const nss = "/api/v1/namespaces"
	made := req("POST", nss, `{"metadata":{"name":"fin"},"spec":{"finalizers":["example.com/ns"]}}`).obj
	if want := []any{"example.com/ns", "kubernetes"}; !cmp.Equal(at(made, "spec.finalizers"), want) {
		t.Errorf("created with spec.finalizers %v, want %v", at(made, "spec.finalizers"), want)
	}
	if got := req("PUT", nss+"/fin", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin"},"spec":{}}`); got.code != http.StatusOK ||
		!cmp.Equal(at(got.obj, "spec.finalizers"), at(made, "spec.finalizers")) {
		t.Errorf("update of the namespace: %d %v, want spec.finalizers kept", got.code, got.obj)
	}
	const bad = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin"},"spec":{"finalizers":["example.com/ns","foo"]}}`
	got := req("PUT", nss+"/fin/finalize", bad)
	if want := `Namespace "fin" is invalid: spec.finalizers[1]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`; got.code != http.StatusUnprocessableEntity || got.obj["message"] != want {
		t.Errorf("finalize with a bad name: %d %v, want 422 %q", got.code, got.obj["message"], want)
	}
	for _, m := range []string{"GET", "PATCH"} {
		if got := req(m, nss+"/fin/finalize", `{}`); got.code != http.StatusMethodNotAllowed {
			t.Errorf("%s finalize: %d, want 405", m, got.code)
		}
	}

	if got := req("DELETE", nss+"/fin", ""); got.code != http.StatusOK {
		t.Fatalf("delete: %d %v", got.code, got.obj)
	}
	testwait.Until(t, 5*time.Second, "the controller's finalizer removed", func() bool {
		return cmp.Equal(at(req("GET", nss+"/fin", "").obj, "spec.finalizers"), []any{"example.com/ns"})
	})
	const done = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin","labels":{"a":"b"}},"spec":{"finalizers":[]},"status":{"phase":"Active"}}`
	got = req("PUT", nss+"/fin/finalize", done)
	if got.code != http.StatusOK || at(got.obj, "status.phase") != "Terminating" || at(got.obj, "metadata.labels.a") != "b" || at(got.obj, "spec.finalizers") != nil {
		t.Errorf("finalize: %d %v, want the namespace with no spec.finalizers, the label, its status kept", got.code, got.obj)
	}
	if c := req("GET", nss+"/fin", "").code; c != http.StatusNotFound {
		t.Errorf("finalized namespace: %d, want deleted", c)
	}

	req("POST", nss, `{"metadata":{"name":"bare"}}`)
	if got := req("PUT", nss+"/bare/finalize", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bare"}}`); got.code != http.StatusOK || at(got.obj, "status.phase") != "Active" {
		t.Fatalf("finalize an Active namespace: %d %v, want it kept", got.code, got.obj)
	}
	first := req("DELETE", nss+"/bare", "")
	if first.code != http.StatusOK || at(first.obj, "status.phase") != "Terminating" {
		t.Fatalf("first delete: %d %v, want it marked", first.code, first.obj)
	}
	// The controller takes namespaces in the order they changed: once a
	// namespace deleted after bare is gone, it has looked at bare.
	req("POST", nss, `{"metadata":{"name":"probe"}}`)
	req("DELETE", nss+"/probe", "")
	testwait.Until(t, 5*time.Second, "the namespace deleted after bare gone", func() bool {
		return req("GET", nss+"/probe", "").code == http.StatusNotFound
	})
	if got := req("GET", nss+"/bare", ""); got.code != http.StatusOK || at(got.obj, "status.phase") != "Terminating" {
		t.Errorf("bare after the controller's look: %d %v, want it left Terminating", got.code, got.obj)
	}
	if again := req("DELETE", nss+"/bare", ""); again.code != http.StatusOK || req("GET", nss+"/bare", "").code != http.StatusNotFound {
		t.Errorf("second delete: %d %v, want the namespace deleted", again.code, again.obj)
	}
}

// TestNamespaceDeletionPodsFirst: as kube's controller, a namespace's pods
// are deleted first and, while one remains (a finalizer holds it), nothing
// else is, the conditions recording only errors (none: every one fine);
// once the pod goes, the rest and the namespace go.
func TestNamespaceDeletionPodsFirst(t *testing.T) {
	req, _ := deleteServer(t)
	const nss, ns = "/api/v1/namespaces", "/api/v1/namespaces/team"
	req("POST", nss, `{"metadata":{"name":"team"}}`)
	req("POST", ns+"/configmaps", `{"metadata":{"name":"c"}}`)
	// The pod's ServiceAccount admission waits for the namespace's default
	// account, which the server makes after the namespace.
	testwait.Until(t, 5*time.Second, "the pod created", func() bool {
		pod := `{"metadata":{"name":"p","finalizers":["example.com/x"]},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
		return req("POST", ns+"/pods", pod).code == http.StatusCreated
	})
	req("DELETE", ns, "")
	var conds []namespaceCondition
	testwait.Until(t, 5*time.Second, "the namespace's conditions", func() bool {
		conds = conditionsOf(req("GET", ns, "").obj)
		return len(conds) == 5
	})
	for _, c := range conds {
		if c.Status != "False" {
			t.Errorf("condition while a pod remains: %+v, want none True", c)
		}
	}
	if pod := req("GET", ns+"/pods/p", "").obj; pod.MetaString("deletionTimestamp") == "" {
		t.Errorf("the held pod: %v, want it marked", pod)
	}
	if c := req("GET", ns+"/configmaps/c", "").code; c != http.StatusOK {
		t.Errorf("the configmap while a pod remains: %d, want it kept", c)
	}
	// A subresource's create is refused too: kube's NamespaceLifecycle
	// admits every create in the namespace.
	for sub, body := range map[string]string{
		"binding":  `{"metadata":{"name":"p"},"target":{"name":"n1"}}`,
		"eviction": `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`,
	} {
		got := req("POST", ns+"/pods/p/"+sub, body)
		if want := `pods "p" is forbidden: unable to create new content in namespace team because it is being terminated`; got.code != http.StatusForbidden || got.obj["message"] != want {
			t.Errorf("%s: %d %v, want 403 %q", sub, got.code, got.obj["message"], want)
		}
	}

	req("PATCH", ns+"/pods/p", `{"metadata":{"finalizers":null}}`)
	req("PATCH", ns, `{"metadata":{"labels":{"touched":"yes"}}}`) // the controller looks again
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		return req("GET", ns, "").code == http.StatusNotFound
	})
	if c := req("GET", ns+"/configmaps/c", "").code; c != http.StatusNotFound {
		t.Errorf("the configmap after its namespace: %d, want deleted", c)
	}
}

// TestTokenRequestTerminatingNamespace: a TokenRequest in a Terminating
// namespace is refused by kube's NamespaceLifecycle, before the account
// is read; in a namespace that does not exist it is the namespace's 404.
func TestTokenRequestTerminatingNamespace(t *testing.T) {
	s := newTokenServer(t, 0)
	s.as(t, "admin", "POST", "/api/v1/namespaces", `{"metadata":{"name":"team","finalizers":["example.com/hold"]}}`)
	s.as(t, "admin", "DELETE", "/api/v1/namespaces/team", "")
	for _, c := range []struct {
		ns   string
		code int
		want string
	}{
		{"team", http.StatusForbidden, `serviceaccounts "default" is forbidden: unable to create new content in namespace team because it is being terminated`},
		{"nowhere", http.StatusNotFound, `namespaces "nowhere" not found`},
	} {
		got := s.as(t, "admin", "POST", "/api/v1/namespaces/"+c.ns+"/serviceaccounts/default/token", `{"spec":{}}`)
		if got.code != c.code || got.obj["message"] != c.want {
			t.Errorf("token in namespace %s: %d %v, want %d %q", c.ns, got.code, got.obj["message"], c.code, c.want)
		}
	}
}

// TestNamespaceDeletionUndecodable: a stored value of the namespace that
// cannot be decoded, which no list shows, goes with the namespace rather
// than outliving it under its name.
func TestNamespaceDeletionUndecodable(t *testing.T) {
	store := newMemoryStore(t)
	ts := quietServer(t, store)
	req := func(method, path, body string) response {
		return exchange(t, ts, method, path, http.Header{"Content-Type": {mediaJSON}}, body)
	}
	req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`)
	if _, err := store.Create(t.Context(), builtinKey(t, "configmaps", "team", "broken"), []byte(`{"metadata":`)); err != nil {
		t.Fatal(err)
	}
	req("DELETE", "/api/v1/namespaces/team", "")
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		return req("GET", "/api/v1/namespaces/team", "").code == http.StatusNotFound
	})
	if kv, err := store.Get(t.Context(), builtinKey(t, "configmaps", "team", "broken")); err == nil {
		t.Errorf("the undecodable configmap outlived its namespace: %s", kv.Value)
	}
}

// TestNamespaceStatusPhase: a status write keeps a namespace's phase to
// its deletion state, as kube's ValidateNamespaceStatusUpdate.
func TestNamespaceStatusPhase(t *testing.T) {
	req, _ := deleteServer(t)
	const nss = "/api/v1/namespaces"
	req("POST", nss, `{"metadata":{"name":"team","finalizers":["example.com/hold"]}}`)
	status := func(phase string) string {
		return `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},"status":{"phase":"` + phase + `"}}`
	}
	const active = "Namespace \"team\" is invalid: status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
	if got := req("PUT", nss+"/team/status", status("Terminating")); got.code != http.StatusUnprocessableEntity || got.obj["message"] != active {
		t.Errorf("Terminating while not deleted: %d %v, want 422 %q", got.code, got.obj["message"], active)
	}
	req("DELETE", nss+"/team", "")
	const terminating = "Namespace \"team\" is invalid: status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty"
	if got := req("PUT", nss+"/team/status", status("Active")); got.code != http.StatusUnprocessableEntity || got.obj["message"] != terminating {
		t.Errorf("Active while deleted: %d %v, want 422 %q", got.code, got.obj["message"], terminating)
	}
}

// TestCreateRacingNamespaceDeletion: a create that passed its namespace's
// check and is held (here by a validating webhook) while the namespace is
// deleted is refused, not stored under a namespace that no longer exists.
func TestCreateRacingNamespaceDeletion(t *testing.T) {
	req, _ := deleteServer(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	allow := admissionHandler(func(map[string]any) map[string]any { return map[string]any{"allowed": true} })
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		allow(w, r)
	}))
	t.Cleanup(hook.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before hook.Close: cleanups run last first
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	config := fmt.Sprintf(`{"metadata":{"name":"hold"},"webhooks":[{"name":"hold.example.com","clientConfig":{"url":%q,"caBundle":%q},
		"sideEffects":"None","admissionReviewVersions":["v1"],"objectSelector":{"matchLabels":{"hold":"yes"}},
		"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`, hook.URL, ca)
	if got := req("POST", validatingHook, config); got.code != http.StatusCreated {
		t.Fatalf("webhook configuration: %d %v", got.code, got.obj)
	}
	const nss = "/api/v1/namespaces"
	req("POST", nss, `{"metadata":{"name":"team"}}`)

	created := make(chan response, 1)
	go func() {
		created <- req("POST", nss+"/team/configmaps", `{"metadata":{"name":"late","labels":{"hold":"yes"}}}`)
	}()
	<-entered
	req("DELETE", nss+"/team", "")
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		return req("GET", nss+"/team", "").code == http.StatusNotFound
	})
	unblock()
	if got := <-created; got.code != http.StatusNotFound || got.obj["message"] != `namespaces "team" not found` {
		t.Errorf("create held past its namespace's deletion: %d %v, want 404 for the namespace", got.code, got.obj)
	}
	if got := req("GET", nss+"/team/configmaps/late", ""); got.code != http.StatusNotFound {
		t.Errorf("the held create was stored: %d %v", got.code, got.obj)
	}
}

// TestNamespaceDeletionCoalesces: a burst of writes to a Terminating
// namespace makes a sync or two after kube's grace period, not one each:
// each sync lists and deletes every resource of the namespace.
func TestNamespaceDeletionCoalesces(t *testing.T) {
	const grace, writes = time.Second, 100
	s, ts := quietServerWith(t, Config{Storage: newMemoryStore(t), NamespaceDeletionGracePeriod: grace})
	req := requester(t, ts)
	const nss = "/api/v1/namespaces"
	req("POST", nss, `{"metadata":{"name":"team"}}`)
	req("POST", nss+"/team/configmaps", `{"metadata":{"name":"held","finalizers":["example.com/x"]}}`)
	req("DELETE", nss+"/team", "")
	testwait.Until(t, 5*time.Second, "the namespace's conditions", func() bool {
		return len(conditionsOf(req("GET", nss+"/team", "").obj)) == len(namespaceConditions)
	})
	syncs := func() float64 { return scrape(t, s)[`workqueue_work_duration_seconds_count{name="namespace"}`] }
	before := syncs()
	for i := range writes {
		if got := req("PATCH", nss+"/team", fmt.Sprintf(`{"metadata":{"labels":{"n":"%d"}}}`, i)); got.code != http.StatusOK {
			t.Fatalf("label: %d %v", got.code, got.obj)
		}
	}
	// The burst's sync runs a grace period after its first write; then
	// count. The first burst's writes can be a grace period apart on a
	// slow machine: a sync each time.
	testwait.Until(t, 5*time.Second, "a sync after the writes", func() bool { return syncs() > before })
	if n := syncs() - before; n > writes/10 {
		t.Errorf("%v syncs for %d writes to a Terminating namespace, want them coalesced", n, writes)
	}
}

// TestNamespaceDeletionConcurrentWrites: the controller's status and
// finalize writes are not preconditioned on the namespace it read: a
// write in between (a label, the garbage collector's) makes it read
// again, not fail with a conflict.
func TestNamespaceDeletionConcurrentWrites(t *testing.T) {
	store := &racingStore{Interface: newMemoryStore(t), key: builtinKey(t, "namespaces", "", "team")}
	logged := &warnings{}
	_, ts := quietServerWith(t, Config{Storage: store, NamespaceDeletionGracePeriod: testNamespaceGrace, Logger: slog.New(logged)})
	req := requester(t, ts)
	req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`)
	req("DELETE", "/api/v1/namespaces/team", "")
	store.races.Store(2) // the conditions' write, twice; the finalize deletes
	testwait.Until(t, 5*time.Second, "the namespace deleted", func() bool {
		return req("GET", "/api/v1/namespaces/team", "").code == http.StatusNotFound
	})
	if n := store.races.Load(); n > 0 {
		t.Errorf("the conditions' write gave up after %d races, want it to read again each time", 2-n)
	}
	if w := logged.list(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
}

// TestDefaultAccountsTerminatingNamespace: a namespace marked after the
// default-accounts controller read it refuses the account with kube's
// NamespaceTerminating cause, which the controller skips quietly, as
// kube's serviceaccounts controller does.
func TestDefaultAccountsTerminatingNamespace(t *testing.T) {
	logged := &warnings{}
	s, ts := quietServerWith(t, Config{Storage: newMemoryStore(t), NamespaceDeletionGracePeriod: time.Hour, Logger: slog.New(logged)})
	req := requester(t, ts)
	read := req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`).obj
	testwait.Until(t, 5*time.Second, "the default account", func() bool {
		return req("GET", "/api/v1/namespaces/team/serviceaccounts/default", "").code == http.StatusOK
	})
	req("DELETE", "/api/v1/namespaces/team", "")
	req("DELETE", "/api/v1/namespaces/team/serviceaccounts/default", "") // not made again: the namespace is marked
	value, err := json.Marshal(read)
	if err != nil {
		t.Fatal(err)
	}
	s.accounts.ensureIfActive(t.Context(), value) // as read before the mark
	if got := req("GET", "/api/v1/namespaces/team/serviceaccounts/default", ""); got.code != http.StatusNotFound {
		t.Errorf("default account in a Terminating namespace: %d %v", got.code, got.obj)
	}
	if w := logged.list(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
}

// racingStore makes another write of key, the same value at a new
// revision, just before each of its next races updates of key.
type racingStore struct {
	storage.Interface
	key   string
	races atomic.Int32
}

func (r *racingStore) Update(ctx context.Context, key string, rev int64, value []byte) (int64, error) {
	if key == r.key && r.races.Load() > 0 {
		r.races.Add(-1)
		if kv, err := r.Interface.Get(ctx, key); err == nil {
			_, _ = r.Interface.Update(ctx, key, kv.ModRevision, kv.Value)
		}
	}
	return r.Interface.Update(ctx, key, rev, value)
}

// warnings records the warnings and errors a server logs.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnings) WithGroup(string) slog.Handler                { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, b.String())
	return nil
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// TestNamespaceDeletionPages: content beyond one page of the controller's
// DeleteCollection is deleted too, and what finalizers hold is counted
// over every page.
func TestNamespaceDeletionPages(t *testing.T) {
	req, _ := deleteServer(t)
	const nss, n = "/api/v1/namespaces", deleteCollectionPage + 2
	req("POST", nss, `{"metadata":{"name":"team"}}`)
	for i := range n {
		if got := req("POST", nss+"/team/configmaps", fmt.Sprintf(`{"metadata":{"name":"c%d","finalizers":["example.com/x"]}}`, i)); got.code != http.StatusCreated {
			t.Fatalf("create: %d %v", got.code, got.obj)
		}
	}
	req("DELETE", nss+"/team", "")
	want := fmt.Sprintf("Some resources are remaining: configmaps. has %d resource instances", n)
	testwait.Until(t, 10*time.Second, "the namespace's conditions", func() bool {
		return slices.Contains(conditionsOf(req("GET", nss+"/team", "").obj), namespaceCondition{"NamespaceContentRemaining", "True", "SomeResourcesRemain", want})
	})
	items, _ := req("GET", nss+"/team/configmaps", "").obj["items"].([]any)
	if marked := slices.DeleteFunc(items, func(it any) bool { return api.Object(it.(map[string]any)).MetaString("deletionTimestamp") == "" }); len(marked) != n {
		t.Errorf("%d of %d configmaps marked for deletion, want all", len(marked), n)
	}
}

// TestNamespaceChurnLeavesNothing: namespaces created and deleted in
// quick succession leave nothing behind them, not even the default
// account the server makes in each. A race test: without the registry's
// second namespace check and the controller's grace period it failed
// about 1 run in 10 (TestCreateRacingNamespaceDeletion and
// TestNamespaceDeletionCoalesces fail every time).
func TestNamespaceChurnLeavesNothing(t *testing.T) {
	req, _ := deleteServer(t)
	const n = 200
	for i := range n {
		req("POST", "/api/v1/namespaces", fmt.Sprintf(`{"metadata":{"name":"churn%d"}}`, i))
		req("DELETE", fmt.Sprintf("/api/v1/namespaces/churn%d", i), "")
	}
	testwait.Until(t, 10*time.Second, "the namespaces deleted", func() bool {
		items, _ := req("GET", "/api/v1/namespaces", "").obj["items"].([]any)
		return !slices.ContainsFunc(items, func(ns any) bool { return strings.HasPrefix(api.Object(ns.(map[string]any)).Name(), "churn") })
	})
	// The server makes each namespace's account in the order the
	// namespaces changed: once a later namespace has its account, every
	// create for those before it has been made or refused.
	req("POST", "/api/v1/namespaces", `{"metadata":{"name":"last"}}`)
	testwait.Until(t, 10*time.Second, "the last namespace's account", func() bool {
		return req("GET", "/api/v1/namespaces/last/serviceaccounts/default", "").code == http.StatusOK
	})
	for _, p := range []string{"/api/v1/serviceaccounts", "/api/v1/configmaps", "/api/v1/secrets"} {
		items, _ := req("GET", p, "").obj["items"].([]any)
		for _, it := range items {
			if obj := api.Object(it.(map[string]any)); strings.HasPrefix(obj.Namespace(), "churn") {
				t.Errorf("%s %s/%s outlived its namespace", p, obj.Namespace(), obj.Name())
			}
		}
	}
}
