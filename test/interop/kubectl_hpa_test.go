package interop

import (
	"strings"
	"testing"
)

// TestKubectlAutoscaleBothVersions: each kubectl's `autoscale` (1.20's
// writes autoscaling/v1, the current one autoscaling/v2) makes one HPA
// that both versions read as kube converts it, and `get hpa` prints it;
// an edit through v1 shows in v2.
func TestKubectlAutoscaleBothVersions(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		k.must(t, "create", "deployment", "web", "--image=nginx")
		k.must(t, "autoscale", "deployment", "web", "--cpu-percent=50", "--min=2", "--max=10")
		get := func(version, path string) string {
			return strings.TrimSpace(k.must(t, "get", "horizontalpodautoscalers."+version+".autoscaling", "web", "-o", "jsonpath="+path))
		}
		if got := get("v1", "{.spec.targetCPUUtilizationPercentage} {.spec.minReplicas} {.spec.maxReplicas}"); got != "50 2 10" {
			t.Errorf("v1 target, min, max: %q", got)
		}
		if got := get("v2", "{.spec.metrics[*].resource.name} {.spec.metrics[*].resource.target.averageUtilization}"); got != "cpu 50" {
			t.Errorf("v2 metrics: %q", got)
		}
		contains(t, k.must(t, "get", "hpa"),
			`(?m)^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE$`,
			`(?m)^web\s+Deployment/web\s+cpu: <unknown>/50%\s+2\s+10\s+0\s+\S+$`)

		k.must(t, "patch", "horizontalpodautoscalers.v1.autoscaling", "web", "-p", `{"spec":{"targetCPUUtilizationPercentage":70}}`)
		if got := get("v2", "{.spec.metrics[*].resource.target.averageUtilization} {.metadata.generation}"); got != "70 2" {
			t.Errorf("v2 utilization and generation after the v1 patch: %q", got)
		}
		k.must(t, "delete", "horizontalpodautoscalers.v2.autoscaling", "web")
		if out, err := k.run(t, nil, "get", "horizontalpodautoscalers.v1.autoscaling", "web"); err == nil {
			t.Errorf("v1 still reads the HPA deleted through v2:\n%s", out)
		}
	})
}
