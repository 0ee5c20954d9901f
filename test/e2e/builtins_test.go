package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// manifests are the kinds an operator's tests create most, as YAML that
// kube accepts.
const builtinManifests = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27", ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    spec:
      containers: [{name: pi, image: perl, command: [perl, -e, "print 1"]}]
      restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bot}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing}
spec:
  rules:
  - host: a.example.com
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
`

// TestBuiltinKindsWithKubectl creates, applies, gets and deletes the kinds
// of manifests with kubectl, and checks what is stored is kube's encoding.
func TestBuiltinKindsWithKubectl(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t)
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, []byte(builtinManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), lineTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--server", s.URL, "-n", "default"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kinds := []string{"deployment.apps/web", "service/web", "job.batch/pi", "pod/p1", "serviceaccount/bot", "ingress.networking.k8s.io/ing"}
	out := run("create", "-f", file)
	for _, k := range kinds {
		if !strings.Contains(out, k+" created") {
			t.Errorf("kubectl create: no %q in\n%s", k+" created", out)
		}
	}
	if out := run("apply", "-f", file); strings.Count(out, "configured")+strings.Count(out, "unchanged") != len(kinds) {
		t.Errorf("kubectl apply over created objects:\n%s", out)
	}
	// A changed image is a strategic merge patch of the container, merged
	// by name as kube's schema says: the ports stay.
	if err := os.WriteFile(file, []byte(strings.Replace(builtinManifests, "nginx:1.27", "nginx:1.28", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run("apply", "-f", file); !strings.Contains(out, "deployment.apps/web configured") {
		t.Errorf("kubectl apply of a new image:\n%s", out)
	}
	if got := run("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}"); got != "nginx:1.28 80" {
		t.Errorf("container after apply: %q, want the new image and the port", got)
	}
	// Managed fields key the containers and their ports by kube's list map keys.
	if _, got := s.request(t, "GET", "/apis/apps/v1/namespaces/default/deployments/web", "", ""); !strings.Contains(string(got), `"k:{\"name\":\"nginx\"}"`) || !strings.Contains(string(got), `"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"`) {
		t.Errorf("managed fields of %s, want the container and its port by their keys", got)
	}
	if out := run("get", "deploy,svc,job,pod,sa,ing", "-o", "name"); !containsAll(out, kinds) {
		t.Errorf("kubectl get:\n%s", out)
	}
	// kube's encoding of the Go types: non-omitempty structs as {}, kube's
	// defaults (a port's protocol and targetPort), status reset on create.
	var svc, deploy map[string]any
	if err := json.Unmarshal([]byte(run("get", "svc", "web", "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, svc["status"]); got != `{"loadBalancer":{}}` {
		t.Errorf("service status %s, want kube's zero value", got)
	}
	if got := jsonOf(t, svc["spec"].(map[string]any)["ports"]); got != `[{"port":80,"protocol":"TCP","targetPort":80}]` {
		t.Errorf("service ports %s", got)
	}
	if err := json.Unmarshal([]byte(run("get", "deploy", "web", "-o", "json")), &deploy); err != nil {
		t.Fatal(err)
	}
	spec := deploy["spec"].(map[string]any)
	container := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
	// kube's Go defaulting: the strategy, the container's pull policy.
	if jsonOf(t, spec["strategy"]) != `{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"}` || container.(map[string]any)["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("deployment lacks kube's defaults: %s", jsonOf(t, deploy))
	}
	if jsonOf(t, container.(map[string]any)["resources"]) != "{}" || jsonOf(t, deploy["status"]) != "{}" {
		t.Errorf("deployment lacks the zero values kube encodes: %s", jsonOf(t, deploy))
	}
	// kube's deployment strategy bumps the generation on an annotation
	// change too: the first apply adds last-applied-configuration (2), the
	// second changes it and the image (3).
	if md := deploy["metadata"].(map[string]any); md["generation"] != 3.0 {
		t.Errorf("deployment generation %v, want 3: created, annotated by apply, then its image changed", md["generation"])
	}
	if out := run("explain", "pod.spec.containers"); !strings.Contains(out, "List of containers belonging to the pod.") {
		t.Errorf("kubectl explain pod.spec.containers:\n%s", out)
	}
	if out := run("delete", "-f", file); strings.Count(out, "deleted") != len(kinds) {
		t.Errorf("kubectl delete:\n%s", out)
	}
	if code, _ := s.request(t, "GET", "/apis/apps/v1/namespaces/default/deployments/web", "", ""); code != http.StatusNotFound {
		t.Errorf("deployment after delete: %d", code)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSeedsWatchPods runs the seeds' commands: curl's watches of pods and
// of one ConfigMap, and kubectl get pods -w, each seeing a pod or the
// ConfigMap written after it started.
func TestSeedsWatchPods(t *testing.T) {
	s := startServer(t)
	pod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	}
	var streams []*stream
	if curl, err := exec.LookPath("curl"); err == nil {
		for _, path := range []string{"/api/v1/pods?watch=true", "/api/v1/watch/pods", "/api/v1/watch/namespaces/kube-system/configmaps/coredns"} {
			streams = append(streams, startStream(t, exec.Command(curl, "-sN", s.URL+path)))
		}
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		streams = append(streams, startStream(t, exec.Command(kubectl, "--server", s.URL, "get", "pods", "-w")))
	}
	if len(streams) == 0 {
		t.Skip("neither curl nor kubectl is installed")
	}
	if code, b := s.request(t, "POST", "/api/v1/namespaces/default/pods", "application/json", pod("seed")); code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", code, b)
	}
	if code, b := s.request(t, "POST", "/api/v1/namespaces/kube-system/configmaps", "application/json", `{"metadata":{"name":"coredns"},"data":{"Corefile":".:53"}}`); code != http.StatusCreated {
		t.Fatalf("create configmap: %d %s", code, b)
	}
	for _, st := range streams {
		args := st.cmd.Args
		want := `"name":"seed"`
		switch {
		case strings.Contains(args[len(args)-1], "coredns"):
			want = `"name":"coredns"`
		case args[len(args)-1] == "-w":
			want = "seed"
			if line := st.next(t); !strings.HasPrefix(line, "NAME") { // kubectl's header
				t.Errorf("kubectl get pods -w: %q, want its header", line)
			}
		}
		if line := st.next(t); !strings.Contains(line, want) {
			t.Errorf("%v: %q, want %s in it", args, line, want)
		}
	}
}
