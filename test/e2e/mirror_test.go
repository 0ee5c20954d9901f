package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/events"
	"github.com/listwatch/listwatch/client/leaderelection"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

const (
	mirrorToLabel        = "mirror.listwatch.io/to"
	mirrorFromAnnotation = "mirror.listwatch.io/from"
)

// TestConfigMapMirror runs the example controller against the binary: a
// labelled ConfigMap is copied, data and binaryData, into the namespace its
// label names; the copy follows the source, keeps a label someone else put
// on it (server-side apply), comes back when deleted, goes when the label
// is removed and when the source goes; a ConfigMap that is not a copy is
// never overwritten; events on the source say what was done; its probes
// and metrics answer.
func TestConfigMapMirror(t *testing.T) {
	s := startServer(t)
	metricsAddr := freeAddr(t)
	runMirror(t, "--server", s.URL, "--workers", "1", "--metrics-addr", metricsAddr)
	ctx := t.Context()
	c := s.client(t)
	sources := client.NewResource[client.Unstructured](c, configMaps, "default")
	copies := sources.InNamespace("kube-public")

	src := createMirrorSource(ctx, t, sources)
	waitFor(t, "the copy", func() bool { return mirrored(ctx, copies, "blue") })
	if got := mirrorCopy(ctx, t, copies)["binaryData"]; fmt.Sprint(got) != fmt.Sprint(src["binaryData"]) {
		t.Errorf("binaryData of the copy: %v, want %v", got, src["binaryData"])
	}

	// Someone else labels the copy: the next apply leaves the label alone.
	if _, err := copies.Patch(ctx, "settings", client.MergePatchType, []byte(`{"metadata":{"labels":{"team":"web"}}}`), client.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	patchMirrorSource(ctx, t, sources, `{"data":{"color":"green"}}`)
	waitFor(t, "the copy to follow the source", func() bool { return mirrored(ctx, copies, "green") })
	if labels := mirrorCopy(ctx, t, copies).GetLabels(); labels["team"] != "web" {
		t.Errorf("labels of the copy after a reconcile: %v, want team=web kept", labels)
	}

	// A deleted copy is drift, undone.
	if err := copies.Delete(ctx, "settings", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted copy to come back", func() bool { return mirrored(ctx, copies, "green") })

	patchMirrorSource(ctx, t, sources, `{"metadata":{"labels":{"`+mirrorToLabel+`":null}}}`)
	waitFor(t, "the copy to go with the label", func() bool { return copyGone(ctx, copies) })
	patchMirrorSource(ctx, t, sources, `{"metadata":{"labels":{"`+mirrorToLabel+`":"kube-public"}}}`)
	waitFor(t, "the copy to come back with the label", func() bool { return mirrored(ctx, copies, "green") })
	if err := sources.Delete(ctx, "settings", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the copy to go with the source", func() bool { return copyGone(ctx, copies) })

	waitFor(t, "a Mirrored event on the source", func() bool {
		return len(mirrorEvents(ctx, t, c, "settings", "Mirrored")) > 0
	})

	// A ConfigMap that is not a copy is left alone, and the source says why.
	taken := client.Unstructured{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "taken"}, "data": map[string]any{"owner": "someone"}}
	if _, err := copies.Create(ctx, taken, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	taken["metadata"] = map[string]any{"name": "taken", "labels": map[string]any{mirrorToLabel: "kube-public"}}
	taken["data"] = map[string]any{"owner": "mirror"}
	if _, err := sources.Create(ctx, taken, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a Failed event on the source", func() bool { return len(mirrorEvents(ctx, t, c, "taken", "Failed")) > 0 })
	if got, err := copies.Get(ctx, "taken"); err != nil || fmt.Sprint(got["data"]) != "map[owner:someone]" || got.GetAnnotations()[mirrorFromAnnotation] != "" {
		t.Errorf("kube-public/taken after the mirror's attempt: %v, %v", got, err)
	}
	for path, want := range map[string]string{"/readyz": "ok", "/healthz": "ok", "/metrics": `controller_runtime_reconcile_total{controller="configmap-mirror",result="success"}`} {
		if body := string(get(t, ctx, "http://"+metricsAddr+path)); !strings.Contains(body, want) {
			t.Errorf("GET %s: %q lacks %q", path, body, want)
		}
	}
}

// TestConfigMapMirrorTLS runs the example with a kubeconfig naming a
// server on TLS, its CA and a bearer token.
func TestConfigMapMirrorTLS(t *testing.T) {
	ca := authntest.NewCA(t)
	tokens := tokenFile(t, `mirror-token,mirror,1,"system:masters"`)
	s := startTLSServer(t, ca, "--token-auth-file", tokens)
	kubeconfig := writeKubeconfig(t, s.URL, s.caFile, `{token: mirror-token}`)
	runMirror(t, "--kubeconfig", kubeconfig)
	ctx := t.Context()
	sources := kubeconfigClient(t, kubeconfig)
	src := newConfigMap("settings", map[string]string{"color": "blue"})
	src.Labels = map[string]string{mirrorToLabel: "kube-public"}
	if _, err := sources.Create(ctx, src, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	copies := sources.InNamespace("kube-public")
	waitFor(t, "the copy", func() bool {
		m, err := copies.Get(ctx, "settings")
		return err == nil && m.Annotations[mirrorFromAnnotation] == "default/settings" && m.Data["color"] == "blue"
	})
}

// TestConfigMapMirrorLeaderElection runs two replicas with --leader-elect:
// only the Lease's holder writes (its events name it), and the other takes
// over when the holder is killed.
func TestConfigMapMirrorLeaderElection(t *testing.T) {
	s := startServer(t)
	ctx := t.Context()
	c := s.client(t)
	replicas := map[string]*mirrorProcess{}
	for range 2 {
		p := runMirror(t, "--server", s.URL, "--leader-elect")
		replicas[p.identity] = p
	}
	leases := client.NewResource[*leaderelection.Lease](c, leaderelection.LeasesResource, "default")
	holder := func() string {
		l, err := leases.Get(ctx, "configmap-mirror")
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var first string
	waitFor(t, "a replica to lead", func() bool { first = holder(); return replicas[first] != nil })

	sources := client.NewResource[client.Unstructured](c, configMaps, "default")
	copies := sources.InNamespace("kube-public")
	createMirrorSource(ctx, t, sources)
	waitFor(t, "the copy", func() bool { return mirrored(ctx, copies, "blue") })
	waitFor(t, "the leader's event", func() bool { return len(mirrorEvents(ctx, t, c, "settings", "Mirrored")) > 0 })
	for _, ev := range mirrorEvents(ctx, t, c, "settings", "Mirrored") {
		if ev.ReportingInstance != first {
			t.Errorf("event by %q, but %q leads", ev.ReportingInstance, first)
		}
	}

	replicas[first].kill(t)
	var second string
	waitFor(t, "the other replica to take over", func() bool { second = holder(); return second != first && replicas[second] != nil })
	patchMirrorSource(ctx, t, sources, `{"data":{"color":"green"}}`)
	waitFor(t, "the new leader to update the copy", func() bool { return mirrored(ctx, copies, "green") })
	waitFor(t, "the new leader's event", func() bool {
		for _, ev := range mirrorEvents(ctx, t, c, "settings", "Mirrored") {
			if ev.ReportingInstance == second {
				return true
			}
		}
		return false
	})
}

// TestConfigMapMirrorExitsOnLostLease: a leader whose Lease another takes
// stops and exits with an error, as kube's controllers do.
func TestConfigMapMirrorExitsOnLostLease(t *testing.T) {
	s := startServer(t)
	ctx := t.Context()
	p := runMirror(t, "--server", s.URL, "--leader-elect")
	leases := client.NewResource[*leaderelection.Lease](s.client(t), leaderelection.LeasesResource, "default")
	waitFor(t, "the replica to lead", func() bool {
		l, err := leases.Get(ctx, "configmap-mirror")
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == p.identity
	})
	err := client.RetryOnConflict(ctx, client.DefaultBackoff, func() error {
		l, err := leases.Get(ctx, "configmap-mirror")
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = new("intruder")
		l.Spec.LeaseDurationSeconds = new(int32(3600))
		_, err = leases.Update(ctx, l, client.WriteOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := p.wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("after losing the lease: %v, want exit status 1", err)
	}
}

// createMirrorSource creates default/settings, to be copied into kube-public,
// with data and binaryData, and returns what it sent.
func createMirrorSource(ctx context.Context, t *testing.T, sources *client.Resource[client.Unstructured]) client.Unstructured {
	t.Helper()
	src := client.Unstructured{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata":   map[string]any{"name": "settings", "labels": map[string]any{mirrorToLabel: "kube-public"}},
		"data":       map[string]any{"color": "blue"},
		"binaryData": map[string]any{"logo": base64.StdEncoding.EncodeToString([]byte{0, 1, 2})},
	}
	if _, err := sources.Create(ctx, src, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return src
}

// mirrored reports whether kube-public holds a copy of default/settings
// whose color is color.
func mirrored(ctx context.Context, copies *client.Resource[client.Unstructured], color string) bool {
	m, err := copies.Get(ctx, "settings")
	if err != nil {
		return false
	}
	data, _ := m["data"].(map[string]any)
	return m.GetAnnotations()[mirrorFromAnnotation] == "default/settings" && data["color"] == color
}

// copyGone reports whether kube-public's copy is gone.
func copyGone(ctx context.Context, copies *client.Resource[client.Unstructured]) bool {
	_, err := copies.Get(ctx, "settings")
	return client.IsNotFound(err)
}

// mirrorCopy reads kube-public's copy.
func mirrorCopy(ctx context.Context, t *testing.T, copies *client.Resource[client.Unstructured]) client.Unstructured {
	t.Helper()
	m, err := copies.Get(ctx, "settings")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// patchMirrorSource merge-patches default/settings.
func patchMirrorSource(ctx context.Context, t *testing.T, sources *client.Resource[client.Unstructured], patch string) {
	t.Helper()
	if _, err := sources.Patch(ctx, "settings", client.MergePatchType, []byte(patch), client.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// mirrorEvents lists the controller's events of reason about default/name.
func mirrorEvents(ctx context.Context, t *testing.T, c *client.Client, name, reason string) []*events.Event {
	t.Helper()
	evs, _, err := client.NewResource[*events.Event](c, client.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, "default").
		ListAll(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Event
	for _, ev := range evs {
		if ev.Reason == reason && ev.Regarding.Name == name && ev.ReportingController == "listwatch.io/configmap-mirror" {
			out = append(out, ev)
		}
	}
	return out
}

var (
	buildMirror sync.Once
	mirrorBin   string
	mirrorErr   error
)

// mirrorProcess is a running configmap-mirror.
type mirrorProcess struct {
	identity string // its leader election identity
	cmd      *exec.Cmd
	done     chan struct{} // closed when it has exited
	err      error         // its exit status, once done
}

// runMirror runs examples/configmap-mirror (built once) with args; when
// the test ends it is stopped by SIGTERM, on which it must exit cleanly,
// unless it has exited already.
func runMirror(t *testing.T, args ...string) *mirrorProcess {
	t.Helper()
	buildMirror.Do(func() {
		mirrorBin = filepath.Join(filepath.Dir(binary), "configmap-mirror")
		var out []byte
		out, mirrorErr = exec.Command("go", "build", "-o", mirrorBin, "github.com/listwatch/listwatch/examples/configmap-mirror").CombinedOutput()
		if mirrorErr != nil {
			mirrorErr = fmt.Errorf("go build: %w\n%s", mirrorErr, out)
		}
	})
	if mirrorErr != nil {
		t.Fatal(mirrorErr)
	}
	var logs bytes.Buffer
	cmd := exec.Command(mirrorBin, args...)
	cmd.Env = cliEnv(t)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	p := &mirrorProcess{identity: fmt.Sprintf("%s_%d", host, cmd.Process.Pid), cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := p.wait(); err != nil {
				t.Errorf("configmap-mirror on SIGTERM: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("configmap-mirror %s log:\n%s", p.identity, logs.String())
		}
	})
	return p
}

// wait waits up to stopTimeout for p to exit and returns its exit error.
func (p *mirrorProcess) wait() error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("still running after %v: killed", stopTimeout)
	}
}

// kill kills p at once, as a crash would, and reaps it.
func (p *mirrorProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}
