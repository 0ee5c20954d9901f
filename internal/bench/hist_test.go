package bench

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	for v := int64(0); v < 1<<30; v = v*5/4 + 1 {
		i := histIndex(v)
		if hi := histValue(i); hi < v || float64(hi-v) > float64(v)/32+1 {
			t.Fatalf("value %d: bucket %d ends at %d", v, i, hi)
		}
		if i > 0 && histValue(i-1) >= v {
			t.Fatalf("value %d: bucket %d, but the previous one ends at %d", v, i, histValue(i-1))
		}
	}
}

func TestHistogramSummary(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(i, time.Duration(i)*time.Millisecond)
	}
	s := h.summary()
	near := func(got, want time.Duration) bool { return got >= want && got <= want+want/16 }
	if s.Count != 1000 || !near(s.P50, 500*time.Millisecond) || !near(s.P99, 990*time.Millisecond) || s.Max != time.Second {
		t.Errorf("summary %+v", s)
	}
}
