package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdmissionConfig reads both webhook plugins' kubeconfigs, inline
// and by path, and PodSecurity's configuration, and refuses what kube
// refuses.
func TestAdmissionConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	kubeconfig := write("kc", "users:\n- {name: 'h:8443', user: {token: t}}\n")
	write("mutating.yaml", "kind: WebhookAdmissionConfiguration\nkubeConfigFile: "+kubeconfig+"\n")
	got, err := readAdmissionConfig(write("ok.yaml", `kind: AdmissionConfiguration
plugins:
- {name: ValidatingAdmissionWebhook, configuration: {kind: WebhookAdmissionConfiguration, kubeConfigFile: `+kubeconfig+`}}
- {name: MutatingAdmissionWebhook, path: mutating.yaml}
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline}
    exemptions: {namespaces: [kube-system]}
`))
	creds := got.webhookCredentials
	if err != nil || creds[0].For("h:8443").Token != "t" || creds[1].For("h:8443").Token != "t" {
		t.Fatalf("got %v, %v", got, err)
	}
	if ps := got.podSecurity; ps == nil || ps.Defaults.Enforce.String() != "baseline:latest" || ps.Exemptions.Namespaces[0] != "kube-system" {
		t.Errorf("PodSecurity configuration %+v", ps)
	}
	for content, want := range map[string]string{
		"kind: Other\n": `kind "Other", want AdmissionConfiguration`,
		"kind: AdmissionConfiguration\nplugins:\n- {name: ValidatingAdmissionWebhook, configuration: {kubeConfigFile: kc}}\n":                                                                         `kubeConfigFile: Invalid value: "kc": must be an absolute file path`,
		"kind: AdmissionConfiguration\nplugins:\n- {name: MutatingAdmissionWebhook, path: missing.yaml}\n":                                                                                            "no such file",
		"kind: AdmissionConfiguration\nplugins:\n- {name: PodSecurity, configuration: {apiVersion: pod-security.admission.config.k8s.io/v1, kind: PodSecurityConfiguration, defaults: {audit: x}}}\n": `plugin PodSecurity: defaults.audit: Invalid value: "x"`,
	} {
		if _, err := readAdmissionConfig(write("bad.yaml", content)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", content, err, want)
		}
	}
}
