package interop

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// TestEventTTLFromBinary: with --event-ttl 3s, an event recorded through
// client-go's events.k8s.io/v1 recorder is deleted 3 s after its last
// write, the series update 2 s after its creation pushing it back, as
// kube-apiserver's etcd lease does.
func TestEventTTLFromBinary(t *testing.T) {
	const ttl = 3 * time.Second
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync", "--event-ttl", ttl.String())
	ctx, cancel := context.WithTimeout(t.Context(), eventsTimeout)
	defer cancel()
	cs := typedClientset(t, lw.URL)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "expiring"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=expiring"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/expiry")

	recorder.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "synced")
	nextEvent(t, ctx, w, func(typ watch.EventType, _ *corev1.Event) bool { return typ == watch.Added })
	created := time.Now()
	time.Sleep(2 * time.Second) // the time the series update comes after its creation
	recorder.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "synced")
	nextEvent(t, ctx, w, func(typ watch.EventType, e *corev1.Event) bool { return typ == watch.Modified && e.Series != nil })
	updated := time.Now()
	nextEvent(t, ctx, w, func(typ watch.EventType, _ *corev1.Event) bool { return typ == watch.Deleted })
	// updated is when the update reached this watch, a little after
	// the server wrote it.
	if lived := time.Since(created); lived < ttl+time.Second {
		t.Errorf("deleted %v after its creation: the update 2 s later did not push its expiry back", lived)
	}
	if after := time.Since(updated); after < ttl-time.Second || after > ttl+10*time.Second {
		t.Errorf("deleted %v after its last write, want about %v", after, ttl)
	}
}
