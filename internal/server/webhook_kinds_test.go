package server

import (
	"encoding/json"
	"fmt"
	"net/http"
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
