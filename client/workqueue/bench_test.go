package workqueue

import (
	"strconv"
	"testing"
)

// BenchmarkAddGetDone is one item's trip through the queue, as a worker
// sees it, over 1024 distinct items.
func BenchmarkAddGetDone(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "ns/name-" + strconv.Itoa(i)
	}
	q := New(Options[string]{})
	defer q.ShutDown()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q.Add(keys[i%len(keys)])
		item, _ := q.Get()
		q.Done(item)
		i++
	}
}
