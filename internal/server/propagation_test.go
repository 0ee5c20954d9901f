package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
)

// deleteStep is one DELETE and what it must leave: with fins nil, the
// object gone and a Status answered; else the object stored and answered
// marked (deletionTimestamp, deletionGracePeriodSeconds 0), held by fins.
type deleteStep struct {
	options string // a DeleteOptions body, or a query beginning with "?"
	code    int
	fins    []any
}

// TestDeletePropagation checks the garbage collector's finalizers a DELETE
// sets against kube-apiserver's generic registry (store.go
// deletionFinalizersForGarbageCollection, shouldOrphanDependents,
// shouldDeleteDependentsInForeground, markAsDeleting) and its delete
// handler's status (202 only for an object left in place with
// orphanDependents=false).
func TestDeletePropagation(t *testing.T) {
	const cms = "/api/v1/namespaces/default/configmaps"
	background, foreground, orphan := `{"propagationPolicy":"Background"}`, `{"propagationPolicy":"Foreground"}`, `{"propagationPolicy":"Orphan"}`
	for _, tc := range []struct {
		name       string
		finalizers string // at create
		steps      []deleteStep
	}{
		{"no policy", "", []deleteStep{{"", http.StatusOK, nil}}},
		{"background", "", []deleteStep{{background, http.StatusOK, nil}}},
		{"foreground", "", []deleteStep{{foreground, http.StatusOK, []any{"foregroundDeletion"}}}},
		{"orphan", "", []deleteStep{{orphan, http.StatusOK, []any{"orphan"}}}},
		{"policy in the query", "", []deleteStep{{"?propagationPolicy=Foreground", http.StatusOK, []any{"foregroundDeletion"}}}},
		{"orphanDependents true", "", []deleteStep{{`{"orphanDependents":true}`, http.StatusOK, []any{"orphan"}}}},
		{"orphanDependents true in the query", "", []deleteStep{{"?orphanDependents=true", http.StatusOK, []any{"orphan"}}}},
		// false is "not orphan", not foreground: the object goes at once.
		{"orphanDependents false", "", []deleteStep{{`{"orphanDependents":false}`, http.StatusOK, nil}}},
		{"orphanDependents false, held", `["example.com/hold"]`, []deleteStep{{`{"orphanDependents":false}`, http.StatusAccepted, []any{"example.com/hold"}}}},
		{"orphan finalizer set at create", `["orphan","example.com/hold"]`, []deleteStep{{"", http.StatusOK, []any{"orphan", "example.com/hold"}}}},
		{"foreground finalizer set at create", `["foregroundDeletion"]`, []deleteStep{{"", http.StatusOK, []any{"foregroundDeletion"}}}},
		{"background drops the finalizer set at create", `["orphan"]`, []deleteStep{{background, http.StatusOK, nil}}},
		{"policy changed while deleting", "", []deleteStep{
			{orphan, http.StatusOK, []any{"orphan"}},
			{foreground, http.StatusOK, []any{"foregroundDeletion"}},
			{"", http.StatusOK, []any{"foregroundDeletion"}}, // no write
			{`{"orphanDependents":true}`, http.StatusOK, []any{"orphan"}},
			{background, http.StatusOK, nil},
		}},
		{"other finalizers kept", `["example.com/hold"]`, []deleteStep{
			{foreground, http.StatusOK, []any{"example.com/hold", "foregroundDeletion"}},
			{orphan, http.StatusOK, []any{"example.com/hold", "orphan"}},
			{background, http.StatusOK, []any{"example.com/hold"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := deleteServer(t)
			body := `{"metadata":{"name":"a"}}`
			if tc.finalizers != "" {
				body = `{"metadata":{"name":"a","finalizers":` + tc.finalizers + `}}`
			}
			if got := req("POST", cms, body); got.code != http.StatusCreated {
				t.Fatalf("create: %d %v", got.code, got.obj)
			}
			var last api.Object
			prevRV := req("GET", cms+"/a", "").obj.ResourceVersion()
			for i, s := range tc.steps {
				path, body := cms+"/a", s.options
				if strings.HasPrefix(s.options, "?") {
					path, body = path+s.options, ""
				}
				got := req("DELETE", path, body)
				if got.code != s.code {
					t.Fatalf("step %d: %d %v, want %d", i, got.code, got.obj, s.code)
				}
				if s.fins == nil {
					if got.obj["kind"] != "Status" || req("GET", cms+"/a", "").code != http.StatusNotFound {
						t.Fatalf("step %d: %v, want the object deleted", i, got.obj)
					}
					continue
				}
				checkMarked(t, got.obj, s.fins)
				if d := cmp.Diff(req("GET", cms+"/a", "").obj, got.obj); d != "" {
					t.Errorf("step %d: answer differs from what is stored (-stored +answer):\n%s", i, d)
				}
				// A write, unless the object was marked with the same finalizers
				// (the store's revision is no witness: the controller Lease is
				// renewed meanwhile).
				rv := got.obj.ResourceVersion()
				switch unchanged := last != nil && cmp.Equal(finalizers(last), s.fins); {
				case unchanged && rv != last.ResourceVersion():
					t.Errorf("step %d: resourceVersion %s, want %s (no write)", i, rv, last.ResourceVersion())
				case !unchanged && rv == prevRV:
					t.Errorf("step %d: resourceVersion %s unchanged, want a write", i, rv)
				}
				prevRV = rv
				if last != nil && got.obj.MetaString("deletionTimestamp") != last.MetaString("deletionTimestamp") {
					t.Errorf("step %d: deletionTimestamp moved from %s", i, last.MetaString("deletionTimestamp"))
				}
				last = got.obj
			}
		})
	}
}

// checkMarked fails unless obj is marked for deletion, held by fins.
func checkMarked(t *testing.T, obj api.Object, fins []any) {
	t.Helper()
	if obj.MetaString("deletionTimestamp") == "" || fmt.Sprint(obj.Metadata()["deletionGracePeriodSeconds"]) != "0" {
		t.Errorf("%v: not marked for deletion", obj.Metadata())
	}
	if d := cmp.Diff(fins, finalizers(obj)); d != "" {
		t.Errorf("finalizers (-want +got):\n%s", d)
	}
}

// TestDeletePropagationLastFinalizer: the garbage collector removes its
// finalizer by a patch once done; the object, held by nothing else, is
// then deleted (store.go ShouldDeleteDuringUpdate), and a finalizer may
// not be added to an object being deleted (ValidateObjectMetaAccessorUpdate).
func TestDeletePropagationLastFinalizer(t *testing.T) {
	req, _ := deleteServer(t)
	const cm = "/api/v1/namespaces/default/configmaps/a"
	req("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a","finalizers":["example.com/hold"]}}`)
	checkMarked(t, req("DELETE", cm, `{"propagationPolicy":"Orphan"}`).obj, []any{"example.com/hold", "orphan"})

	got := req("PATCH", cm, `{"metadata":{"finalizers":["example.com/hold","orphan","example.com/late"]}}`)
	const added = `ConfigMap "a" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/late"}`
	if got.code != http.StatusUnprocessableEntity || got.obj["message"] != added {
		t.Errorf("finalizer added while deleting: %d %v, want 422 %q", got.code, got.obj["message"], added)
	}
	checkMarked(t, req("PATCH", cm, `{"metadata":{"finalizers":["example.com/hold"]}}`).obj, []any{"example.com/hold"})
	if got := req("PATCH", cm, `{"metadata":{"finalizers":[]}}`); got.code != http.StatusOK {
		t.Fatalf("last finalizer removed: %d %v", got.code, got.obj)
	}
	if got := req("GET", cm, ""); got.code != http.StatusNotFound {
		t.Errorf("GET after the last finalizer: %d", got.code)
	}
}

// TestFinalizersValidation: kube's ValidateFinalizers refuses orphan and
// foregroundDeletion together, on create and on update.
func TestFinalizersValidation(t *testing.T) {
	req, _ := deleteServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	const want = `ConfigMap "a" is invalid: metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set`
	got := req("POST", cms, `{"metadata":{"name":"a","finalizers":["orphan","foregroundDeletion"]}}`)
	if got.code != http.StatusUnprocessableEntity || got.obj["message"] != want {
		t.Errorf("create: %d %q, want 422 %q", got.code, got.obj["message"], want)
	}
	req("POST", cms, `{"metadata":{"name":"a","finalizers":["orphan"]}}`)
	got = req("PATCH", cms+"/a", `{"metadata":{"finalizers":["orphan","foregroundDeletion"]}}`)
	if got.code != http.StatusUnprocessableEntity || got.obj["message"] != want {
		t.Errorf("update: %d %q, want 422 %q", got.code, got.obj["message"], want)
	}
}

// TestDeletePropagationKinds: Events' storage does not support garbage
// collection (rest.Unsupported: the collector's finalizers are dropped, the
// policy ignored); a namespace's storage sets them on its first delete, and
// reads orphanDependents=false as Foreground; a definition's first delete
// ignores the policy.
func TestDeletePropagationKinds(t *testing.T) {
	req, _ := deleteServer(t)
	const events = "/api/v1/namespaces/default/events"
	const event = `"involvedObject":{"kind":"Pod","name":"p"},"reason":"A"`
	req("POST", events, `{"metadata":{"name":"e1"},`+event+`}`)
	req("POST", events, `{"metadata":{"name":"e2","finalizers":["orphan"]},`+event+`}`)
	for _, tc := range []struct{ path, options string }{
		{events + "/e1", `{"propagationPolicy":"Foreground"}`},
		{"/apis/events.k8s.io/v1/namespaces/default/events/e2", ""},
	} {
		if got := req("DELETE", tc.path, tc.options); got.code != http.StatusOK || got.obj["kind"] != "Status" {
			t.Errorf("delete %s: %d %v, want it deleted", tc.path, got.code, got.obj)
		}
	}

	const nss = "/api/v1/namespaces"
	for _, tc := range []struct {
		options string
		code    int
		fins    []any
	}{
		{`{"propagationPolicy":"Foreground"}`, http.StatusOK, []any{"foregroundDeletion"}},
		{`{"propagationPolicy":"Orphan"}`, http.StatusOK, []any{"orphan"}},
		{`{"orphanDependents":false}`, http.StatusAccepted, []any{"foregroundDeletion"}},
	} {
		made := req("POST", nss, `{"metadata":{"name":"team"}}`).obj
		req("POST", nss+"/team/configmaps", `{"metadata":{"name":"content"}}`)
		got := req("DELETE", nss+"/team", tc.options)
		// Marked as the namespace storage marks it: no grace period.
		if got.code != tc.code || revisionOf(got.obj) <= revisionOf(made) || got.obj.MetaString("deletionTimestamp") == "" ||
			got.obj.Metadata()["deletionGracePeriodSeconds"] != nil || at(got.obj, "status.phase") != "Terminating" {
			t.Fatalf("delete namespace with %s: %d %v, want %d, Terminating, stored", tc.options, got.code, got.obj, tc.code)
		}
		if d := cmp.Diff(tc.fins, finalizers(got.obj)); d != "" {
			t.Errorf("delete namespace with %s: finalizers (-want +got):\n%s", tc.options, d)
		}
		// The controller deletes the contents and finalizes it; the
		// collector's finalizer keeps it until removed.
		testwait.Until(t, 5*time.Second, "the namespace finalized", func() bool {
			ns := req("GET", nss+"/team", "").obj
			return ns["spec"] != nil && at(ns, "spec.finalizers") == nil
		})
		if c := req("GET", nss+"/team/configmaps/content", "").code; c != http.StatusNotFound {
			t.Errorf("namespace held by %v: its contents not deleted (%d)", tc.fins, c)
		}
		if got := req("PATCH", nss+"/team", `{"metadata":{"finalizers":null}}`); got.code != http.StatusOK {
			t.Fatalf("finalizer removed: %d %v", got.code, got.obj)
		}
		if c := req("GET", nss+"/team", "").code; c != http.StatusNotFound {
			t.Fatalf("namespace left after its last finalizer: %d", c)
		}
	}

	req("POST", crdsPath, widgetCRD(""))
	got := req("DELETE", crdsPath+"/widgets.example.com", `{"propagationPolicy":"Orphan"}`)
	if d := cmp.Diff([]any{"customresourcecleanup.apiextensions.k8s.io"}, finalizers(got.obj)); got.code != http.StatusOK || d != "" {
		t.Errorf("delete definition with Orphan: %d, finalizers (-want +got):\n%s", got.code, d)
	}
}

// TestDeleteCollectionPropagation: DeleteCollection deletes each object as
// a DELETE with the same options, and a dry run stores nothing.
func TestDeleteCollectionPropagation(t *testing.T) {
	req, _ := deleteServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	req("POST", cms, `{"metadata":{"name":"a"}}`)
	req("POST", cms, `{"metadata":{"name":"b","finalizers":["example.com/hold"]}}`)
	// Items only: the list's resourceVersion moves with the controller
	// Lease's renewals.
	before := req("GET", cms, "").obj["items"]

	if got := req("DELETE", cms+"?dryRun=All", `{"propagationPolicy":"Foreground"}`); got.code != http.StatusOK {
		t.Fatalf("dry-run deletecollection: %d %v", got.code, got.obj)
	}
	if d := cmp.Diff(before, req("GET", cms, "").obj["items"]); d != "" {
		t.Errorf("dry run wrote (-before +after):\n%s", d)
	}
	got := req("DELETE", cms+"/a?dryRun=All", `{"propagationPolicy":"Foreground"}`)
	checkMarked(t, got.obj, []any{"foregroundDeletion"})
	if a := req("GET", cms+"/a", "").obj; got.obj.ResourceVersion() != a.ResourceVersion() || len(finalizers(a)) != 0 {
		t.Errorf("dry-run delete: answered at %s, stored %v", got.obj.ResourceVersion(), a)
	}

	if got := req("DELETE", cms, `{"propagationPolicy":"Foreground"}`); got.code != http.StatusOK || len(got.obj["items"].([]any)) != 2 {
		t.Fatalf("deletecollection: %d %v", got.code, got.obj)
	}
	checkMarked(t, req("GET", cms+"/a", "").obj, []any{"foregroundDeletion"})
	checkMarked(t, req("GET", cms+"/b", "").obj, []any{"example.com/hold", "foregroundDeletion"})
}
