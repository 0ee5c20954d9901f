package interop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// startOperatorServer runs the binary in secure mode (TLS, client
// certificates, RBAC) and returns its admin's config (system:masters).
func startOperatorServer(t *testing.T) *rest.Config {
	t.Helper()
	lw := StartListwatch(t, listwatchBin(t), "--secure", "--unsafe-no-fsync")
	cfg, err := clientcmd.BuildConfigFromFlags("", lw.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestOperatorConverges runs the controller-runtime operator against the
// binary (see exerciseOperator).
func TestOperatorConverges(t *testing.T) {
	exerciseOperator(t, startOperatorServer(t), nil)
}

// TestOperatorLeaseHandOver runs two managers of the operator on one
// server: the first leads and reconciles while the second waits; when the
// first stops, releasing its Lease or not, the second takes the Lease and
// reconciles every Widget, old and new; the first never reconciles once
// the second leads.
func TestOperatorLeaseHandOver(t *testing.T) {
	cfg := startOperatorServer(t)
	for _, release := range []bool{true, false} {
		t.Run(fmt.Sprintf("releaseOnCancel=%t", release), func(t *testing.T) {
			ctx := t.Context()
			f := newWidgetFixture(t, cfg)
			var log electionLog
			a := runOperator(t, cfg, operatorOptions{id: "a", namespace: f.ns, releaseOnCancel: release, log: &log})
			waitClosed(t, ctx, a.mgr.Elected(), "a to lead")
			b := runOperator(t, cfg, operatorOptions{id: "b", namespace: f.ns, releaseOnCancel: release, log: &log})
			f.createWidget(t, "first", "red", "")
			f.waitConverged(t, "first", map[string]string{"color": "red", "secretRevision": "", "reconciler": "a"})
			held := f.waitRenewed(t)
			select {
			case <-b.mgr.Elected():
				t.Fatal("b was elected while a renewed its lease")
			default:
			}

			log.add("a stopping")
			stoppedAt := time.Now()
			if err := a.stop(); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, ctx, b.mgr.Elected(), "b to lead")
			took := time.Since(stoppedAt)
			t.Logf("b led %v after a began to stop", took)
			if release && took > electionLeaseDuration {
				t.Errorf("b led %v after a began to stop, want within the lease duration %v (a released the lease)", took, electionLeaseDuration)
			}
			f.createWidget(t, "second", "blue", "")
			for name, color := range map[string]string{"first": "red", "second": "blue"} {
				f.waitConverged(t, name, map[string]string{"color": color, "secretRevision": "", "reconciler": "b"})
			}

			entries := log.get()
			elected := slices.Index(entries, "b elected")
			if elected < slices.Index(entries, "a stopping") || slices.Contains(entries[elected:], "a reconciled") ||
				slices.Contains(entries[:elected], "b reconciled") {
				t.Errorf("leadership and reconciles %v: want b elected after a began to stop, and only the leader reconciling", entries)
			}
			lease := f.lease(t)
			if s := lease.Spec; deref(s.HolderIdentity) == deref(held.Spec.HolderIdentity) || deref(s.LeaseTransitions) != "1" {
				t.Errorf("lease after the hand-over: holder %s, transitions %s; want other than a's %s, 1",
					deref(s.HolderIdentity), deref(s.LeaseTransitions), deref(held.Spec.HolderIdentity))
			}
			a.checkWatches(t, true)
			b.checkWatches(t, true)
		})
	}
}

// lease returns the operator's Lease.
func (f *widgetFixture) lease(t testing.TB) *coordinationv1.Lease {
	t.Helper()
	lease, err := f.cs.CoordinationV1().Leases(f.ns).Get(t.Context(), operatorName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the lease: %v", err)
	}
	return lease
}

// waitRenewed waits until the leader has renewed the Lease for two lease
// durations (while other candidates tried to take it) and returns it.
func (f *widgetFixture) waitRenewed(t testing.TB) *coordinationv1.Lease {
	t.Helper()
	var lease *coordinationv1.Lease
	waitUntil(t, "the leader to renew its lease", func(ctx context.Context) (bool, string, error) {
		lease = f.lease(t)
		s := lease.Spec
		if s.RenewTime == nil || s.AcquireTime == nil || deref(s.LeaseTransitions) != "0" {
			return false, fmt.Sprintf("lease %+v", s), nil
		}
		return s.RenewTime.Sub(s.AcquireTime.Time) > 2*electionLeaseDuration, "", nil
	})
	return lease
}

// holdFinalizer is a finalizer of the test's own, that keeps an object
// until the test lets it go.
const holdFinalizer = widgetGroup + "/test-hold"

// TestOperatorGarbageCollection deletes the operator's Widgets with each
// propagation policy and checks what the server's garbage collector does
// with their ConfigMaps, as kube's does: Background collects the
// ConfigMap; Foreground keeps the Widget (foregroundDeletion) until its
// ConfigMap, which blocks owner deletion, is gone; Orphan leaves the
// ConfigMap without its ownerReference. The operator's finalizer runs in
// every case.
func TestOperatorGarbageCollection(t *testing.T) {
	collectWithEachPolicy(t, startOperatorServer(t), shortElection)
}

// collectWithEachPolicy runs the operator (with election's timings)
// against cfg's server and deletes its Widgets with each propagation
// policy (see TestOperatorGarbageCollection). It returns the fixture and
// the operator, still running.
func collectWithEachPolicy(t *testing.T, cfg *rest.Config, election electionTimings) (*widgetFixture, *operator) {
	f := newWidgetFixture(t, cfg)
	op := runOperator(t, cfg, operatorOptions{id: "a", namespace: f.ns, releaseOnCancel: true, election: election})
	policies := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan}
	var names []string
	for _, p := range policies {
		name := strings.ToLower(string(p))
		names = append(names, name)
		f.createWidget(t, name, "red", "")
	}
	for _, name := range names {
		f.waitConverged(t, name, map[string]string{"color": "red", "secretRevision": "", "reconciler": "a"})
	}
	deleteWidget := func(t *testing.T, name string, p metav1.DeletionPropagation) {
		t.Helper()
		deleteWith(t, f, &Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}, p)
	}

	t.Run("Background", func(t *testing.T) {
		deleteWidget(t, "background", metav1.DeletePropagationBackground)
		f.waitGone(t, &Widget{}, "background")
		f.waitGone(t, &corev1.ConfigMap{}, "background")
	})

	t.Run("Foreground", func(t *testing.T) {
		// The test's finalizer keeps the ConfigMap once it is deleted,
		// and the Widget must wait for it.
		f.modify(t, &corev1.ConfigMap{}, "foreground", func(o client.Object) { controllerutil.AddFinalizer(o, holdFinalizer) })
		deleteWidget(t, "foreground", metav1.DeletePropagationForeground)
		waitUntil(t, "the collector to delete the ConfigMap", func(ctx context.Context) (bool, string, error) {
			var cm corev1.ConfigMap
			err := f.cl.Get(ctx, f.key("foreground"), &cm)
			return err == nil && cm.DeletionTimestamp != nil, fmt.Sprintf("ConfigMap finalizers %v", cm.Finalizers), err
		})
		var w Widget
		if err := f.cl.Get(t.Context(), f.key("foreground"), &w); err != nil {
			t.Fatalf("the Widget went before its ConfigMap: %v", err)
		}
		if w.DeletionTimestamp == nil || !slices.Contains(w.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Errorf("Widget waiting for its ConfigMap: deletion %v, finalizers %v; want a deletionTimestamp and %s",
				w.DeletionTimestamp, w.Finalizers, metav1.FinalizerDeleteDependents)
		}
		f.modify(t, &corev1.ConfigMap{}, "foreground", func(o client.Object) { controllerutil.RemoveFinalizer(o, holdFinalizer) })
		f.waitGone(t, &corev1.ConfigMap{}, "foreground")
		f.waitGone(t, &Widget{}, "foreground")
	})

	t.Run("Orphan", func(t *testing.T) {
		deleteWidget(t, "orphan", metav1.DeletePropagationOrphan)
		f.waitGone(t, &Widget{}, "orphan")
		var cm corev1.ConfigMap
		if err := f.cl.Get(t.Context(), f.key("orphan"), &cm); err != nil {
			t.Fatalf("the orphaned ConfigMap: %v", err)
		}
		if len(cm.OwnerReferences) != 0 {
			t.Errorf("the orphaned ConfigMap's ownerReferences %+v, want none", cm.OwnerReferences)
		}
	})

	if got := op.finalizedWidgets(); !sameElements(got, names) {
		t.Errorf("finalized %v, want %v", got, names)
	}
	return f, op
}
