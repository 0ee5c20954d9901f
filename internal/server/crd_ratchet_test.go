package server

import (
	"testing"
)

// TestCustomResourceRatcheting checks validation ratcheting as kube 1.30+
// has it: after a definition tightens its schema, an update that leaves a
// now invalid value unchanged is accepted; one that changes it is not,
// and neither is a new object with it.
func TestCustomResourceRatcheting(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	versions := func(name string) string {
		return `[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
			"name":` + name + `,"size":{"type":"integer"}}}}}}}]`
	}
	def := `{"metadata":{"name":"gadgets.example.com"},"spec":{"group":"example.com","scope":"Cluster",
		"names":{"plural":"gadgets","kind":"Gadget"},"versions":` + versions(`{"type":"string"}`) + `}}`
	if code, obj := call(t, ts, "POST", crdsPath, mediaJSON, def); code != 201 {
		t.Fatalf("create definition: %d %v", code, obj)
	}
	waitFor(t, s, func() bool { code, _ := call(t, ts, "GET", gadgets, "", ""); return code == 200 })
	if code, obj := call(t, ts, "POST", gadgets, mediaJSON, `{"metadata":{"name":"g"},"spec":{"name":"UPPER","size":1}}`); code != 201 {
		t.Fatalf("create gadget: %d %v", code, obj)
	}
	tight := versions(`{"type":"string","allOf":[{"pattern":"^[a-z]+$"}]}`)
	if code, obj := call(t, ts, "PATCH", crdsPath+"/gadgets.example.com", mediaMergePatch, `{"spec":{"versions":`+tight+`}}`); code != 200 {
		t.Fatalf("tighten definition: %d %v", code, obj)
	}
	waitFor(t, s, func() bool {
		code, _ := call(t, ts, "POST", gadgets+"?dryRun=All", mediaJSON, `{"metadata":{"name":"h"},"spec":{"name":"UPPER"}}`)
		return code == 422
	})
	runSteps(t, ts, []step{
		{name: "unchanged invalid value", method: "PATCH", path: gadgets + "/g", body: `{"spec":{"size":2}}`, code: 200,
			want: map[string]any{"spec.size": "2", "spec.name": "UPPER"}},
		{name: "changed invalid value", method: "PATCH", path: gadgets + "/g", body: `{"spec":{"name":"LOWER"}}`, code: 422, check: wantCauses(
			`<nil>: Invalid value: "": "spec.name" must validate all the schemas (allOf). None validated`,
			`spec.name: Invalid value: "LOWER": spec.name in body should match '^[a-z]+$'`,
		)},
		{name: "fixed value", method: "PATCH", path: gadgets + "/g", body: `{"spec":{"name":"lower"}}`, code: 200},
	})
}
