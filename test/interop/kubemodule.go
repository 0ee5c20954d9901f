package interop

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// KubeModule returns the directory of module k8s.io/kubernetes at version,
// from the module cache or the module proxy.
func KubeModule(t testing.TB, version string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", "k8s.io/kubernetes@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %v %s", version, err, out)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	return m.Dir
}
