package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/audit/audittest"
)

// TestPodSecurity drives kube's PodSecurity admission from the binary: a
// namespace's labels refuse a privileged pod with kube's message, warn of
// a deployment's template and audit it; labelling a namespace with kubectl
// warns of the pods it holds that violate the new level.
func TestPodSecurity(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	s := startServer(t, "--audit-policy-file", writeFile(t, dir, "policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"),
		"--audit-log-path", logPath)
	call := func(method, path, body string, want int) (map[string]any, []string) {
		t.Helper()
		return s.expect(t, method, path, body, want)
	}
	call("POST", "/api/v1/namespaces", `{"metadata":{"name":"locked","labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`, 201)
	call("POST", "/api/v1/namespaces", `{"metadata":{"name":"watched","labels":{"pod-security.kubernetes.io/warn":"baseline","pod-security.kubernetes.io/audit":"baseline"}}}`, 201)
	call("POST", "/api/v1/namespaces", `{"metadata":{"name":"open"}}`, 201)
	const privileged = `"spec":{"containers":[{"name":"c","image":"nginx","securityContext":{"privileged":true}}]}`
	const violation = `privileged (container "c" must not set securityContext.privileged=true)`

	body, _ := call("POST", "/api/v1/namespaces/locked/pods", `{"metadata":{"name":"root"},`+privileged+`}`, 403)
	if want := `pods "root" is forbidden: violates PodSecurity "baseline:latest": ` + violation; body["message"] != want || body["reason"] != "Forbidden" {
		t.Errorf("got %v, want message %q", body, want)
	}
	call("POST", "/api/v1/namespaces/locked/pods", `{"metadata":{"name":"plain"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, 201)

	_, warnings := call("POST", "/apis/apps/v1/namespaces/watched/deployments", `{"metadata":{"name":"d"},"spec":{
		"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},`+privileged+`}}}`, 201)
	if want := `299 - "would violate PodSecurity \"baseline:latest\": ` + strings.ReplaceAll(violation, `"`, `\"`) + `"`; len(warnings) != 1 || warnings[0] != want {
		t.Errorf("Warning %q, want %q", warnings, want)
	}
	waitFor(t, "the deployment's audit annotation", func() bool {
		for _, ev := range audittest.ReadLog(t, logPath) {
			if ev.ObjectRef != nil && ev.ObjectRef.Resource == "deployments" && ev.Stage == "ResponseComplete" {
				return ev.Annotations["pod-security.kubernetes.io/audit-violations"] == `would violate PodSecurity "baseline:latest": `+violation
			}
		}
		return false
	})

	call("POST", "/api/v1/namespaces/open/pods", `{"metadata":{"name":"root"},`+privileged+`}`, 201)
	call("POST", "/api/v1/namespaces/open/pods", `{"metadata":{"name":"root2"},`+privileged+`}`, 201)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	out, err := exec.CommandContext(context.Background(), kubectl, "--server", s.URL, "label", "namespace", "open",
		"pod-security.kubernetes.io/enforce=baseline").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl label: %v\n%s", err, out)
	}
	for _, want := range []string{
		`Warning: existing pods in namespace "open" violate the new PodSecurity enforce level "baseline:latest"`,
		`Warning: root (and 1 other pod): privileged`,
		`namespace/open labeled`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl label printed\n%s\nwant %q in it", out, want)
		}
	}
	out, err = exec.CommandContext(context.Background(), kubectl, "--server", s.URL, "label", "namespace", "open", "--overwrite",
		"pod-security.kubernetes.io/enforce=strict").CombinedOutput()
	if want := `Invalid value: "strict": must be one of privileged, baseline, restricted`; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("kubectl label with a bad level: %v\n%s\nwant %q", err, out, want)
	}
}

// TestPodSecurityConfiguration starts the binary with kube's
// AdmissionConfiguration for PodSecurity: its defaults apply to a
// namespace without labels, its exempt namespace is not checked.
func TestPodSecurityConfiguration(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, "--admission-control-config-file", writeFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline}
    exemptions: {namespaces: [tools]}
`))
	const pod = `{"metadata":{"name":"host"},"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"nginx"}]}}`
	for _, ns := range []string{"apps", "tools"} {
		s.expect(t, "POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`, 201)
	}
	body, _ := s.expect(t, "POST", "/api/v1/namespaces/apps/pods", pod, 403)
	if want := `pods "host" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	s.expect(t, "POST", "/api/v1/namespaces/tools/pods", pod, 201)
}

// expect sends a request with a JSON body to s and returns the decoded
// answer and its Warning headers, failing t unless the code is want.
func (s *server) expect(t *testing.T, method, path, body string, want int) (map[string]any, []string) {
	t.Helper()
	resp := s.do(t, "", method, path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var obj map[string]any
	_ = json.Unmarshal(b, &obj)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	return obj, resp.Header.Values("Warning")
}
