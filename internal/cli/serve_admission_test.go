package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebhookCredentials reads both webhook plugins' kubeconfigs, inline
// and by path, and refuses what kube refuses.
func TestWebhookCredentials(t *testing.T) {
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
	got, err := webhookCredentials(write("ok.yaml", `kind: AdmissionConfiguration
plugins:
- {name: ValidatingAdmissionWebhook, configuration: {kind: WebhookAdmissionConfiguration, kubeConfigFile: `+kubeconfig+`}}
- {name: MutatingAdmissionWebhook, path: mutating.yaml}
- {name: PodSecurity, configuration: {anything: 1}}
`))
	if err != nil || got[0].For("h:8443").Token != "t" || got[1].For("h:8443").Token != "t" {
		t.Fatalf("got %v, %v", got, err)
	}
	for content, want := range map[string]string{
		"kind: Other\n": `kind "Other", want AdmissionConfiguration`,
		"kind: AdmissionConfiguration\nplugins:\n- {name: ValidatingAdmissionWebhook, configuration: {kubeConfigFile: kc}}\n": `kubeConfigFile: Invalid value: "kc": must be an absolute file path`,
		"kind: AdmissionConfiguration\nplugins:\n- {name: MutatingAdmissionWebhook, path: missing.yaml}\n":                    "no such file",
	} {
		if _, err := webhookCredentials(write("bad.yaml", content)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", content, err, want)
		}
	}
}
