package metrics

import (
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/workqueue"
)

// TestGC checks the garbage collector's series, and its work queues', under
// kube's names, and that a second queue of a name (a restart) shares them.
func TestGC(t *testing.T) {
	m := New()
	const queue = "garbage_collector_attempt_to_delete"
	for range 2 {
		q := workqueue.New(workqueue.Options[string]{Name: queue, Metrics: m.Workqueues()})
		q.Add("a")
		q.Add("a") // already waiting: no add
		q.AddRateLimited("b")
		item, _ := q.Get()
		q.Done(item)
		q.ShutDown()
	}
	m.GC().SyncError.Inc()
	out := exposition(t, m)
	const name = `{name="` + queue + `"}`
	for _, series := range []string{
		"workqueue_adds_total" + name + " 2",
		"workqueue_retries_total" + name + " 2",
		"workqueue_depth" + name + " 0",
		"workqueue_queue_duration_seconds_count" + name + " 2",
		"workqueue_work_duration_seconds_count" + name + " 2",
		"workqueue_unfinished_work_seconds" + name + " 0",
		"workqueue_longest_running_processor_seconds" + name + " 0",
		"garbagecollector_controller_resources_sync_error_total 1",
	} {
		if !strings.Contains(out, series+"\n") {
			t.Errorf("no line %s in:\n%s", series, out)
		}
	}
}
