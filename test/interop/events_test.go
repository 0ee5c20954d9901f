package interop

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

const eventsTimeout = 60 * time.Second

// TestEventRecorder records through client-go's events.k8s.io/v1
// EventRecorder (k8s.io/client-go/tools/events, the recorder
// controller-runtime's new API uses) against the binary, in protobuf as the
// clientset sends it: the first event is created, the second isomorphic one
// makes it a series (a strategic merge patch of series), and a watch of
// core/v1 events sees both writes converted; kubectl get events (core) and
// get events.events.k8s.io print it with kube's event columns.
func TestEventRecorder(t *testing.T) {
	wt := startWidget(t)
	ctx, lw, cs, cm, recorder := wt.ctx, wt.lw, wt.cs, wt.cm, wt.recorder
	w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=widget"})
	if err != nil {
		t.Fatalf("watch core events: %v", err)
	}
	defer w.Stop()

	recorder.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "synced %s", "widget")
	first := nextEvent(t, ctx, w, func(typ watch.EventType, e *corev1.Event) bool { return typ == watch.Added })
	if first.Message != "synced widget" || first.InvolvedObject.UID != cm.UID || first.ReportingController != "example.com/widgets" ||
		first.Action != "Reconcile" || first.EventTime.IsZero() || first.Series != nil {
		t.Fatalf("core view of the recorded event: %+v", first)
	}
	recorder.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "synced %s", "widget")
	series := nextEvent(t, ctx, w, func(typ watch.EventType, e *corev1.Event) bool { return typ == watch.Modified })
	if series.Name != first.Name || series.Series == nil || series.Series.Count != 2 || series.Series.LastObservedTime.IsZero() {
		t.Fatalf("core view of the series update: %+v", series)
	}
	got, err := cs.EventsV1().Events("default").Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil || got.Note != "synced widget" || got.Regarding.Name != "widget" || got.Series == nil || got.Series.Count != 2 {
		t.Fatalf("events.k8s.io view: %+v %v", got, err)
	}

	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), lw.URL, true)
	contains(t, k.must(t, "get", "events"),
		`(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`, `(?m)^\S+\s+Normal\s+Synced\s+configmap/widget\s+synced widget$`)
	contains(t, k.must(t, "get", "events.events.k8s.io", "-o", "wide"),
		`(?m)^\S+\s+Normal\s+Synced\s+configmap/widget\s+example.com/widgets, example.com/widgets-\S+\s+synced widget\s+\S+\s+2\s+`+first.Name+`$`)
}

// widget is a test's binary with ConfigMap "widget" and client-go's
// events.k8s.io/v1 recorder for controller example.com/widgets, all ended
// when the test ends or eventsTimeout passes.
type widget struct {
	ctx      context.Context
	lw       *Listwatch
	cs       *kubernetes.Clientset
	cm       *corev1.ConfigMap
	recorder events.EventRecorder
}

func startWidget(t *testing.T) *widget {
	t.Helper()
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx, cancel := context.WithTimeout(t.Context(), eventsTimeout)
	t.Cleanup(cancel)
	cs := typedClientset(t, lw.URL)
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "widget"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	t.Cleanup(broadcaster.Shutdown)
	return &widget{ctx: ctx, lw: lw, cs: cs, cm: cm, recorder: broadcaster.NewRecorder(scheme.Scheme, "example.com/widgets")}
}

// TestCoreEventThroughEventsV1: an event written the legacy way through
// core/v1 (as client-go's tools/record does) is read and watched through
// events.k8s.io/v1, converted.
func TestCoreEventThroughEventsV1(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx, cancel := context.WithTimeout(t.Context(), eventsTimeout)
	defer cancel()
	cs := typedClientset(t, lw.URL)
	w, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: "regarding.name=widget"})
	if err != nil {
		t.Fatalf("watch events.k8s.io events: %v", err)
	}
	defer w.Stop()
	seen := metav1.NewTime(time.Now().Truncate(time.Second))
	_, err = cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "widget.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "widget", APIVersion: "v1"},
		Reason:         "Synced", Message: "synced widget", Source: corev1.EventSource{Component: "widgets", Host: "node-1"},
		FirstTimestamp: seen, LastTimestamp: seen, Count: 3, Type: corev1.EventTypeWarning}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("core create: %v", err)
	}
	added := nextEvent(t, ctx, w, func(typ watch.EventType, e *eventsv1.Event) bool { return typ == watch.Added })
	if added.Name != "widget.1" || added.Note != "synced widget" || added.DeprecatedCount != 3 || added.Regarding.Kind != "ConfigMap" ||
		added.DeprecatedSource.Host != "node-1" || !added.DeprecatedLastTimestamp.Equal(&seen) || added.Type != corev1.EventTypeWarning {
		t.Fatalf("events.k8s.io view of a core event: %+v", added)
	}
	list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "source=widgets"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Message != "synced widget" {
		t.Fatalf("list by source: %+v %v", list, err)
	}

	// Every field of a core/v1 Event, read through events.k8s.io/v1 as kube's
	// Convert_core_Event_To_v1_Event maps it, and back.
	micro := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	full := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "widget.2", Labels: map[string]string{"a": "b"}},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "widget", UID: "u", APIVersion: "v1", ResourceVersion: "7", FieldPath: "data"},
		Reason:         "Synced", Message: "note", Source: corev1.EventSource{Component: "c", Host: "h"},
		FirstTimestamp: seen, LastTimestamp: seen, Count: 2, Type: corev1.EventTypeNormal, EventTime: micro,
		Series: &corev1.EventSeries{Count: 2, LastObservedTime: micro}, Action: "Sync", Related: &corev1.ObjectReference{Kind: "Node", Name: "n"},
		ReportingController: "example.com/widgets", ReportingInstance: "widgets-0"}
	created, err := cs.CoreV1().Events("default").Create(ctx, full, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("core create of every field: %v", err)
	}
	got, err := cs.EventsV1().Events("default").Get(ctx, "widget.2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &eventsv1.Event{ObjectMeta: created.ObjectMeta, EventTime: micro,
		Series:              &eventsv1.EventSeries{Count: 2, LastObservedTime: micro},
		ReportingController: full.ReportingController, ReportingInstance: full.ReportingInstance, Action: full.Action,
		Reason: full.Reason, Regarding: full.InvolvedObject, Related: full.Related, Note: full.Message, Type: full.Type,
		DeprecatedSource: full.Source, DeprecatedFirstTimestamp: seen, DeprecatedLastTimestamp: seen, DeprecatedCount: 2}
	got.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events.k8s.io view of every core field (-want +got):\n%s", diff)
	}
	got.Labels["c"] = "d"
	updated, err := cs.EventsV1().Events("default").Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update through events.k8s.io: %v", err)
	}
	back, err := cs.CoreV1().Events("default").Get(ctx, "widget.2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full.ObjectMeta = updated.ObjectMeta
	back.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(full, back); diff != "" {
		t.Errorf("core view after a round trip through events.k8s.io (-want +got):\n%s", diff)
	}
}

// nextEvent returns the object of the first event of w that ok accepts.
func nextEvent[T any](t *testing.T, ctx context.Context, w watch.Interface, ok func(watch.EventType, T) bool) T {
	t.Helper()
	for {
		select {
		case e, open := <-w.ResultChan():
			if !open {
				t.Fatal("watch ended")
			}
			if obj, isT := e.Object.(T); isT && ok(e.Type, obj) {
				return obj
			}
		case <-ctx.Done():
			t.Fatalf("waiting for a watch event: %v", ctx.Err())
		}
	}
}
