package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const printedManifests = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, nodePort: 30080}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  completions: 2
  template:
    spec:
      containers: [{name: pi, image: perl}]
      restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec:
  nodeName: n1
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: p2}
spec:
  containers: [{name: a, image: busybox}]
`

// TestKubectlGetPrinted runs kubectl get -o wide on the built-in kinds
// kube prints with their own columns, and kubectl's field selectors.
func TestKubectlGetPrinted(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t)
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, []byte(printedManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), lineTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--server", s.URL, "-n", "default"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("create", "-f", file); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, out)
	}
	out, err := run("get", "pods,deploy,svc,job", "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	// Columns are separated by runs of spaces; ages vary, so rows are matched
	// with a pattern for them.
	fields := regexp.MustCompile(` {2,}`)
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, fields.ReplaceAllString(strings.TrimSpace(l), "|"))
		}
	}
	// A new pod's Pending phase, a service's cluster IP and a job's
	// generated selector are the strategies' doing, printed when there.
	age := `\d+s`
	for _, want := range []string{
		`^NAME\|READY\|STATUS\|RESTARTS\|AGE\|IP\|NODE\|NOMINATED NODE\|READINESS GATES$`,
		`^pod/p1\|0/2(\|Pending)?\|0\|` + age + `\|<none>\|n1\|<none>\|<none>$`,
		`^pod/p2\|0/1(\|Pending)?\|0\|` + age + `\|<none>\|<none>\|<none>\|<none>$`,
		`^NAME\|READY\|UP-TO-DATE\|AVAILABLE\|AGE\|CONTAINERS\|IMAGES\|SELECTOR$`,
		`^deployment.apps/web\|0/3\|0\|0\|` + age + `\|nginx\|nginx:1.27\|app=web$`,
		`^NAME\|TYPE\|CLUSTER-IP\|EXTERNAL-IP\|PORT\(S\)\|AGE\|SELECTOR$`,
		`^service/web\|NodePort\|10\.0\.0\.[0-9]+\|<none>\|80:30080/TCP\|` + age + `\|app=web$`,
		`^NAME\|STATUS\|COMPLETIONS\|DURATION\|AGE\|CONTAINERS\|IMAGES\|SELECTOR$`,
		`^job.batch/pi\|Running\|0/2\|\|?` + age + `\|pi\|perl\|(<none>|batch.kubernetes.io/controller-uid=)`,
	} {
		re := regexp.MustCompile(want)
		if !slices.ContainsFunc(lines, re.MatchString) {
			t.Errorf("kubectl get -o wide: no line matches %s in\n%s", want, out)
		}
	}
	if out, err := run("get", "pods", "--field-selector", "spec.nodeName=n1,spec.restartPolicy=Always", "-o", "name"); err != nil || strings.TrimSpace(out) != "pod/p1" {
		t.Errorf("pods on n1: %v %q", err, out)
	}
	if out, err := run("get", "pods", "--field-selector", "spec.nodeName="); err != nil || !strings.Contains(out, "p2") || strings.Contains(out, "p1") {
		t.Errorf("pods on no node: %v %q", err, out)
	}
	if out, err := run("get", "deploy", "--field-selector", "status.replicas=0"); err == nil || !strings.Contains(out, `"status.replicas" is not a known field selector`) {
		t.Errorf("deployments by status.replicas: %v %q, want kube's error", err, out)
	}
}
