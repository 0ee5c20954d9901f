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

	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/audit/audittest"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/readyz", "/healthz", "/livez"]
- level: RequestResponse
  resources:
  - group: ""
    resources: [configmaps, secrets]
- level: Metadata
`

// TestAuditLog runs the binary with an audit policy and log, drives it
// with kubectl (when installed) and our CLI, and reads the log it wrote.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := writeFile(t, dir, "policy.yaml", auditPolicy), filepath.Join(dir, "logs", "audit.log")
	s := startServer(t, "--audit-policy-file", policy, "--audit-log-path", logPath)
	w := follow(t, s.URL, "get", "cm", "-w", "-o", "name")
	s.run(t, "apply", "-f", writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {color: blue}\n"))
	w.expectLines(t, "^configmap/web$")

	var auditID string
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		for _, args := range [][]string{
			{"create", "secret", "generic", "s", "--from-literal=password=hunter2"},
			{"get", "secret", "s", "-o", "yaml"},
		} {
			cmd := exec.CommandContext(context.Background(), kubectl, append([]string{"--server", s.URL, "-n", "default"}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		out, err := exec.CommandContext(context.Background(), kubectl, "--server", s.URL, "-n", "default", "get", "cm", "web", "-v=8").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get -v=8: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`(?i)Audit-Id: ([0-9a-f-]+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("kubectl saw no Audit-Id header:\n%s", out)
		}
		auditID = string(m[1])
	}
	if code, body := s.request(t, "GET", "/metrics", "", ""); code != 200 || !regexp.MustCompile(`(?m)^apiserver_audit_event_total [1-9]`).Match(body) ||
		!strings.Contains(string(body), `apiserver_audit_error_total{plugin="log"} 0`) {
		t.Errorf("/metrics: %d, want the audit counters:\n%s", code, body)
	}
	s.stop(t) // ends the watch and closes the log

	evs := audittest.ReadLog(t, logPath)
	var applied, watched, read []audit.Event
	for _, ev := range evs {
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.Stage == audit.StageRequestReceived {
			t.Errorf("event %+v", ev)
		}
		switch {
		case ev.Verb == "patch" && ev.ObjectRef != nil && ev.ObjectRef.Name == "web":
			applied = append(applied, ev)
		case ev.Verb == "watch":
			watched = append(watched, ev)
		case ev.AuditID == auditID:
			read = append(read, ev)
		}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "secrets" && (ev.RequestObject != nil || ev.ResponseObject != nil) {
			t.Errorf("a secret's objects logged: %s %s", ev.RequestObject, ev.ResponseObject)
		}
	}
	if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "aHVudGVyMg") {
		t.Error("the secret's data is in the audit log")
	}
	if len(applied) != 1 || applied[0].Level != audit.LevelRequestResponse || !strings.Contains(string(applied[0].RequestObject), `"color":"blue"`) ||
		!strings.Contains(string(applied[0].ResponseObject), `"uid"`) || applied[0].ResponseStatus.Code != 201 {
		t.Errorf("apply's events: %+v", applied)
	}
	// Each watch request (the client resumes one its server ended) has a
	// ResponseStarted and then a ResponseComplete.
	stages := map[string][]audit.Stage{}
	for _, ev := range watched {
		stages[string(ev.AuditID)] = append(stages[string(ev.AuditID)], ev.Stage)
	}
	for id, got := range stages {
		if !slices.Equal(got, []audit.Stage{audit.StageResponseStarted, audit.StageResponseComplete}) {
			t.Errorf("watch %s's stages: %v", id, got)
		}
	}
	if len(stages) == 0 {
		t.Error("no watch in the audit log")
	}
	if auditID != "" && (len(read) != 1 || read[0].Verb != "get" || !strings.HasPrefix(read[0].UserAgent, "kubectl")) {
		t.Errorf("kubectl's get, Audit-ID %s: %+v", auditID, read)
	}
	if info, err := os.Stat(logPath); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode: %v", err)
	}
}

// TestAuditBadFlags: serve refuses a bad policy or log flags, saying why.
func TestAuditBadFlags(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n")
	bad := writeFile(t, dir, "bad.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n")
	log := filepath.Join(dir, "audit.log")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--audit-policy-file", bad, "--audit-log-path", log}, `loading audit policy file: rules[0].level: Unsupported value: "Everything"`},
		{[]string{"--audit-policy-file", filepath.Join(dir, "missing.yaml"), "--audit-log-path", log}, "missing.yaml: no such file"},
		{[]string{"--audit-policy-file", good, "--audit-log-path", log, "--audit-log-truncate-enabled=false"}, "every audit event is bounded"},
		{[]string{"--audit-policy-file", good, "--audit-log-path", log, "--audit-log-truncate-max-event-size", "0"}, "must be a positive number"},
		{[]string{"--audit-policy-file", good, "--audit-log-path", log, "--audit-log-maxage", "-1"}, "can't be negative numbers"},
	} {
		args := append([]string{"serve", "--listen", freeAddr(t), "--data-dir", dir}, tt.args...)
		out, err := exec.CommandContext(t.Context(), binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("serve %v: %v, want an error containing %q:\n%s", tt.args, err, tt.want, out)
		}
	}
}

// TestAuditLogToStandardOutput: --audit-log-path - writes the events to
// standard output.
func TestAuditLogToStandardOutput(t *testing.T) {
	policy := writeFile(t, t.TempDir(), "policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata, verbs: [list]}]\n")
	s := startServer(t, "--audit-policy-file", policy, "--audit-log-path", "-")
	s.run(t, "get", "namespaces")
	s.stop(t)
	if !regexp.MustCompile(`(?m)^\{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",.*"requestURI":"/api/v1/namespaces`).MatchString(s.logs.String()) {
		t.Errorf("no event on standard output:\n%s", s.logs)
	}
}
