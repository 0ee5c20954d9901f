package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/listwatch/listwatch/client"
)

// TestConfigMapMirror runs the example controller against the binary: a
// labelled ConfigMap is copied into the namespace its label names, the copy
// follows the source's data, and goes when the source goes.
func TestConfigMapMirror(t *testing.T) {
	s := startServer(t)
	runMirror(t, s.URL)
	ctx := context.Background()
	sources := client.NewResource[*configMap](s.client(t), configMaps, "default")
	copies := client.NewResource[client.Unstructured](s.client(t), configMaps, "kube-public")

	src := newConfigMap("settings", map[string]string{"color": "blue"})
	src.Labels = map[string]string{"mirror.listwatch.io/to": "kube-public"}
	src, err := sources.Create(ctx, src, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the copy", func() bool { return mirrored(ctx, copies, "blue") })

	src.Data["color"] = "green"
	if _, err := sources.Update(ctx, src, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the copy to follow the source", func() bool { return mirrored(ctx, copies, "green") })

	if err := sources.Delete(ctx, "settings", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the copy to go", func() bool {
		_, err := copies.Get(ctx, "settings")
		return client.IsNotFound(err)
	})
}

// mirrored reports whether kube-public holds a copy of default/settings
// whose color is color.
func mirrored(ctx context.Context, copies *client.Resource[client.Unstructured], color string) bool {
	m, err := copies.Get(ctx, "settings")
	if err != nil {
		return false
	}
	data, _ := m["data"].(map[string]any)
	return m.GetAnnotations()["mirror.listwatch.io/from"] == "default/settings" && data["color"] == color
}

// runMirror builds examples/configmap-mirror and runs it against url until
// the test ends.
func runMirror(t *testing.T, url string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "configmap-mirror")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/listwatch/listwatch/examples/configmap-mirror").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--server", url, "--workers", "1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("configmap-mirror: %v", err)
		}
		if t.Failed() {
			t.Logf("configmap-mirror log:\n%s", fmt.Sprint(&logs))
		}
	})
}
