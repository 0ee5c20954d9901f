package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

// TestLease drives coordination.k8s.io/v1 leases as client-go's leader
// election does: create, get, update with the last resourceVersion, and a
// watch that sees every write; plus what kubectl reads (discovery, Table,
// OpenAPI) and the strategic merge patch kubectl sends.
func TestLease(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	w := openWatch(t, ts.Client(), ts.URL+leases+"?watch=true&resourceVersion=0")

	code, created := call(t, ts, "POST", leases, mediaJSON, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"leader"},
		"spec":{"holderIdentity":"a","leaseDurationSeconds":2,"acquireTime":"2024-01-01T00:00:00.000000Z","renewTime":"2024-01-01T00:00:05.123456Z","leaseTransitions":0}}`)
	if code != http.StatusCreated || created.UID() == "" || at(created, "spec.renewTime") != "2024-01-01T00:00:05.123456Z" || at(created, "spec.leaseTransitions") != "0" {
		t.Fatalf("create: %d %v", code, created)
	}
	code, got := call(t, ts, "GET", leases+"/leader", "", "")
	if code != http.StatusOK || got["kind"] != "Lease" || got["apiVersion"] != "coordination.k8s.io/v1" || at(got, "spec.holderIdentity") != "a" {
		t.Fatalf("get: %d %v", code, got)
	}
	stale := created.ResourceVersion()
	update := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"leader","resourceVersion":"` + stale + `"},
		"spec":{"holderIdentity":"b","leaseDurationSeconds":2,"renewTime":"2024-01-01T00:00:09.000001Z","leaseTransitions":1}}`
	code, updated := call(t, ts, "PUT", leases+"/leader", mediaJSON, update)
	if code != http.StatusOK || at(updated, "spec.holderIdentity") != "b" || updated.ResourceVersion() == stale {
		t.Fatalf("update: %d %v", code, updated)
	}
	if code, st := call(t, ts, "PUT", leases+"/leader", mediaJSON, update); code != http.StatusConflict || st["reason"] != "Conflict" {
		t.Fatalf("a second candidate's update with the same resourceVersion: %d %v, want 409", code, st)
	}
	code, patched := call(t, ts, "PATCH", leases+"/leader", mediaSMP, `{"spec":{"holderIdentity":"c"}}`)
	if code != http.StatusOK || at(patched, "spec.holderIdentity") != "c" || at(patched, "spec.leaseTransitions") != "1" {
		t.Fatalf("strategic merge patch: %d %v", code, patched)
	}

	r := exchange(t, ts, "GET", leases, http.Header{"Accept": {tableAccept}}, "")
	var names []string
	for _, c := range r.obj["columnDefinitions"].([]any) {
		names = append(names, at(c, "name").(string))
	}
	if diff := cmp.Diff([]string{"Name", "Holder", "Age"}, names); diff != "" {
		t.Errorf("Table columns (-want +got):\n%s", diff)
	}
	if at(r.obj, "rows.0.cells.0") != "leader" || at(r.obj, "rows.0.cells.1") != "c" {
		t.Errorf("Table row: %v", at(r.obj, "rows.0.cells"))
	}

	if code, _ := call(t, ts, "DELETE", leases+"/leader", "", ""); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	var types []string
	for _, e := range w.next(4, false) {
		if e.Object.Name() != "leader" || e.Object["kind"] != "Lease" {
			t.Errorf("watch event %s of %v", e.Type, e.Object)
		}
		types = append(types, e.Type)
	}
	if diff := cmp.Diff([]string{api.Added, api.Modified, api.Modified, api.Deleted}, types); diff != "" {
		t.Errorf("watch events (-want +got):\n%s", diff)
	}

	code, disc := call(t, ts, "GET", "/apis/coordination.k8s.io/v1", "", "")
	if b, _ := json.Marshal(disc); code != http.StatusOK || !strings.Contains(string(b), `{"kind":"Lease","name":"leases","namespaced":true,"singularName":"lease"`) {
		t.Errorf("discovery: %d %s", code, b)
	}
	_, doc := call(t, ts, "GET", "/openapi/v3/apis/coordination.k8s.io/v1", "", "")
	schemas, _ := at(doc, "components.schemas").(map[string]any)
	if _, ok := schemas["io.k8s.api.coordination.v1.LeaseSpec"]; !ok {
		t.Errorf("OpenAPI v3: no LeaseSpec among %d schemas", len(schemas))
	}
	_, doc = call(t, ts, "GET", "/openapi/v2", "", "")
	defs, _ := doc["definitions"].(map[string]any)
	if _, ok := defs["io.k8s.api.coordination.v1.Lease"]; !ok {
		t.Errorf("OpenAPI v2 (kubectl explain): no Lease among %d definitions", len(defs))
	}

	code, applied := call(t, ts, "PATCH", leases+"/applied?fieldManager=m", mediaApplyYML,
		"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: applied\nspec:\n  holderIdentity: x\n  renewTime: \"2024-01-01T00:00:00.000001Z\"\n")
	if code != http.StatusCreated || at(applied, "spec.holderIdentity") != "x" || at(applied, "metadata.managedFields.0.manager") != "m" {
		t.Errorf("server-side apply: %d %v", code, applied)
	}
}

// TestLeaseValidation checks kube's first lease rules, each at its limit
// and one past it: leaseDurationSeconds > 0 and leaseTransitions >= 0.
func TestLeaseValidation(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		name, spec string
		code       int
		message    string
	}{
		{"duration 1", `{"leaseDurationSeconds":1}`, http.StatusCreated, ""},
		{"duration 0", `{"leaseDurationSeconds":0}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "duration-0" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`},
		{"transitions 0", `{"leaseTransitions":0}`, http.StatusCreated, ""},
		{"transitions -1", `{"leaseTransitions":-1}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "transitions--1" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`},
		{"empty spec", `{}`, http.StatusCreated, ""},
		{"null fields", `{"holderIdentity":null,"renewTime":null,"leaseDurationSeconds":null}`, http.StatusCreated, ""},
		{"duration max int32", `{"leaseDurationSeconds":2147483647}`, http.StatusCreated, ""},
		{"duration past int32", `{"leaseDurationSeconds":2147483648}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "duration-past-int32" is invalid: spec.leaseDurationSeconds: Invalid value: 2147483648: must be a 32-bit integer`},
		{"duration fraction", `{"leaseDurationSeconds":1.5}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "duration-fraction" is invalid: spec.leaseDurationSeconds: Invalid value: 1.5: must be a 32-bit integer`},
		{"duration string", `{"leaseDurationSeconds":"2"}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "duration-string" is invalid: spec.leaseDurationSeconds: Invalid value: 2: must be a 32-bit integer`},
		{"holder number", `{"holderIdentity":1}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "holder-number" is invalid: spec.holderIdentity: Invalid value: must be a string`},
		{"renew seconds only", `{"renewTime":"2024-01-01T00:00:00Z"}`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "renew-seconds-only" is invalid: spec.renewTime: Invalid value: "2024-01-01T00:00:00Z": must be a time in RFC 3339 with microseconds (2006-01-02T15:04:05.000000Z07:00)`},
		{"spec not an object", `"x"`, http.StatusUnprocessableEntity,
			`Lease.coordination.k8s.io "spec-not-an-object" is invalid: spec: Invalid value: must be an object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.name, " ", "-")
			code, obj := call(t, ts, "POST", leases, mediaJSON, `{"metadata":{"name":"`+name+`"},"spec":`+tt.spec+`}`)
			if code != tt.code || tt.message != "" && obj["message"] != tt.message {
				t.Errorf("got %d %v, want %d %q", code, obj, tt.code, tt.message)
			}
		})
	}
	code, st := call(t, ts, "PATCH", leases+"/duration-1", "application/merge-patch+json", `{"spec":{"leaseDurationSeconds":-5}}`)
	if code != http.StatusUnprocessableEntity || st["reason"] != "Invalid" {
		t.Errorf("an update past the limit: %d %v", code, st)
	}
	if _, got := call(t, ts, "GET", leases+"/duration-1", "", ""); at(got, "spec.leaseDurationSeconds") != "1" {
		t.Errorf("a rejected update changed the lease: %v", got)
	}
}

// TestLeaseProtobuf speaks protobuf as client-go's typed CoordinationV1
// client does, MicroTime's microseconds included.
func TestLeaseProtobuf(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	spec := map[string]any{"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2024-01-01T00:00:05.123456Z", "leaseTransitions": 0}
	resp := protobufRequest(t, "POST", ts.URL+leases, map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "p"}, "spec": spec,
	})
	created := decodeResponse(t, resp)
	if resp.StatusCode != http.StatusCreated || created.Kind() != "Lease" || created.UID() == "" {
		t.Fatalf("create over protobuf: %d %v", resp.StatusCode, created)
	}
	got := decodeResponse(t, protobufRequest(t, "GET", ts.URL+leases+"/p", nil))
	want := map[string]any{"holderIdentity": "a", "leaseDurationSeconds": float64(15), "renewTime": "2024-01-01T00:00:05.123456Z", "leaseTransitions": float64(0)}
	if diff := cmp.Diff(want, got["spec"]); diff != "" {
		t.Errorf("spec read over protobuf (-want +got):\n%s", diff)
	}
	bad := protobufRequest(t, "POST", ts.URL+leases, map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "q"}, "spec": map[string]any{"leaseDurationSeconds": 0},
	})
	if bad.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a protobuf lease with leaseDurationSeconds 0: %d, want 422", bad.StatusCode)
	}
	list := decodeResponse(t, protobufRequest(t, "GET", ts.URL+leases, nil))
	if items, _ := list["items"].([]any); list.Kind() != "LeaseList" || len(items) != 1 {
		t.Errorf("list over protobuf: %v", list)
	}
}
