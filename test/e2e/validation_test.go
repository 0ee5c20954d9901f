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

// TestInvalidBuiltinsWithKubectl applies Deployments, a Service and a
// PersistentVolumeClaim kube rejects and checks that kubectl shows kube's
// message and that nothing is stored.
func TestInvalidBuiltinsWithKubectl(t *testing.T) {
	kubectl := needKubectl(t)
	s := startServer(t)
	tests := []struct {
		name, manifest string
		want           []string
		path           string // where the object would be
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
`, []string{"The Deployment \"bad-selector\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"},
			"/apis/apps/v1/namespaces/default/deployments/bad-selector"},
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
		}, "/apis/apps/v1/namespaces/default/deployments/bad-containers"},
		{"service", `apiVersion: v1
kind: Service
metadata: {name: bad-service}
spec:
  type: ClusterIP
  selector: {app: web}
  ports: [{port: 80, nodePort: 30080}, {port: 80, targetPort: http--x}]
`, []string{
			`The Service "bad-service" is invalid: `,
			`* spec.ports[0].name: Required value`,
			`* spec.ports[1].name: Required value`,
			`* spec.ports[1].targetPort: Invalid value: "http--x": must not contain consecutive hyphens`,
			"* spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
			`* spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`,
		}, "/api/v1/namespaces/default/services/bad-service"},
		{"claim", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: bad-claim}
spec:
  accessModes: [ReadWriteOncePod, ReadWriteOnce]
  resources: {requests: {storage: "0"}}
`, []string{
			`The PersistentVolumeClaim "bad-claim" is invalid: `,
			`* spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes`,
			`* spec.resources[storage]: Invalid value: "0": must be greater than zero`,
		}, "/api/v1/namespaces/default/persistentvolumeclaims/bad-claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "o.yaml")
			if err := os.WriteFile(file, []byte(tt.manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), lineTimeout)
			defer cancel()
			out, err := exec.CommandContext(ctx, kubectl, "--server", s.URL, "-n", "default", "apply", "-f", file).CombinedOutput()
			if err == nil {
				t.Fatalf("kubectl apply of an invalid object succeeded:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("kubectl apply: no %q in\n%s", w, out)
				}
			}
			if code, _ := s.request(t, "GET", tt.path, "", ""); code != http.StatusNotFound {
				t.Errorf("rejected object is stored: GET answers %d", code)
			}
		})
	}
}
