package server

import (
	"fmt"
	"net/http"
	"testing"
)

// TestWebhookOnHPAVersions: a webhook on autoscaling/v2 HPAs reaches an
// autoscaling/v1 create under matchPolicy Equivalent, seeing the object
// converted as kube converts it (v1's target cpu percentage as v2's cpu
// Utilization metric), and its patch of the v2 form lands in the object
// the v1 client gets back.
func TestWebhookOnHPAVersions(t *testing.T) {
	ts := newTestServer(t)
	seen := make(chan map[string]any, 1)
	clientConfig := webhookServer(t, func(req map[string]any) map[string]any {
		seen <- req
		return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": []byte(`[{"op":"replace","path":"/spec/maxReplicas","value":7}]`)}
	})
	config := `{"metadata":{"name":"hpa"},"webhooks":[{"name":"hpa.example.com","clientConfig":` + clientConfig + `,
		"sideEffects":"None","admissionReviewVersions":["v1"],"matchPolicy":"Equivalent",
		"rules":[{"operations":["CREATE"],"apiGroups":["autoscaling"],"apiVersions":["v2"],"resources":["horizontalpodautoscalers"]}]}]}`
	if code, obj := call(t, ts, "POST", mutatingHook, mediaJSON, config); code != http.StatusCreated {
		t.Fatalf("configuration: %d %v", code, obj)
	}
	code, obj := call(t, ts, "POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", mediaJSON,
		`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},
		"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":3,"targetCPUUtilizationPercentage":60}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	r := <-seen
	if fmt.Sprint(r["kind"]) != "map[group:autoscaling kind:HorizontalPodAutoscaler version:v2]" ||
		fmt.Sprint(r["requestKind"]) != "map[group:autoscaling kind:HorizontalPodAutoscaler version:v1]" ||
		at(r, "object.apiVersion") != "autoscaling/v2" || at(r, "object.spec.targetCPUUtilizationPercentage") != nil ||
		at(r, "object.spec.metrics.0.resource.name") != "cpu" || fmt.Sprint(at(r, "object.spec.metrics.0.resource.target.averageUtilization")) != "60" {
		t.Fatalf("review %v", r)
	}
	if obj["apiVersion"] != "autoscaling/v1" || fmt.Sprint(at(obj, "spec.maxReplicas")) != "7" || fmt.Sprint(at(obj, "spec.targetCPUUtilizationPercentage")) != "60" {
		t.Fatalf("the patched v2 form did not reach the v1 object: %v", obj)
	}
}
