package metrics

import (
	"strings"
	"testing"
	"time"
)

// TestGC checks the garbage collector's series, under kube's names, and
// that a second collector (a restart) shares them.
func TestGC(t *testing.T) {
	m := New()
	q := m.GC().Queue("garbage_collector_attempt_to_delete")
	q.Added(3, false)
	q.Added(4, true)
	q.Done(2, time.Millisecond)
	m.GC().SyncError.Inc()
	out := exposition(t, m)
	const name = `{name="garbage_collector_attempt_to_delete"}`
	for _, series := range []string{
		"workqueue_adds_total" + name + " 2",
		"workqueue_retries_total" + name + " 1",
		"workqueue_depth" + name + " 2",
		"workqueue_work_duration_seconds_count" + name + " 1",
		"garbagecollector_controller_resources_sync_error_total 1",
	} {
		if !strings.Contains(out, series+"\n") {
			t.Errorf("no line %s in:\n%s", series, out)
		}
	}
}
