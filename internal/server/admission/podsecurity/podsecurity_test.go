package podsecurity

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyOf checks how labels set a policy over the defaults (the
// interop tests prove the checks and the configuration equal kube's).
func TestPolicyOf(t *testing.T) {
	baseline := LevelVersion{LevelBaseline, LatestVersion}
	defaults := Policy{Enforce: baseline, Audit: baseline, Warn: baseline}
	for _, tc := range []struct {
		labels map[string]string
		want   string
		errs   string
	}{
		{labels: nil, want: "baseline:latest baseline:latest baseline:latest"},
		{labels: map[string]string{EnforceLevelLabel: "restricted", EnforceVersionLabel: "v1.25"},
			want: "restricted:v1.25 baseline:latest restricted:v1.25"},
		{labels: map[string]string{EnforceLevelLabel: "restricted", WarnVersionLabel: "v1.30"},
			want: "restricted:latest baseline:latest restricted:v1.30"},
		{labels: map[string]string{EnforceLevelLabel: "restricted", WarnLevelLabel: "baseline"},
			want: "restricted:latest baseline:latest baseline:latest"},
		{labels: map[string]string{EnforceLevelLabel: "strict", AuditLevelLabel: "x", WarnVersionLabel: "1.30"},
			want: "restricted:latest privileged:latest baseline:latest",
			errs: `[metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, ` +
				`metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "x": must be one of privileged, baseline, restricted, ` +
				`metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"]`},
	} {
		p, errs := PolicyOf(tc.labels, defaults)
		if got := fmt.Sprint(p.Enforce, " ", p.Audit, " ", p.Warn); got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.labels, got, tc.want)
		}
		if got := fmt.Sprint(errs.ToAggregate()); tc.errs != "" && got != tc.errs || tc.errs == "" && len(errs) > 0 {
			t.Errorf("%v: errors %s, want %s", tc.labels, got, tc.errs)
		}
	}
}

// TestEvaluate checks the order of checks, restricted's overrides of
// baseline checks and a check that changed with the version.
func TestEvaluate(t *testing.T) {
	pod := func(s string) *Pod {
		var obj map[string]any
		if err := json.Unmarshal([]byte(s), &obj); err != nil {
			t.Fatal(err)
		}
		p, err := Decode(obj)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := pod(`{"spec": {"hostNetwork": true, "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_wmem"}]},
		"volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}],
		"containers": [{"name": "c", "image": "i", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}}`)
	for _, tc := range []struct {
		lv   LevelVersion
		want []string
	}{
		{LevelVersion{LevelPrivileged, LatestVersion}, nil},
		{LevelVersion{LevelBaseline, LatestVersion}, []string{"non-default capabilities", "host namespaces", "hostPath volumes"}},
		{LevelVersion{LevelBaseline, Version{Minor: 31}}, []string{"non-default capabilities", "host namespaces", "hostPath volumes", "forbidden sysctls"}},
		{LevelVersion{LevelRestricted, LatestVersion}, []string{"host namespaces", "allowPrivilegeEscalation != false",
			"unrestricted capabilities", "restricted volume types", "runAsNonRoot != true", "seccompProfile"}},
		{LevelVersion{LevelRestricted, Version{Minor: 21}}, []string{"non-default capabilities", "host namespaces",
			"forbidden sysctls", "allowPrivilegeEscalation != false", "restricted volume types", "runAsNonRoot != true", "seccompProfile"}},
	} {
		if diff := cmp.Diff(tc.want, Evaluate(tc.lv, bad).Reasons); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.lv, diff)
		}
	}
	r := Evaluate(LevelVersion{LevelRestricted, LatestVersion}, bad)
	const want = `host namespaces (hostNetwork=true), allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]; container "c" must not include "NET_ADMIN" in securityContext.capabilities.add), ` +
		`restricted volume types (volume "h" uses restricted volume type "hostPath"), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if got := r.Detail(); got != want {
		t.Errorf("details:\n got %s\nwant %s", got, want)
	}
}

// TestLoadConfig checks a configuration's defaults and refusals.
func TestLoadConfig(t *testing.T) {
	const head = "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
	c, err := LoadConfig([]byte(head + "defaults: {enforce: baseline, warn-version: v1.30}\nexemptions: {usernames: [ci]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c); got != "&{{baseline:latest privileged:latest privileged:v1.30} {[] [ci] []}}" {
		t.Errorf("got %s", got)
	}
	for config, want := range map[string]string{
		head + "defaults: {enforce: strict}\n":         `defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted`,
		head + "exemptions: {namespaces: [a, a]}\n":    `exemptions.namespaces[1]: Duplicate value: "a"`,
		head + "exemptions: {runtimeClasses: [A_b]}\n": `exemptions.runtimeClasses[0]: Invalid value: "A_b": a lowercase RFC 1123 subdomain must consist of`,
		head + "defaults: {enforce: baseline, x: 1}\n": `strict decoding error: unknown field "defaults.x"`,
		"kind: PodSecurityConfiguration\n":             "expected PodSecurityConfiguration",
	} {
		if _, err := LoadConfig([]byte(config)); err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("%q: got %v, want %s...", config, err, want)
		}
	}
}
