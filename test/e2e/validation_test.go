package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadDeploymentWithKubectl applies Deployments kube rejects and checks
// that kubectl shows kube's message and that nothing is stored.
func TestBadDeploymentWithKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	s := startServer(t)
	tests := []struct {
		name, manifest string
		want           []string
	}{
		{"selector", `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad-selector}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
`, []string{"The Deployment \"bad-selector\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"}},
		{"containers", `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad-containers}
spec:
  replicas: -1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Never
      containers:
      - {name: Web_1, image: "nginx:1.27", volumeMounts: [{name: data, mountPath: /data}]}
      - {name: Web_1}
`, []string{
			`The Deployment "bad-containers" is invalid: `,
			`* spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
			`* spec.template.spec.containers[0].name: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`* spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"`,
			`* spec.template.spec.containers[1].image: Required value`,
			`* spec.template.spec.containers[1].name: Duplicate value: "Web_1"`,
			`* spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "d.yaml")
			if err := os.WriteFile(file, []byte(tt.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), lineTimeout)
			defer cancel()
			out, err := exec.CommandContext(ctx, kubectl, "--server", s.URL, "-n", "default", "apply", "-f", file).CombinedOutput()
			if err == nil {
				t.Fatalf("kubectl apply of a bad Deployment succeeded:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("kubectl apply: no %q in\n%s", w, out)
				}
			}
			if code, _ := s.request(t, "GET", "/apis/apps/v1/namespaces/default/deployments/bad-"+tt.name, "", ""); code != http.StatusNotFound {
				t.Errorf("rejected deployment is stored: GET answers %d", code)
			}
		})
	}
}
