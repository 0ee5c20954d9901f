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

// TestInvalidBuiltinsWithKubectl applies Deployments, a Service, a
// PersistentVolumeClaim, a StatefulSet, an Ingress, a NetworkPolicy, a Job
// and a CronJob kube rejects and checks that kubectl shows kube's
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
		{"statefulset", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: bad-set}
spec:
  serviceName: Web_1
  podManagementPolicy: Sometimes
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, volumeMounts: [{name: data, mountPath: /data}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: "0"}}}
`, []string{
			`The StatefulSet "bad-set" is invalid: `,
			`* spec.podManagementPolicy: Invalid value: "Sometimes": must be 'OrderedReady' or 'Parallel'`,
			`* spec.serviceName: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of`,
			`* spec.volumeClaimTemplates[0].spec.resources[storage]: Invalid value: "0": must be greater than zero`,
		}, "/apis/apps/v1/namespaces/default/statefulsets/bad-set"},
		{"ingress", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad-ingress}
spec:
  rules:
  - host: "*.*.example.com"
    http:
      paths:
      - {path: relative, pathType: Prefix, backend: {service: {name: web}}}
`, []string{
			`The Ingress "bad-ingress" is invalid: `,
			`* spec.rules[0].host: Invalid value: "*.*.example.com": a wildcard DNS-1123 subdomain must start with '*.'`,
			`* spec.rules[0].http.paths[0].path: Invalid value: "relative": must be an absolute path`,
			`* spec.rules[0].http.paths[0].backend: Required value: port name or number is required`,
		}, "/apis/networking.k8s.io/v1/namespaces/default/ingresses/bad-ingress"},
		{"networkpolicy", `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad-policy}
spec:
  podSelector: {}
  ingress:
  - from: [{ipBlock: {cidr: 10.0.0.0/8, except: [11.0.0.0/16]}}]
    ports: [{port: 100, endPort: 99}]
`, []string{
			`The NetworkPolicy "bad-policy" is invalid: `,
			"* spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`",
			"* spec.ingress[0].ports[0].endPort: Invalid value: 99: must be greater than or equal to `port`",
		}, "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies/bad-policy"},
		{"job", `apiVersion: batch/v1
kind: Job
metadata: {name: bad-job}
spec:
  backoffLimitPerIndex: 1
  template:
    spec:
      containers: [{name: pi, image: perl}]
`, []string{
			`The Job "bad-job" is invalid: `,
			`* spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`,
			`* spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`,
		}, "/apis/batch/v1/namespaces/default/jobs/bad-job"},
		{"cronjob", `apiVersion: batch/v1
kind: CronJob
metadata: {name: bad-cron}
spec:
  schedule: "61 * * * *"
  timeZone: Mars/Olympus
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
`, []string{
			`The CronJob "bad-cron" is invalid: `,
			`* spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`,
			`* spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`,
		}, "/apis/batch/v1/namespaces/default/cronjobs/bad-cron"},
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
