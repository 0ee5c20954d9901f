package server

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	admissionV1    = "/apis/admissionregistration.k8s.io/v1"
	validatingHook = admissionV1 + "/validatingwebhookconfigurations"
	mutatingHook   = admissionV1 + "/mutatingwebhookconfigurations"
)

// TestWebhookConfigurations creates both kinds and reads back kube's v1
// defaults; invalid configurations get kube's causes.
func TestWebhookConfigurations(t *testing.T) {
	ts := newTestServer(t)
	code, m := call(t, ts, "POST", mutatingHook, mediaJSON, `{"metadata":{"name":"m"},"webhooks":[{"name":"a.example.com",
		"clientConfig":{"service":{"namespace":"default","name":"svc"}},"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, m)
	}
	want := map[string]any{"failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": map[string]any{}, "objectSelector": map[string]any{},
		"timeoutSeconds": json.Number("10"), "reinvocationPolicy": "Never"}
	hook := at(m, "webhooks.0").(map[string]any)
	got := map[string]any{}
	for k := range want {
		got[k] = hook[k]
	}
	if d := cmp.Diff(want, got); d != "" || at(m, "webhooks.0.rules.0.scope") != "*" || fmt.Sprint(at(m, "webhooks.0.clientConfig.service.port")) != "443" {
		t.Fatalf("defaults (-want +got):\n%s\n%v", d, m)
	}
	code, v := call(t, ts, "POST", validatingHook, mediaJSON, `{"metadata":{"name":"v"},"webhooks":[{"name":"b.example.com",
		"clientConfig":{"url":"https://127.0.0.1:1/x"},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`)
	if code != http.StatusCreated || at(v, "webhooks.0.reinvocationPolicy") != nil {
		t.Fatalf("create validating: %d %v", code, v)
	}

	bad := []struct{ body, cause string }{
		{`{"name":"short.name","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"]}`,
			`webhooks[0].name: Invalid value: "short.name": should be a domain with at least three segments separated by dots`},
		{`{"name":"a.b.c","clientConfig":{"url":"http://h?q=1"},"sideEffects":"None","admissionReviewVersions":["v1"]}`,
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`},
		{`{"name":"a.b.c","clientConfig":{},"sideEffects":"None","admissionReviewVersions":["v1"]}`,
			`webhooks[0].clientConfig: Required value: exactly one of url or service is required`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"admissionReviewVersions":["v1"]}`,
			`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"Some","admissionReviewVersions":["v1"]}`,
			`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v2"]}`,
			`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],"timeoutSeconds":31}`,
			`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],"rules":[{"operations":["*","CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["*","pods"]}]}`,
			`webhooks[0].rules[0].operations: Invalid value: ["*","CREATE"]: if '*' is present, must not specify other operations`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],"matchConditions":[{"name":"x","expression":" "}]}`,
			`webhooks[0].matchConditions[0].expression: Required value`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],"matchConditions":[{"name":"x","expression":"nope == 1"}]}`,
			`webhooks[0].matchConditions[0].expression: Invalid value: "nope == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'`},
		{`{"name":"a.b.c","clientConfig":{"url":"https://h"},"sideEffects":"None","admissionReviewVersions":["v1"],"matchConditions":[{"name":"x","expression":"'a'"}]}`,
			`webhooks[0].matchConditions[0].expression: Invalid value: "'a'": must evaluate to bool but got string`},
	}
	for _, b := range bad {
		code, st := call(t, ts, "POST", validatingHook, mediaJSON, `{"metadata":{"name":"bad"},"webhooks":[`+b.body+`]}`)
		if code != http.StatusUnprocessableEntity || !strings.Contains(at(st, "message").(string), b.cause) {
			t.Errorf("%s: %d %v, want cause %q", b.body, code, at(st, "message"), b.cause)
		}
	}
}

// TestNamespaceNameLabel: every namespace written carries its name in the
// kubernetes.io/metadata.name label, generated names included, and a client
// cannot change it.
func TestNamespaceNameLabel(t *testing.T) {
	ts := newTestServer(t)
	code, ns := call(t, ts, "POST", "/api/v1/namespaces", mediaJSON, `{"metadata":{"generateName":"gen-","labels":{"kubernetes.io/metadata.name":"other"}}}`)
	name, _ := at(ns, "metadata.name").(string)
	if code != http.StatusCreated || nameLabel(ns) != name {
		t.Fatalf("create: %d %v", code, ns)
	}
	code, ns = call(t, ts, "PATCH", "/api/v1/namespaces/"+name, "application/merge-patch+json", `{"metadata":{"labels":{"kubernetes.io/metadata.name":null,"a":"b"}}}`)
	if code != http.StatusOK || nameLabel(ns) != name || at(ns, "metadata.labels.a") != "b" {
		t.Fatalf("patch: %d %v", code, ns)
	}
}

func nameLabel(ns any) any {
	labels, _ := at(ns, "metadata.labels").(map[string]any)
	return labels["kubernetes.io/metadata.name"]
}

// TestWebhooksOnSubresources: the status subresource's writes reach
// webhooks of "shards/status" with the whole object; the scale
// subresource's reach those of "shards/scale" with Scales (kind
// autoscaling/v1 Scale), and a mutating webhook's patch of the Scale sets
// the object's replicas, as kube's scale storage.
func TestWebhooksOnSubresources(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	seen := make(chan map[string]any, 4)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Request map[string]any }
		_ = json.NewDecoder(r.Body).Decode(&in)
		seen <- in.Request
		resp := map[string]any{"uid": in.Request["uid"], "allowed": true}
		if r.URL.Path == "/scale" {
			resp["patchType"] = "JSONPatch"
			resp["patch"] = []byte(`[{"op":"replace","path":"/spec/replicas","value":7}]`)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	config := func(kind, path, resource string) string {
		return fmt.Sprintf(`{"metadata":{"name":"sub"},"webhooks":[{"name":"sub.example.com","clientConfig":{"url":%q,"caBundle":%q},
			"sideEffects":"None","admissionReviewVersions":["v1"],
			"rules":[{"operations":["UPDATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":[%q]}]}]}`, hook.URL+path, ca, resource)
	}
	for _, c := range []struct{ path, body string }{
		{crdsPath, shardCRD},
		{shards, `{"apiVersion":"example.com/v1","kind":"Shard","metadata":{"name":"a"},"spec":{"count":1}}`},
		{validatingHook, config("validating", "/status", "shards/status")},
		{mutatingHook, config("mutating", "/scale", "shards/scale")},
	} {
		if code, obj := call(t, ts, "POST", c.path, mediaJSON, c.body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", c.path, code, obj)
		}
	}
	if code, obj := call(t, ts, "PATCH", shards+"/a/status", "application/merge-patch+json", `{"status":{"count":2}}`); code != http.StatusOK {
		t.Fatalf("status: %d %v", code, obj)
	}
	r := <-seen
	if r["subResource"] != "status" || at(r, "kind.kind") != "Shard" || fmt.Sprint(at(r, "object.status.count")) != "2" || at(r, "oldObject.status") != nil {
		t.Fatalf("status review %v", r)
	}
	code, scale := call(t, ts, "PUT", shardScale, mediaJSON, `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a"},"spec":{"replicas":3}}`)
	if code != http.StatusOK || at(scale, "spec.replicas") != "7" {
		t.Fatalf("scale: %d %v", code, scale)
	}
	r = <-seen
	if r["subResource"] != "scale" || fmt.Sprint(r["kind"]) != "map[group:autoscaling kind:Scale version:v1]" ||
		fmt.Sprint(at(r, "object.spec.replicas")) != "3" || fmt.Sprint(at(r, "oldObject.spec.replicas")) != "1" || at(r, "resource.resource") != "shards" {
		t.Fatalf("scale review %v", r)
	}
	if _, obj := call(t, ts, "GET", shards+"/a", "", ""); at(obj, "spec.count") != "7" {
		t.Fatalf("object after the patched Scale: %v", obj)
	}
}

// TestWebhookMatchPolicy: a webhook on events.k8s.io/v1 Events reaches a
// core/v1 Event's create under matchPolicy Equivalent, seeing the event in
// events.k8s.io/v1 form with the request's own kind as requestKind, and
// its patch of that form lands in the stored event; under Exact it is not
// called.
func TestWebhookMatchPolicy(t *testing.T) {
	ts := newTestServer(t)
	seen := make(chan map[string]any, 4)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Request map[string]any }
		_ = json.NewDecoder(r.Body).Decode(&in)
		seen <- in.Request
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{
			"uid": in.Request["uid"], "allowed": true, "patchType": "JSONPatch", "patch": []byte(`[{"op":"replace","path":"/note","value":"patched"}]`)}})
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	event := func(name string) string {
		return `{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `"},"involvedObject":{"kind":"Widget","namespace":"default","name":"w"},
			"reason":"R","message":"original","source":{"component":"c"},"type":"Normal"}`
	}
	for i, policy := range []string{"Exact", "Equivalent"} {
		config := fmt.Sprintf(`{"metadata":{"name":"events-%d"},"webhooks":[{"name":"events.example.com","clientConfig":{"url":%q,"caBundle":%q},
			"sideEffects":"None","admissionReviewVersions":["v1"],"matchPolicy":%q,
			"rules":[{"operations":["CREATE"],"apiGroups":["events.k8s.io"],"apiVersions":["v1"],"resources":["events"]}]}]}`, i, hook.URL, ca, policy)
		if code, obj := call(t, ts, "POST", mutatingHook, mediaJSON, config); code != http.StatusCreated {
			t.Fatalf("configuration: %d %v", code, obj)
		}
		code, obj := call(t, ts, "POST", coreEvents, mediaJSON, event(policy))
		if code != http.StatusCreated {
			t.Fatalf("%s: create: %d %v", policy, code, obj)
		}
		if policy == "Exact" {
			if obj["message"] != "original" || len(seen) != 0 {
				t.Fatalf("Exact: called for a core/v1 event: %v", obj)
			}
			if code, obj := call(t, ts, "DELETE", mutatingHook+"/events-0", "", ""); code != http.StatusOK {
				t.Fatalf("delete: %d %v", code, obj)
			}
			continue
		}
		r := <-seen
		if fmt.Sprint(r["kind"]) != "map[group:events.k8s.io kind:Event version:v1]" || fmt.Sprint(r["requestKind"]) != "map[group: kind:Event version:v1]" ||
			fmt.Sprint(r["resource"]) != "map[group:events.k8s.io resource:events version:v1]" || at(r, "object.note") != "original" || at(r, "object.apiVersion") != "events.k8s.io/v1" {
			t.Fatalf("Equivalent review %v", r)
		}
		if obj["message"] != "patched" || obj["apiVersion"] != "v1" {
			t.Fatalf("the patched events.k8s.io/v1 form did not reach the core event: %v", obj)
		}
	}
}

// webhookServer serves AdmissionReviews with answer's response to each
// request (uid set) and returns a clientConfig for it.
func webhookServer(t *testing.T, answer func(req map[string]any) map[string]any) string {
	hook := httptest.NewTLSServer(admissionHandler(answer))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	return `{"url":"` + hook.URL + `","caBundle":"` + ca + `"}`
}

// admissionHandler answers AdmissionReviews with answer's response to
// each request (uid set).
func admissionHandler(answer func(req map[string]any) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Request map[string]any }
		_ = json.NewDecoder(r.Body).Decode(&in)
		resp := answer(in.Request)
		resp["uid"] = in.Request["uid"]
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}
}

// configMapHook is a configuration of one webhook on ConfigMaps' creates
// and updates.
func configMapHook(clientConfig string) string {
	return `{"metadata":{"name":"h"},"webhooks":[{"name":"a.example.com","clientConfig":` + clientConfig + `,
		"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`
}

// writeConfigMap sends a create or update of a ConfigMap and returns the
// response's code, object and header.
func writeConfigMap(t *testing.T, ts *httptest.Server, method, body string) (int, map[string]any, http.Header) {
	path := "/api/v1/namespaces/default/configmaps"
	if method == "PUT" {
		path += "/c"
	}
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", mediaJSON)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var obj map[string]any
	_ = json.NewDecoder(res.Body).Decode(&obj)
	return res.StatusCode, obj, res.Header
}

// TestWebhookManagedFields: managedFields a mutating webhook leaves in a
// state that does not decode are put back as they were, with kube's
// warning, as kube's managedFields admission controller does; stored,
// they would break every client that decodes the object.
func TestWebhookManagedFields(t *testing.T) {
	for name, value := range map[string]string{"string": `"x"`, "operation": `[{"manager":"m","operation":"Bogus","fieldsType":"FieldsV1","fieldsV1":{}}]`} {
		t.Run(name, func(t *testing.T) {
			cc := webhookServer(t, func(map[string]any) map[string]any {
				p, _ := json.Marshal([]any{map[string]any{"op": "add", "path": "/metadata/managedFields", "value": json.RawMessage(value)}})
				return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": p}
			})
			ts := newTestServer(t)
			if code, m := call(t, ts, "POST", mutatingHook, mediaJSON, configMapHook(cc)); code != http.StatusCreated {
				t.Fatalf("configuration: %d %v", code, m)
			}
			for _, method := range []string{"POST", "PUT"} {
				code, obj, h := writeConfigMap(t, ts, method, `{"metadata":{"name":"c"},"data":{"a":"`+method+`"}}`)
				mf, _ := at(obj, "metadata.managedFields").([]any)
				manager, _ := at(obj, "metadata.managedFields.0.manager").(string)
				if code >= 300 || len(mf) != 1 || manager == "m" ||
					!strings.HasPrefix(h.Get("Warning"), `299 - ".metadata.managedFields was in an invalid state after admission;`) {
					t.Errorf("%s: %d, managedFields %v, Warning %q", method, code, at(obj, "metadata.managedFields"), h.Values("Warning"))
				}
			}
		})
	}
}

// TestWebhookWarningsOnce: a warning both a mutating and a validating
// webhook answer is in the response once, as kube's warning recorder
// keeps each text once per request.
func TestWebhookWarningsOnce(t *testing.T) {
	cc := webhookServer(t, func(map[string]any) map[string]any { return map[string]any{"allowed": true, "warnings": []any{"same"}} })
	ts := newTestServer(t)
	for _, kind := range []string{mutatingHook, validatingHook} {
		if code, m := call(t, ts, "POST", kind, mediaJSON, configMapHook(cc)); code != http.StatusCreated {
			t.Fatalf("configuration: %d %v", code, m)
		}
	}
	code, _, h := writeConfigMap(t, ts, "POST", `{"metadata":{"name":"c"}}`)
	if want := []string{`299 - "same"`}; code != http.StatusCreated || !slices.Equal(h.Values("Warning"), want) {
		t.Fatalf("%d, Warning %q, want %q", code, h.Values("Warning"), want)
	}
}

// TestWebhookRenameOnApplyCreate: an apply that creates an object, renamed
// by a mutating webhook, is refused rather than stored under the new name
// while the URL named another.
func TestWebhookRenameOnApplyCreate(t *testing.T) {
	cc := webhookServer(t, func(map[string]any) map[string]any {
		p, _ := json.Marshal([]any{map[string]any{"op": "replace", "path": "/metadata/name", "value": "other"}})
		return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": p}
	})
	ts := newTestServer(t)
	if code, m := call(t, ts, "POST", mutatingHook, mediaJSON, configMapHook(cc)); code != http.StatusCreated {
		t.Fatalf("configuration: %d %v", code, m)
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	code, m := call(t, ts, "PATCH", cms+"/c?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
	if code != http.StatusBadRequest || m["message"] != "the name of the object (other) does not match the name on the URL (c)" {
		t.Fatalf("apply: %d %v", code, m)
	}
	if code, _ := call(t, ts, "GET", cms+"/other", "", ""); code != http.StatusNotFound {
		t.Fatalf("GET other: %d, want 404", code)
	}
}
