package resource

import (
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// runningPod is a pod as a kubelet reports it, with a sidecar that
// restarted.
const runningPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default","creationTimestamp":"2026-01-02T03:04:05Z"},
	"spec":{"nodeName":"node-1","initContainers":[{"name":"proxy","image":"envoy","restartPolicy":"Always"}],"containers":[{"name":"web","image":"nginx"}]},
	"status":{"phase":"Running","podIP":"10.1.2.3","podIPs":[{"ip":"10.1.2.3"}],
	"conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"}],
	"initContainerStatuses":[{"name":"proxy","ready":true,"started":true,"restartCount":2,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-01-02T03:04:00Z"}}}],
	"containerStatuses":[{"name":"web","ready":true,"restartCount":1,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-01-02T03:05:00Z"}}}]}}`

func podCells(t testing.TB) (api.Object, []Column) {
	obj, err := api.ParseObject([]byte(runningPod))
	if err != nil {
		t.Fatal(err)
	}
	return obj, printed()[GVR{"", "v1", "pods"}]
}

// TestPodCells checks a running pod's cells; the interop module compares
// many more with kube's own printers.
func TestPodCells(t *testing.T) {
	obj, cols := podCells(t)
	var got []any
	for _, c := range cols {
		got = append(got, c.Cell(obj))
	}
	since := func(s string) string { ts, _ := time.Parse(time.RFC3339, s); return HumanDuration(time.Since(ts)) }
	want := []any{"2/2", "Running", "3 (" + since("2026-01-02T03:05:00Z") + " ago)", since("2026-01-02T03:04:05Z"), "10.1.2.3", "node-1", "<none>", "<none>"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: %v, want %v", cols[i].Name, got[i], want[i])
		}
	}
}

// BenchmarkPodCells computes a pod's row, every column: the printing
// part of a LIST as Table, per pod.
func BenchmarkPodCells(b *testing.B) {
	obj, cols := podCells(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cols {
			c.Cell(obj)
		}
	}
}
