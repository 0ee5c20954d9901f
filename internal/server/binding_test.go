package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPodBinding binds pods through pods/binding as kube's BindingREST:
// the pod gets its node, the binding's annotations and labels, the node's
// topology labels (PodTopologyLabels) and the PodScheduled condition; a
// bound, gated or missing pod, a bad target and failed preconditions are
// refused with kube's answers.
func TestPodBinding(t *testing.T) {
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	if code, body := call(t, ts, "POST", "/api/v1/nodes", mediaJSON, `{"metadata":{"name":"n1","labels":{
		"topology.kubernetes.io/zone":"z1","topology.kubernetes.io/region":"r1","other":"x"}}}`); code != http.StatusCreated {
		t.Fatalf("node: %d %v", code, body)
	}
	pod := func(name, extra string) {
		t.Helper()
		if code, body := call(t, ts, "POST", pods, mediaJSON, `{"metadata":{"name":"`+name+`","labels":{"app":"a","topology.kubernetes.io/zone":"mine"},
			"annotations":{"pod.beta.kubernetes.io/init-containers":"[]"}},"spec":{`+extra+`"containers":[{"name":"c","image":"i"}]}}`); code != http.StatusCreated {
			t.Fatalf("pod %s: %d %v", name, code, body)
		}
	}
	pod("web", "")
	code, status := call(t, ts, "POST", pods+"/web/binding", mediaJSON, `{"apiVersion":"v1","kind":"Binding",
		"metadata":{"name":"web","annotations":{"by":"scheduler"},"labels":{"bound":"yes"}},"target":{"kind":"Node","name":"n1"}}`)
	if want := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success", "code": json.Number("201")}; code != http.StatusCreated || !cmp.Equal(map[string]any(status), want) {
		t.Fatalf("binding: %d %v", code, status)
	}
	_, got := call(t, ts, "GET", pods+"/web", "", "")
	if got.Labels()["topology.kubernetes.io/zone"] != "z1" || got.Labels()["topology.kubernetes.io/region"] != "r1" ||
		got.Labels()["bound"] != "yes" || got.Labels()["app"] != "a" || got.Labels()["other"] != "" {
		t.Errorf("labels %v", got.Labels())
	}
	if want := map[string]string{"by": "scheduler"}; !cmp.Equal(got.Annotations(), want) {
		t.Errorf("annotations %v, want %v", got.Annotations(), want)
	}
	spec, st := got["spec"].(map[string]any), got["status"].(map[string]any)
	conds := st["conditions"].([]any)
	if spec["nodeName"] != "n1" || len(conds) != 1 || conds[0].(map[string]any)["type"] != "PodScheduled" || conds[0].(map[string]any)["status"] != "True" {
		t.Errorf("spec.nodeName %v, conditions %v", spec["nodeName"], conds)
	}
	if g := got.Metadata()["generation"]; g != json.Number("1") {
		t.Errorf("generation %v, want 1: a binding is no spec update", g)
	}

	pod("gated", `"schedulingGates":[{"name":"g"}],`)
	pod("other", "")
	_, other := call(t, ts, "GET", pods+"/other", "", "")
	tests := []struct {
		name, path, body string
		code             int
		message          string
	}{
		{"bound already", "web", `{"metadata":{"name":"web"},"target":{"name":"n1"}}`, 409,
			`Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "n1"`},
		{"gated", "gated", `{"metadata":{"name":"gated"},"target":{"name":"n1"}}`, 409,
			`Operation cannot be fulfilled on pods/binding "gated": pod gated has non-empty .spec.schedulingGates`},
		{"missing pod", "nope", `{"metadata":{"name":"nope"},"target":{"name":"n1"}}`, 404, `pods "nope" not found`},
		{"other name", "other", `{"metadata":{"name":"web"},"target":{"name":"n1"}}`, 400, "name in URL does not match name in Binding object"},
		{"other namespace", "other", `{"metadata":{"name":"other","namespace":"x"},"target":{"name":"n1"}}`, 400,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"no target", "other", `{"metadata":{"name":"other"}}`, 500, "target.name: Required value"},
		{"bad target", "other", `{"metadata":{"name":"other"},"target":{"kind":"Pod","name":"N_1"}}`, 500,
			`target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"`},
		{"bad node name", "other", `{"metadata":{"name":"other"},"target":{"name":"N_1"}}`, 500,
			`target.name: Invalid value: "N_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"other uid", "other", `{"metadata":{"name":"other","uid":"u"},"target":{"name":"n1"}}`, 409,
			`Operation cannot be fulfilled on pods "other": StorageError: invalid object, Code: 4, Key: /registry/pods/default/other, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: u, UID in object meta: ` + other.UID()},
		{"stale resourceVersion", "other", `{"metadata":{"name":"other","resourceVersion":"1"},"target":{"name":"n1"}}`, 409,
			`Operation cannot be fulfilled on pods "other": StorageError: invalid object, Code: 4, Key: /registry/pods/default/other, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ` + other.ResourceVersion()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, ts, "POST", pods+"/"+tt.path+"/binding", mediaJSON, tt.body)
			if code != tt.code || body["message"] != tt.message {
				t.Errorf("got %d %q, want %d %q", code, body["message"], tt.code, tt.message)
			}
		})
	}
	// A dry run answers as the binding would and binds nothing.
	if code, _ := call(t, ts, "POST", pods+"/other/binding?dryRun=All", mediaJSON, `{"metadata":{"name":"other"},"target":{"name":"n1"}}`); code != http.StatusCreated {
		t.Fatalf("dry run: %d", code)
	}
	if _, got := call(t, ts, "GET", pods+"/other", "", ""); got.ResourceVersion() != other.ResourceVersion() {
		t.Fatalf("a dry run wrote the pod: %v", got)
	}
	// With its uid and resourceVersion as preconditions, the pod binds.
	body := `{"metadata":{"name":"other","uid":"` + other.UID() + `","resourceVersion":"` + other.ResourceVersion() + `"},"target":{"name":"n2"}}`
	if code, status := call(t, ts, "POST", pods+"/other/binding", mediaJSON, body); code != http.StatusCreated {
		t.Fatalf("binding with preconditions: %d %v", code, status)
	}
	if _, got := call(t, ts, "GET", pods+"/other", "", ""); got["spec"].(map[string]any)["nodeName"] != "n2" || got.Labels()["topology.kubernetes.io/zone"] != "mine" {
		t.Errorf("bound to a node that does not exist: %v", got)
	}

	// The legacy bindings resource binds the pod the Binding names, which
	// PodTopologyLabels, acting on pods only, leaves alone.
	pod("legacy", "")
	const bindings = "/api/v1/namespaces/default/bindings"
	if code, status := call(t, ts, "POST", bindings, mediaJSON, `{"metadata":{"name":"legacy"},"target":{"name":"n1"}}`); code != http.StatusCreated || status["status"] != "Success" {
		t.Fatalf("legacy binding: %d %v", code, status)
	}
	if _, got := call(t, ts, "GET", pods+"/legacy", "", ""); got["spec"].(map[string]any)["nodeName"] != "n1" || got.Labels()["topology.kubernetes.io/zone"] != "mine" {
		t.Errorf("bound through bindings: %v", got)
	}
	for body, want := range map[string]string{
		`{"metadata":{"name":"legacy"},"target":{"name":"n1"}}`: `Operation cannot be fulfilled on pods/binding "legacy": pod legacy is already assigned to node "n1"`,
		`{"metadata":{},"target":{"name":"n1"}}`:                "Name parameter required.",
	} {
		if _, got := call(t, ts, "POST", bindings, mediaJSON, body); got["message"] != want {
			t.Errorf("%s: %v, want %q", body, got["message"], want)
		}
	}
}

// TestPodBindingMetadataUnchecked checks that a Binding's labels and
// annotations reach the pod unchecked, as kube's BindingREST copies them
// (ValidatePodBinding checks the target alone, and the pod's write is not
// validated): keys and values a pod's own write could not carry,
// and annotations past their 256 KiB total.
func TestPodBindingMetadataUnchecked(t *testing.T) {
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	if code, body := call(t, ts, "POST", pods, mediaJSON, `{"metadata":{"name":"p","labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`); code != http.StatusCreated {
		t.Fatalf("pod: %d %v", code, body)
	}
	big := strings.Repeat("x", 256<<10)
	labels := map[string]string{"app": "b", "not a key!": "not a value!"}
	annotations := map[string]string{"-bad/key": "v", "big": big}
	binding, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "p", "labels": labels, "annotations": annotations}, "target": map[string]any{"name": "n1"}})
	if code, status := call(t, ts, "POST", pods+"/p/binding", mediaJSON, string(binding)); code != http.StatusCreated {
		t.Fatalf("binding: %d %v", code, status)
	}
	_, got := call(t, ts, "GET", pods+"/p", "", "")
	if diff := cmp.Diff(labels, got.Labels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(annotations, got.Annotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%.300s", diff)
	}
}
