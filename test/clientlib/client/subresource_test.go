package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/cuttest"
)

var (
	deployments = client.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMaps  = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// serverResource is gvr in "default" on an in-process server.
func serverResource(t *testing.T, gvr client.GroupVersionResource) *client.Resource[client.Unstructured] {
	t.Helper()
	c, err := client.New(client.ConfigForURL(cuttest.StartServer(t).URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return client.NewResource[client.Unstructured](c, gvr, "default")
}

func parse(t *testing.T, s string) client.Unstructured {
	t.Helper()
	var u client.Unstructured
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// field is the value at path in u, printed ("<nil>" when absent).
func field(u client.Unstructured, path ...string) string {
	var v any = map[string]any(u)
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "<nil>"
		}
		v = m[k]
	}
	return fmt.Sprint(v)
}

const deployment = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
	"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
		"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}`

// TestStatusSubresource: a status write takes the status and keeps the
// spec the server has; a write of the object keeps the status.
func TestStatusSubresource(t *testing.T) {
	ctx := t.Context()
	deps := serverResource(t, deployments)
	d, err := deps.Create(ctx, parse(t, deployment), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d["spec"].(map[string]any)["replicas"] = 5
	d["status"] = map[string]any{"replicas": 1}
	got, err := deps.UpdateStatus(ctx, d, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if field(got, "status", "replicas") != "1" || field(got, "spec", "replicas") != "2" {
		t.Errorf("after UpdateStatus: status.replicas %s, spec.replicas %s, want 1 and 2 (spec kept)",
			field(got, "status", "replicas"), field(got, "spec", "replicas"))
	}
	if _, err := deps.UpdateStatus(ctx, d, client.WriteOptions{}); !client.IsConflict(err) {
		t.Errorf("UpdateStatus at a stale resourceVersion: %v, want a Conflict", err)
	}

	got, err = deps.PatchStatus(ctx, "web", client.MergePatchType, []byte(`{"status": {"readyReplicas": 1, "availableReplicas": 1}, "spec": {"replicas": 7}}`), client.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if field(got, "status", "availableReplicas") != "1" || field(got, "status", "replicas") != "1" || field(got, "spec", "replicas") != "2" {
		t.Errorf("after PatchStatus: status %s, spec.replicas %s, want availableReplicas 1, replicas 1, spec.replicas 2",
			field(got, "status"), field(got, "spec", "replicas"))
	}

	got["status"] = map[string]any{"replicas": 9}
	got, err = deps.Update(ctx, got, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if field(got, "status", "replicas") != "1" {
		t.Errorf("an update of the object set status.replicas to %s, want it kept at 1", field(got, "status", "replicas"))
	}
}

// TestScaleSubresource: the scale reads the replicas and the selector, and
// a write of it moves the object's replicas, conditionally on its
// resourceVersion.
func TestScaleSubresource(t *testing.T) {
	ctx := t.Context()
	deps := serverResource(t, deployments)
	if _, err := deps.Create(ctx, parse(t, deployment), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := deps.GetScale(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != "Scale" || s.APIVersion != "autoscaling/v1" || s.Metadata.Name != "web" || s.Spec.Replicas != 2 || s.Status.Selector != "app=web" {
		t.Fatalf("scale %+v, want an autoscaling/v1 Scale of web, 2 replicas, selector app=web", s)
	}
	stale := *s
	s.Spec.Replicas = 4
	if s, err = deps.UpdateScale(ctx, "web", s, client.WriteOptions{}); err != nil || s.Spec.Replicas != 4 {
		t.Fatalf("UpdateScale: %+v, %v, want 4 replicas", s, err)
	}
	d, err := deps.Get(ctx, "web")
	if err != nil || field(d, "spec", "replicas") != "4" {
		t.Fatalf("after UpdateScale the deployment has spec.replicas %s (%v), want 4", field(d, "spec", "replicas"), err)
	}
	stale.Spec.Replicas = 1
	if _, err := deps.UpdateScale(ctx, "web", &stale, client.WriteOptions{}); !client.IsConflict(err) {
		t.Errorf("UpdateScale at a stale resourceVersion: %v, want a Conflict", err)
	}
	if _, err := deps.GetScale(ctx, "missing"); !client.IsNotFound(err) {
		t.Errorf("GetScale of a missing object: %v, want NotFound", err)
	}
}

// TestApply: server-side apply creates, a second manager's change of a
// field the first owns conflicts unless forced, and managedFields names
// both; bad calls are refused before anything is sent.
func TestApply(t *testing.T) {
	ctx := t.Context()
	cms := serverResource(t, configMaps)
	intent := func(v string) client.Unstructured {
		return parse(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "`+v+`"}}`)
	}
	got, err := cms.Apply(ctx, "cfg", intent("a"), client.ApplyOptions{FieldManager: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if field(got, "data", "k") != "a" {
		t.Fatalf("applied data.k = %s, want a", field(got, "data", "k"))
	}
	if _, err := cms.Apply(ctx, "cfg", intent("b"), client.ApplyOptions{FieldManager: "second"}); !client.IsConflict(err) {
		t.Fatalf("apply of a field another manager owns: %v, want a Conflict", err)
	}
	got, err = cms.Apply(ctx, "cfg", intent("b"), client.ApplyOptions{FieldManager: "second", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if field(got, "data", "k") != "b" {
		t.Errorf("forced apply left data.k = %s, want b", field(got, "data", "k"))
	}
	var managers []string
	for _, m := range got.Object().Metadata()["managedFields"].([]any) {
		managers = append(managers, fmt.Sprint(m.(map[string]any)["manager"], "/", m.(map[string]any)["operation"]))
	}
	if fmt.Sprint(managers) != "[second/Apply]" {
		t.Errorf("managedFields %v, want [second/Apply] (the forced apply took the one field)", managers)
	}

	if _, err := cms.Apply(ctx, "cfg", intent("c"), client.ApplyOptions{}); err == nil {
		t.Error("apply without a field manager was sent")
	}
	noKind := parse(t, `{"metadata": {"name": "cfg"}, "data": {"k": "c"}}`)
	if _, err := cms.Apply(ctx, "cfg", noKind, client.ApplyOptions{FieldManager: "first"}); err == nil {
		t.Error("apply without apiVersion and kind was sent")
	}
}

// TestRetryOnConflict: a read-modify-write that loses a race to another
// writer is run again and succeeds.
func TestRetryOnConflict(t *testing.T) {
	ctx := t.Context()
	cms := serverResource(t, configMaps)
	if _, err := cms.Create(ctx, parse(t, `{"metadata": {"name": "n"}, "data": {"count": "0"}}`), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		attempts++
		cm, err := cms.Get(ctx, "n")
		if err != nil {
			return err
		}
		if attempts == 1 { // another writer gets in between the read and the write
			other := parse(t, `{"metadata": {"name": "n"}, "data": {"count": "10"}}`)
			if _, err := cms.Update(ctx, other, client.WriteOptions{}); err != nil {
				return fmt.Errorf("the other writer: %w", err)
			}
		}
		cm["data"].(map[string]any)["count"] = field(cm, "data", "count") + "+1"
		_, err = cms.Update(ctx, cm, client.WriteOptions{})
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("RetryOnConflict: %v after %d attempts, want success after 2", err, attempts)
	}
	if cm, err := cms.Get(ctx, "n"); err != nil || field(cm, "data", "count") != "10+1" {
		t.Errorf("count %s (%v), want 10+1: the retry read the other writer's value", field(cm, "data", "count"), err)
	}
}

func TestRetryOnConflictGivesUp(t *testing.T) {
	conflict := &api.StatusError{Status: api.NewStatus(409, api.StatusReasonConflict, "stale")}
	calls := 0
	start := time.Now()
	err := client.RetryOnConflict(t.Context(), client.DefaultBackoff, func() error { calls++; return conflict })
	if !errors.Is(err, conflict) || calls != client.DefaultBackoff.Steps {
		t.Errorf("always conflicting: %v after %d calls, want the conflict after %d", err, calls, client.DefaultBackoff.Steps)
	}
	// 10 + 50 + 250 ms, each up to 10% longer.
	if took := time.Since(start); took < 310*time.Millisecond {
		t.Errorf("gave up after %v, want DefaultBackoff's 310 ms of waits at least", took)
	}

	other := errors.New("not a conflict")
	calls = 0
	if err := client.RetryOnConflict(t.Context(), client.DefaultRetry, func() error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("another error: %v after %d calls, want it after 1", err, calls)
	}

	ctx, cancel := context.WithCancel(t.Context())
	calls = 0
	err = client.RetryOnConflict(ctx, client.DefaultRetry, func() error { calls++; cancel(); return conflict })
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("context cancelled: %v after %d calls, want context.Canceled after 1", err, calls)
	}
}
