package interop

import (
	"context"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/events"
)

// TestOurEventRecorderAsClientGo records the same event twice through
// client-go's events.k8s.io/v1 recorder and twice through ours, on one
// ConfigMap, against the binary: each makes an event with a series of 2,
// and the two Events are equal but for their identity and times (same
// fields, reference, reporter, series); kubectl prints both rows alike.
func TestOurEventRecorderAsClientGo(t *testing.T) {
	wt := startWidget(t)
	ctx, lw, cs, cm, theirs := wt.ctx, wt.lw, wt.cs, wt.cm, wt.recorder
	w, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{FieldSelector: "regarding.name=widget"})
	if err != nil {
		t.Fatalf("watch events: %v", err)
	}
	defer w.Stop()

	c, err := client.New(client.ConfigForURL(lw.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ourCtx, stopOurs := context.WithCancel(ctx)
	ours, err := events.Start(ourCtx, events.Config{Client: c, ReportingController: "example.com/widgets"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stopOurs(); <-ours.Done() }()
	ref := events.Reference{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: string(cm.UID), ResourceVersion: cm.ResourceVersion}

	for range 2 {
		theirs.Eventf(cm, nil, corev1.EventTypeNormal, "Synced", "Reconcile", "synced %s", "widget")
		ours.Eventf(ref, nil, events.Normal, "Synced", "Reconcile", "synced %s", "widget")
	}
	series := map[string]*eventsv1.Event{}
	for len(series) < 2 {
		e := nextEvent(t, ctx, w, func(_ watch.EventType, e *eventsv1.Event) bool { return e.Series != nil && e.Series.Count == 2 })
		series[e.Name] = e
	}
	var got []*eventsv1.Event
	for _, e := range series {
		e = e.DeepCopy()
		e.ObjectMeta = metav1.ObjectMeta{Namespace: e.Namespace}
		e.EventTime, e.Series.LastObservedTime = metav1.MicroTime{}, metav1.MicroTime{}
		got = append(got, e)
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("client-go's event and ours differ (-one +other):\n%s", diff)
	}

	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), lw.URL, true)
	rows := regexp.MustCompile(`(?m)^\S+\s+Normal\s+Synced\s+configmap/widget\s+synced widget$`).FindAllString(k.must(t, "get", "events"), -1)
	if len(rows) != 2 {
		t.Errorf("kubectl get events printed %d rows of the two recorders' events, want 2 alike: %q", len(rows), rows)
	}
	wide := regexp.MustCompile(`(?m)^\S+\s+Normal\s+Synced\s+configmap/widget\s+example.com/widgets, example.com/widgets-\S+\s+synced widget\s+\S+\s+2\s+\S+$`)
	if rows := wide.FindAllString(k.must(t, "get", "events.events.k8s.io", "-o", "wide"), -1); len(rows) != 2 {
		t.Errorf("kubectl get events.events.k8s.io -o wide printed %d rows with a series of 2, want 2: %q", len(rows), rows)
	}
}
