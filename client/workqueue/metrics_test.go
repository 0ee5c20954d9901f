package workqueue

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeMetrics is a MetricsProvider for one queue that keeps plain values.
type fakeMetrics struct {
	mu           sync.Mutex
	name         string
	depth, adds  float64
	retries      float64
	latency      []float64
	workDuration []float64
	read         func() (float64, float64)
}

type fakeGauge struct {
	m *fakeMetrics
	v *float64
}

func (g fakeGauge) Inc() { g.m.mu.Lock(); *g.v++; g.m.mu.Unlock() }
func (g fakeGauge) Dec() { g.m.mu.Lock(); *g.v--; g.m.mu.Unlock() }

type fakeHistogram struct {
	m *fakeMetrics
	v *[]float64
}

func (h fakeHistogram) Observe(x float64) { h.m.mu.Lock(); *h.v = append(*h.v, x); h.m.mu.Unlock() }

func (m *fakeMetrics) NewDepthMetric(name string) GaugeMetric {
	m.name = name
	return fakeGauge{m, &m.depth}
}
func (m *fakeMetrics) NewAddsMetric(string) CounterMetric      { return fakeGauge{m, &m.adds} }
func (m *fakeMetrics) NewLatencyMetric(string) HistogramMetric { return fakeHistogram{m, &m.latency} }
func (m *fakeMetrics) NewWorkDurationMetric(string) HistogramMetric {
	return fakeHistogram{m, &m.workDuration}
}
func (m *fakeMetrics) NewRetriesMetric(string) CounterMetric { return fakeGauge{m, &m.retries} }
func (m *fakeMetrics) NewUnfinishedWorkMetric(_ string, read func() (float64, float64)) {
	m.read = read
}

// values returns depth, adds, retries, latencies and work durations.
func (m *fakeMetrics) values() []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return []any{m.depth, m.adds, m.retries, m.latency, m.workDuration}
}

func TestMetricsFollowClientGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMetrics{}
		q := New(Options[string]{Name: "q", Metrics: m})
		defer q.ShutDown()
		if m.name != "q" {
			t.Errorf("metrics named %q, want q", m.name)
		}
		check := func(step string, want ...any) {
			t.Helper()
			if diff := cmp.Diff(want, m.values()); diff != "" {
				t.Errorf("%s: depth, adds, retries, latencies, durations (-want +got):\n%s", step, diff)
			}
		}
		q.Add("a")
		q.Add("a") // already waiting: not an add
		q.AddAfter("b", 0)
		check("added", 2.0, 2.0, 1.0, []float64(nil), []float64(nil))

		time.Sleep(2 * time.Second)
		a, _ := q.Get()
		check("a taken", 1.0, 2.0, 1.0, []float64{2}, []float64(nil))
		q.Add("a") // while processing: counted, queued again at Done
		time.Sleep(3 * time.Second)
		if u, l := m.read(); u != 3 || l != 3 {
			t.Errorf("unfinished, longest = %v, %v; want 3, 3", u, l)
		}
		b, _ := q.Get()
		time.Sleep(time.Second)
		if u, l := m.read(); u != 5 || l != 4 {
			t.Errorf("unfinished, longest = %v, %v; want 5 (4+1), 4", u, l)
		}
		q.Done(a)
		q.Done(b)
		check("done", 1.0, 3.0, 1.0, []float64{2, 5}, []float64{4, 1})
		if u, l := m.read(); u != 0 || l != 0 {
			t.Errorf("unfinished, longest = %v, %v after Done; want 0, 0", u, l)
		}
		a, _ = q.Get() // a again: waited since its add 4 s ago
		q.Done(a)
		q.AddRateLimited("c")
		check("rate limited", 0.0, 3.0, 2.0, []float64{2, 5, 4}, []float64{4, 1, 0})
	})
}
