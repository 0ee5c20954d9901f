package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
)

// deleteServer starts a server on a memory store and returns a function
// making one request to it and one returning the store's current revision.
func deleteServer(t *testing.T) (func(method, path, body string) response, func() string) {
	t.Helper()
	store := newMemoryStore(t)
	req := requester(t, quietServer(t, store))
	rev := func() string {
		t.Helper()
		return currentRevision(t, store)
	}
	return req, rev
}

// requester returns a function making one request to ts: JSON, or a
// merge patch.
func requester(t *testing.T, ts *httptest.Server) func(method, path, body string) response {
	return func(method, path, body string) response {
		t.Helper()
		ct := mediaJSON
		if method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		return exchange(t, ts, method, path, http.Header{"Content-Type": {ct}}, body)
	}
}

// quietServer starts a server that writes nothing of its own once it
// has returned: it holds the controller Lease already and renews it only
// hourly, so that the store's revision moves only with the test's writes.
// Its namespace controller waits testNamespaceGrace after a change.
func quietServer(t *testing.T, store storage.Interface) *httptest.Server {
	t.Helper()
	_, ts := quietServerWith(t, Config{Storage: store, NamespaceDeletionGracePeriod: testNamespaceGrace})
	return ts
}

// testNamespaceGrace is the namespace controller's wait in tests: short,
// since they wait for what it does.
const testNamespaceGrace = 10 * time.Millisecond

// quietServerWith is quietServer with cfg (its Storage set), returning
// the server too.
func quietServerWith(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	hour := time.Hour
	cfg.Election = leader.Config{LeaseDuration: 3 * hour, RenewDeadline: 2 * hour, RetryPeriod: hour}
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	waitLeaseHeld(t, s)
	return s, ts
}

// waitLeaseHeld waits until the controller Lease of s's store is held.
func waitLeaseHeld(t *testing.T, s *Server) {
	t.Helper()
	leases, _ := s.catalog.Get("coordination.k8s.io", "v1", "leases")
	testwait.UntilNil(t, 30*time.Second, "the controller Lease to be held", func() error {
		lease, err := s.registry.Get(t.Context(), leases, "kube-system", ControllerLease)
		if err == nil && lease["spec"].(map[string]any)["holderIdentity"] == nil {
			err = fmt.Errorf("lease %v", lease)
		}
		return err
	})
}

func currentRevision(t *testing.T, store storage.Interface) string {
	t.Helper()
	r, err := store.CurrentRevision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(r, 10)
}

// TestDeleteAnswers checks a DELETE's answer against kube-apiserver's
// registry: a Status (Success; details: name, group, resource as kind, uid)
// for kinds whose storage leaves ReturnDeletedObject false
// (generic/registry/store.go finalizeDelete), the object as stored at the
// delete's revision for the others (etcd3 store's conditionalDelete).
func TestDeleteAnswers(t *testing.T) {
	req, rev := deleteServer(t)
	for _, tc := range []struct{ path, body, group, resource string }{
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a"}}`, "", "configmaps"},
		{"/api/v1/namespaces/default/secrets", `{"metadata":{"name":"a"}}`, "", "secrets"},
		{"/apis/coordination.k8s.io/v1/namespaces/default/leases", `{"metadata":{"name":"a"}}`, "coordination.k8s.io", "leases"},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"metadata":{"name":"a"}}`, "rbac.authorization.k8s.io", "clusterroles"},
	} {
		created := req("POST", tc.path, tc.body)
		if created.code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", tc.path, created.code, created.obj)
		}
		got := req("DELETE", tc.path+"/a", "")
		want := api.Object{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
			"details": map[string]any{"name": "a", "kind": tc.resource, "uid": created.obj.UID()}}
		if tc.group != "" {
			want["details"].(map[string]any)["group"] = tc.group
		}
		if got.code != http.StatusOK {
			t.Errorf("delete %s: %d", tc.path, got.code)
		}
		if d := cmp.Diff(want, got.obj); d != "" {
			t.Errorf("delete %s (-want +got):\n%s", tc.path, d)
		}
	}

	const sas = "/api/v1/namespaces/default/serviceaccounts"
	created := req("POST", sas, `{"metadata":{"name":"robot"}}`)
	got := req("DELETE", sas+"/robot", "")
	if got.code != http.StatusOK || got.obj["kind"] != "ServiceAccount" || got.obj.UID() != created.obj.UID() {
		t.Fatalf("delete serviceaccount: %d %v", got.code, got.obj)
	}
	if got.obj.ResourceVersion() != rev() || got.obj.ResourceVersion() == created.obj.ResourceVersion() {
		t.Errorf("deleted serviceaccount at resourceVersion %s, want the delete's %s", got.obj.ResourceVersion(), rev())
	}

	team := req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`)
	got = req("DELETE", "/api/v1/namespaces/team", "")
	// The answer is the namespace marked at the delete's revision; the
	// leader finalizes it at once after (a later revision), so the store's
	// last revision cannot be compared with.
	marked, _ := strconv.ParseInt(got.obj.ResourceVersion(), 10, 64)
	made, _ := strconv.ParseInt(team.obj.ResourceVersion(), 10, 64)
	if got.code != http.StatusOK || marked <= made || got.obj.MetaString("deletionTimestamp") == "" ||
		got.obj["status"].(map[string]any)["phase"] != "Terminating" {
		t.Errorf("delete namespace: %d %v, want Terminating at a revision after its create's %d", got.code, got.obj, made)
	}
}

// TestDeleteDryRun: a dry-run delete, asked in the query or in the body
// (as client-go sends it), answers as a delete and leaves the object; the
// object answered is as stored, at its own revision (DryRunnableStorage).
func TestDeleteDryRun(t *testing.T) {
	req, _ := deleteServer(t)
	const cms, sas = "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/serviceaccounts"
	req("POST", cms, `{"metadata":{"name":"a"}}`)
	sa := req("POST", sas, `{"metadata":{"name":"robot"}}`)
	for _, d := range []struct{ query, body string }{{"?dryRun=All", ""}, {"", `{"dryRun":["All"]}`}} {
		if got := req("DELETE", cms+"/a"+d.query, d.body); got.code != http.StatusOK || got.obj["status"] != "Success" {
			t.Errorf("dry-run delete %+v: %d %v", d, got.code, got.obj)
		}
		got := req("DELETE", sas+"/robot"+d.query, d.body)
		if got.code != http.StatusOK || got.obj.ResourceVersion() != sa.obj.ResourceVersion() {
			t.Errorf("dry-run delete %+v: %d %v, want the object at %s", d, got.code, got.obj, sa.obj.ResourceVersion())
		}
	}
	if req("GET", cms+"/a", "").code != http.StatusOK || req("GET", sas+"/robot", "").code != http.StatusOK {
		t.Fatal("a dry-run delete deleted")
	}
}

// TestDeleteRejects checks the 409 and 422 answers' messages against
// kube-apiserver's: rest.BeforeDelete's preconditions (naming the kind),
// the namespace storage's own, and ValidateDeleteOptions.
func TestDeleteRejects(t *testing.T) {
	req, _ := deleteServer(t)
	cm := req("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a"}}`).obj
	ns := req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`).obj
	const invalid = `DeleteOptions.meta.k8s.io "" is invalid: `
	for _, tc := range []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"uid", "/api/v1/namespaces/default/configmaps/a", `{"preconditions":{"uid":"x"}}`, http.StatusConflict,
			`Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (x) does not match the UID in record (` + cm.UID() + `). The object might have been deleted and then recreated`},
		{"resourceVersion", "/api/v1/namespaces/default/configmaps/a", `{"preconditions":{"resourceVersion":"1"}}`, http.StatusConflict,
			`Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (` + cm.ResourceVersion() + `). The object might have been modified`},
		{"namespace uid", "/api/v1/namespaces/team", `{"preconditions":{"uid":"x"}}`, http.StatusConflict,
			`Operation cannot be fulfilled on namespaces "team": Precondition failed: UID in precondition: x, UID in object meta: ` + ns.UID()},
		{"policy", "/api/v1/namespaces/default/configmaps/a", `{"propagationPolicy":"Never"}`, http.StatusUnprocessableEntity,
			invalid + `propagationPolicy: Unsupported value: "Never": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"policy in query", "/api/v1/namespaces/default/configmaps/a?propagationPolicy=Never", "", http.StatusUnprocessableEntity,
			invalid + `propagationPolicy: Unsupported value: "Never": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"orphan and policy", "/api/v1/namespaces/default/configmaps/a", `{"propagationPolicy":"Orphan","orphanDependents":true}`, http.StatusUnprocessableEntity,
			invalid + `propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`},
		{"dryRun", "/api/v1/namespaces/default/configmaps/a", `{"dryRun":["Some"]}`, http.StatusUnprocessableEntity,
			invalid + `dryRun: Unsupported value: ["Some"]: supported values: "All"`},
	} {
		got := req("DELETE", tc.path, tc.body)
		if got.code != tc.code || got.obj["message"] != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, got.code, got.obj["message"], tc.code, tc.msg)
		}
	}
	if req("GET", "/api/v1/namespaces/default/configmaps/a", "").code != http.StatusOK {
		t.Fatal("a rejected delete deleted")
	}
}

// TestDeleteFinalizers: an object with finalizers is answered as marked,
// 202 only for orphanDependents=false (kube's delete handler); the update
// that removes the last finalizer answers the updated object, unstored
// (store.deleteWithoutFinalizers): no finalizers, still marked, at the
// revision it was read at.
func TestDeleteFinalizers(t *testing.T) {
	req, rev := deleteServer(t)
	const cm = "/api/v1/namespaces/default/configmaps/held"
	req("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)
	got := req("DELETE", cm, "")
	if got.code != http.StatusOK || got.obj.MetaString("deletionTimestamp") == "" || got.obj["kind"] != "ConfigMap" {
		t.Fatalf("delete: %d %v, want the object marked", got.code, got.obj)
	}
	if got := req("DELETE", cm, `{"orphanDependents":false}`); got.code != http.StatusAccepted || got.obj["kind"] != "ConfigMap" {
		t.Errorf("delete with orphanDependents=false: %d %v, want 202 and the object", got.code, got.obj)
	}
	read := rev()
	got = req("PATCH", cm, `{"metadata":{"finalizers":null}}`)
	if got.code != http.StatusOK || got.obj.ResourceVersion() != read || len(finalizers(got.obj)) != 0 || got.obj.MetaString("deletionTimestamp") == "" {
		t.Errorf("last finalizer removed: %d %v, want the patched object at revision %s", got.code, got.obj, read)
	}
	if rev() == read {
		t.Error("the last finalizer's removal deleted nothing")
	}
	if got := req("GET", cm, ""); got.code != http.StatusNotFound {
		t.Errorf("GET after the last finalizer: %d", got.code)
	}
}

func finalizers(obj api.Object) []any {
	f, _ := obj.Metadata()["finalizers"].([]any)
	return f
}

// TestDeleteCollectionAnswer: kube's DeleteCollection answers the list it
// read before deleting, items at their own revisions.
func TestDeleteCollectionAnswer(t *testing.T) {
	req, _ := deleteServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	a := req("POST", cms, `{"metadata":{"name":"a","labels":{"x":"1"}}}`).obj
	req("POST", cms, `{"metadata":{"name":"b"}}`)
	before := req("GET", cms+"?labelSelector=x", "").obj
	got := req("DELETE", cms+"?labelSelector=x", "")
	if got.code != http.StatusOK {
		t.Fatalf("deletecollection: %d %v", got.code, got.obj)
	}
	// Items, kind and apiVersion: the list's resourceVersion moves with the
	// controller Lease's renewals.
	delete(before, "metadata")
	delete(got.obj, "metadata")
	if d := cmp.Diff(before, got.obj); d != "" {
		t.Errorf("deletecollection answer (-list before +got):\n%s", d)
	}
	if items := got.obj["items"].([]any); len(items) != 1 || api.Object(items[0].(map[string]any)).ResourceVersion() != a.ResourceVersion() {
		t.Errorf("items: %v", items)
	}
	if req("GET", cms+"/a", "").code != http.StatusNotFound || req("GET", cms+"/b", "").code != http.StatusOK {
		t.Error("deletecollection deleted the wrong objects")
	}
}

// TestDeleteDefinitionAnswer: kube's definition storage answers a first
// delete with the definition marked (deletionTimestamp, the cleanup
// finalizer, condition Terminating); listwatch deletes it at once.
func TestDeleteDefinitionAnswer(t *testing.T) {
	req, _ := deleteServer(t)
	if got := req("POST", crdsPath, widgetCRD("")); got.code != http.StatusCreated {
		t.Fatalf("create: %d %v", got.code, got.obj)
	}
	got := req("DELETE", crdsPath+"/widgets.example.com", "")
	if got.code != http.StatusOK || got.obj["kind"] != "CustomResourceDefinition" || got.obj.MetaString("deletionTimestamp") == "" {
		t.Fatalf("delete: %d %v", got.code, got.obj)
	}
	if d := cmp.Diff([]any{"customresourcecleanup.apiextensions.k8s.io"}, finalizers(got.obj)); d != "" {
		t.Errorf("finalizers (-want +got):\n%s", d)
	}
	var terminating bool
	for _, c := range got.obj["status"].(map[string]any)["conditions"].([]any) {
		c := c.(map[string]any)
		terminating = terminating || c["type"] == "Terminating" && c["status"] == "True" && c["reason"] == "InstanceDeletionPending"
	}
	if !terminating {
		t.Errorf("no Terminating condition: %v", got.obj["status"])
	}
	if got := req("GET", crdsPath+"/widgets.example.com", ""); got.code != http.StatusNotFound {
		t.Errorf("GET after delete: %d", got.code)
	}
}

// TestDryRunRevisions: kube's DryRunnableStorage answers a dry-run create
// with the object as sent (no resourceVersion) and a dry-run update or
// patch at the object's own revision.
func TestDryRunRevisions(t *testing.T) {
	req, _ := deleteServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if got := req("POST", cms+"?dryRun=All", `{"metadata":{"name":"a"}}`); got.code != http.StatusCreated || got.obj.ResourceVersion() != "" {
		t.Errorf("dry-run create: %d %v, want no resourceVersion", got.code, got.obj)
	}
	cm := req("POST", cms, `{"metadata":{"name":"a"}}`).obj
	req("POST", cms, `{"metadata":{"name":"later"}}`) // the store moves past a's revision
	if got := req("PUT", cms+"/a?dryRun=All", `{"metadata":{"name":"a"},"data":{"k":"v"}}`); got.code != http.StatusOK || got.obj.ResourceVersion() != cm.ResourceVersion() {
		t.Errorf("dry-run update: %d %v, want resourceVersion %s", got.code, got.obj, cm.ResourceVersion())
	}
	if got := req("PATCH", cms+"/a?dryRun=All", `{"data":{"k":"v"}}`); got.code != http.StatusOK || got.obj.ResourceVersion() != cm.ResourceVersion() {
		t.Errorf("dry-run patch: %d %v, want resourceVersion %s", got.code, got.obj, cm.ResourceVersion())
	}
}

// TestNamespacesNoDeleteCollection: kube's namespace storage has no
// DeleteCollection, so discovery lists no such verb and its router
// answers 405.
func TestNamespacesNoDeleteCollection(t *testing.T) {
	req, _ := deleteServer(t)
	req("POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`)
	got := req("DELETE", "/api/v1/namespaces", "")
	if got.code != http.StatusMethodNotAllowed || got.obj["message"] != "the server does not allow this method on the requested resource" {
		t.Errorf("deletecollection of namespaces: %d %v", got.code, got.obj)
	}
	if req("GET", "/api/v1/namespaces/team", "").code != http.StatusOK {
		t.Error("a namespace was deleted")
	}
	for _, r := range req("GET", "/api/v1", "").obj["resources"].([]any) {
		if r := r.(map[string]any); r["name"] == "namespaces" {
			want := []any{"create", "delete", "get", "list", "patch", "update", "watch"}
			if d := cmp.Diff(want, r["verbs"]); d != "" {
				t.Errorf("namespaces verbs (-want +got):\n%s", d)
			}
		}
	}
}
