package interop

import (
	"testing"
)

// workloads is a Deployment, a Job and a Pod, as a user applies them.
const workloads = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
    matchExpressions: [{key: tier, operator: In, values: [front, edge]}]
  template:
    metadata: {labels: {app: web, tier: front}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: once, image: busybox, command: ["true"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: solo
    image: nginx
    resources: {limits: {cpu: 100m, memory: 64Mi}}
`

// TestKubectlWorkloads applies workloads with each kubectl, scales the
// Deployment through its scale subresource, reads a new Pod's status as
// kube's pod strategy leaves it, and deletes the Pod: with no node it is
// bound to, kube deletes it at once, and so kubectl delete returns.
func TestKubectlWorkloads(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		manifest := writeFile(t, t.TempDir(), "workloads.yaml", workloads)
		contains(t, k.must(t, "apply", "-f", manifest),
			`deployment.apps/web created`, `job.batch/once created`, `pod/solo created`)

		contains(t, k.must(t, "scale", "deployment", "web", "--replicas=3"), `deployment.apps/web scaled`)
		const deployment = "/apis/apps/v1/namespaces/default/deployments/web"
		if _, obj := getObject(t, k.server, deployment); field(obj, "spec", "replicas") != 3.0 || field(obj, "metadata", "generation") != 2.0 {
			t.Errorf("deployment after kubectl scale: %v", obj)
		}
		if code, obj := getObject(t, k.server, deployment+"/scale"); code != 200 || field(obj, "status", "selector") != "app=web,tier in (edge,front)" {
			t.Errorf("deployment's Scale: %d %v", code, obj)
		}

		contains(t, k.must(t, "get", "pod", "solo", "-o", "jsonpath={.status.phase} {.status.qosClass}"), `^Pending Guaranteed$`)

		contains(t, k.must(t, "delete", "pod", "solo"), `pod "solo" deleted`)
		if code, obj := getObject(t, k.server, "/api/v1/namespaces/default/pods/solo"); code != 404 {
			t.Errorf("pod after kubectl delete: %d %v", code, obj)
		}
	})
}
