package gctune

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		live, floor uint64
		want        int
	}{
		{0, 64 * mib, DefaultPercent},          // nothing measured yet
		{8 * mib, 64 * mib, 800},               // goal 8 + 64 MiB
		{64 * mib, 64 * mib, DefaultPercent},   // the floor is reached: the default
		{500 * mib, 64 * mib, DefaultPercent},  // a large heap: the default
		{1024, 64 * mib, 100 * DefaultPercent}, // bounded
		{8 * mib, 0, DefaultPercent},           // no floor
	}
	for _, tt := range tests {
		if got := Percent(tt.live, tt.floor); got != tt.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tt.live, tt.floor, got, tt.want)
		}
	}
}

func TestChanged(t *testing.T) {
	if changed(800, 850) {
		t.Error("800 -> 850 counted as a change")
	}
	if !changed(800, 900) || !changed(800, 700) {
		t.Error("800 -> 900 or 700 not counted as a change")
	}
}

// TestFloorSetsAndRestores runs Floor with a floor far above this test's
// live heap: the GC percent rises while it runs and is the default after.
func TestFloorSetsAndRestores(t *testing.T) {
	t.Setenv("GOGC", "") // restored at cleanup; unset for the test
	os.Unsetenv("GOGC")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { Floor(ctx, 1<<40) })
	testwait.Until(t, 10*time.Second, "the GC percent to rise", func() bool {
		runtime.GC() // each collection lets Floor set the percent
		return gcPercent() > DefaultPercent
	})
	cancel()
	wg.Wait()
	if p := gcPercent(); p != DefaultPercent {
		t.Errorf("GC percent after Floor returned = %d, want %d", p, DefaultPercent)
	}
}

func TestFloorLeavesUserGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	Floor(ctx, 1<<40)
	if p := gcPercent(); p != DefaultPercent {
		t.Errorf("GC percent = %d with GOGC set, want it untouched (%d)", p, DefaultPercent)
	}
}

// gcPercent reads the GC percent in force.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
