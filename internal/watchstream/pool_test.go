package watchstream

import (
	"testing"

	"github.com/listwatch/listwatch/internal/watchcache"
)

// TestSenderPoolClosedQueuesNothing checks that a closed pool queues no
// task (a cache may still dispatch after Engine.Close): none would be
// served, its senders gone.
func TestSenderPoolClosedQueuesNothing(t *testing.T) {
	p := newSenderPool(1)
	p.close()
	p.pushAll(&watchcache.PollBatch{Wakers: []watchcache.Waker{&detachedWatch{}, &detachedWatch{}}, Lane: []*watchcache.LaneBlock{{}}}, laneWriter{})
	p.push(&detachedWatch{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.queue) - p.head; n != 0 {
		t.Fatalf("%d tasks queued on a closed pool, want none", n)
	}
}
