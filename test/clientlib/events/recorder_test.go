package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/events"
	"github.com/listwatch/listwatch/internal/cuttest"
)

const testTimeout = 60 * time.Second

var (
	eventsV1   = client.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	coreEvents = client.GroupVersionResource{Version: "v1", Resource: "events"}
)

// retryWait is the recorder's wait before it writes an event again.
const retryWait = 10 * time.Second

var pod = events.Reference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u-1"}

func newClient(t *testing.T, host string) *client.Client {
	t.Helper()
	c, err := client.New(client.ConfigForURL(host))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// start starts a recorder on host that stops when the test ends.
func start(t *testing.T, host string, cfg events.Config) *events.Recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cfg.Client = newClient(t, host)
	cfg.ReportingController = "example.com/test"
	cfg.ReportingInstance = "test-1"
	r, err := events.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-r.Done() })
	return r
}

// watchUntil watches gvr in "default" and returns the objects (by name)
// once done says they are what the test waits for.
func watchUntil[T client.Object](t *testing.T, host string, gvr client.GroupVersionResource, done func(map[string]T) bool) map[string]T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	w, err := client.NewResource[T](newClient(t, host), gvr, "default").Watch(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	seen := map[string]T{}
	for ev := range w.Events() {
		seen[ev.Object.GetName()] = ev.Object
		if done(seen) {
			return seen
		}
	}
	t.Fatalf("the watch of %s ended before the events awaited: %v", gvr, w.Err())
	return nil
}

func await[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func byReason(evs map[string]*events.Event, reason string) *events.Event {
	for _, e := range evs {
		if e.Reason == reason {
			return e
		}
	}
	return nil
}

// TestSeries: the first event is created with client-go's fields; an
// isomorphic second sets the series count to 2 at once; a third counts in
// the recorder and is written when the series ends; another reason is an
// event of its own.
func TestSeries(t *testing.T) {
	srv := cuttest.StartServer(t)
	writes := make(chan struct{}, 10)
	r := start(t, srv.URL, events.Config{SeriesFinish: time.Second, OnWritten: func() { writes <- struct{}{} }})
	if r.APIVersion() != "events.k8s.io/v1" {
		t.Fatalf("recorder writes %s, want events.k8s.io/v1", r.APIVersion())
	}
	for range 3 {
		r.Eventf(pod, nil, events.Normal, "Pulled", "Pull", "pulled image %q", "nginx")
	}
	related := events.Reference{APIVersion: "v1", Kind: "Node", Name: "n1"}
	r.Eventf(pod, &related, events.Warning, "Failed", "Run", "exit %d", 1)

	evs := watchUntil(t, srv.URL, eventsV1, func(evs map[string]*events.Event) bool {
		p := byReason(evs, "Pulled")
		return p != nil && p.Series != nil && p.Series.Count == 3 && byReason(evs, "Failed") != nil
	})
	if len(evs) != 2 {
		t.Errorf("%d events written, want 2 (a series and another reason)", len(evs))
	}
	p := byReason(evs, "Pulled")
	if p.Note != `pulled image "nginx"` || p.Type != events.Normal || p.Action != "Pull" || p.Regarding != pod || p.Related != nil ||
		p.ReportingController != "example.com/test" || p.ReportingInstance != "test-1" || p.EventTime.IsZero() ||
		p.Series.LastObservedTime.Before(p.EventTime.Time) {
		t.Errorf("series event %+v", p)
	}
	if f := byReason(evs, "Failed"); f.Related == nil || *f.Related != related || f.Note != "exit 1" || f.Type != events.Warning {
		t.Errorf("event with a related object %+v", f)
	}
	for range 4 { // the watch may show the last write before the writer has its answer
		await(t, writes, "the writer's 4 writes")
	}
	if s := r.Stats(); s.Written != 4 || s.Dropped+s.RateLimited+s.Failed != 0 {
		t.Errorf("stats %+v, want 4 written (2 creates, 2 series patches), nothing lost", s)
	}
}

// TestRateLimit: an object's events beyond the burst are dropped before
// they are queued; another object has its own bucket.
func TestRateLimit(t *testing.T) {
	srv := cuttest.StartServer(t)
	r := start(t, srv.URL, events.Config{Burst: 3, RefillPeriod: time.Hour})
	for i := range 5 {
		r.Eventf(pod, nil, events.Normal, "Reason"+strconv.Itoa(i), "Act", "note")
	}
	other := pod
	other.Name, other.UID = "web-1", "u-2"
	r.Eventf(other, nil, events.Normal, "Reason0", "Act", "note")
	r.Eventf(pod, nil, "Info", "Reason9", "Act", "not a valid type")
	if s := r.Stats(); s.RateLimited != 2 || s.Failed != 1 {
		t.Errorf("stats %+v, want 2 rate limited, 1 failed (invalid type)", s)
	}
	evs := watchUntil(t, srv.URL, eventsV1, func(evs map[string]*events.Event) bool { return len(evs) == 4 })
	var names []string
	for _, e := range evs {
		names = append(names, e.Regarding.Name+"/"+e.Reason)
	}
	slices.Sort(names)
	if want := []string{"web-0/Reason0", "web-0/Reason1", "web-0/Reason2", "web-1/Reason0"}; !slices.Equal(names, want) {
		t.Errorf("events %v, want %v", names, want)
	}
}

// TestFullQueueDrops: while the server is unreachable, Eventf does not
// block: the writer holds one event, the queue one more, and the rest are
// dropped and counted; cancelling the context stops the writer in its
// retry wait.
func TestFullQueueDrops(t *testing.T) {
	srv := cuttest.StartServer(t)
	proxy := cuttest.StartProxy(t, srv.Addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, err := events.Start(ctx, events.Config{Client: newClient(t, "http://"+proxy.Addr), ReportingController: "c", QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	proxy.Block()
	for i := range 10 {
		r.Eventf(pod, nil, events.Normal, "R"+strconv.Itoa(i), "A", "n")
	}
	if d := r.Stats().Dropped; d < 8 || d > 9 {
		t.Errorf("%d dropped, want 8 or 9 (10 less the queue's one, less the one the writer may hold)", d)
	}
	cancel()
	select {
	case <-r.Done():
	case <-time.After(retryWait / 2):
		t.Fatal("the writer did not stop while waiting to retry")
	}
}

// TestCoreFallback: against a server whose discovery lacks
// events.k8s.io, the recorder writes core/v1 Events with the same fields,
// series included.
func TestCoreFallback(t *testing.T) {
	srv := cuttest.StartServer(t)
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = withoutEventsGroup
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	r := start(t, front.URL, events.Config{})
	if r.APIVersion() != "v1" {
		t.Fatalf("recorder writes %s, want v1 (events.k8s.io is not discovered)", r.APIVersion())
	}
	r.Eventf(pod, nil, events.Warning, "BackOff", "Restart", "back-off restarting")
	r.Eventf(pod, nil, events.Warning, "BackOff", "Restart", "back-off restarting")
	evs := watchUntil(t, srv.URL, coreEvents, func(evs map[string]*events.CoreEvent) bool {
		for _, e := range evs {
			return e.Series != nil && e.Series.Count == 2
		}
		return false
	})
	for _, e := range evs {
		if e.InvolvedObject != pod || e.Message != "back-off restarting" || e.Reason != "BackOff" || e.Type != events.Warning ||
			e.Action != "Restart" || e.ReportingComponent != "example.com/test" || e.ReportingInstance != "test-1" || e.EventTime.IsZero() {
			t.Errorf("core event %+v", e)
		}
	}
}

// withoutEventsGroup removes events.k8s.io from aggregated discovery of
// /apis.
func withoutEventsGroup(resp *http.Response) error {
	if resp.Request.URL.Path != "/apis" || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var list map[string]any
	if err := json.Unmarshal(body, &list); err != nil {
		return err
	}
	items, _ := list["items"].([]any)
	list["items"] = slices.DeleteFunc(items, func(g any) bool {
		return g.(map[string]any)["metadata"].(map[string]any)["name"] == "events.k8s.io"
	})
	body, err = json.Marshal(list)
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return nil
}
