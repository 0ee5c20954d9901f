package lockrank

import (
	"strings"
	"testing"
)

// TestOrder: in a race build, a lock taken after one of a later rank, or
// of its own, panics; in order it does not.
func TestOrder(t *testing.T) {
	if !checking {
		t.Skip("the order is checked in race builds (go test -race)")
	}
	var c RWMutex[CacheMu]
	var d Mutex[DetachedWatchMu]
	var w, w2 Mutex[WatcherMu]
	c.RLock()
	d.Lock()
	w.Lock()
	w.Unlock()
	d.Unlock()
	c.RUnlock()
	for name, f := range map[string]func(){
		"reversed":   func() { w.Lock(); defer w.Unlock(); d.Lock(); d.Unlock() },
		"same rank":  func() { w.Lock(); defer w.Unlock(); w2.Lock(); w2.Unlock() },
		"cache last": func() { d.Lock(); defer d.Unlock(); c.RLock(); c.RUnlock() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "lockrank: ") {
					t.Fatalf("recovered %q, want the order's panic", r)
				}
			}()
			f()
		})
	}
}
