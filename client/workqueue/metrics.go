package workqueue

import "time"

// MetricsProvider makes the metrics of a named queue (Options.Name). It is
// client-go's workqueue.MetricsProvider, with one difference: the two
// gauges of work in progress are read when they are collected
// (NewUnfinishedWorkMetric) rather than set by a goroutine of the queue
// every 500 ms, so the queue still starts no goroutine. This package
// implements no provider and imports no metrics library; package
// controller has one for Prometheus, with client-go's metric names.
type MetricsProvider interface {
	// NewDepthMetric: items added and not yet handed out (workqueue_depth).
	NewDepthMetric(name string) GaugeMetric
	// NewAddsMetric: adds that were not already waiting (workqueue_adds_total).
	NewAddsMetric(name string) CounterMetric
	// NewLatencyMetric: seconds from add to Get (workqueue_queue_duration_seconds).
	NewLatencyMetric(name string) HistogramMetric
	// NewWorkDurationMetric: seconds from Get to Done (workqueue_work_duration_seconds).
	NewWorkDurationMetric(name string) HistogramMetric
	// NewRetriesMetric: AddAfter and AddRateLimited calls (workqueue_retries_total).
	NewRetriesMetric(name string) CounterMetric
	// NewUnfinishedWorkMetric registers read, which returns the seconds
	// the items being processed have been so far, summed and the longest
	// (workqueue_unfinished_work_seconds and
	// workqueue_longest_running_processor_seconds); the provider calls it
	// when it collects. A later queue of the same name replaces it.
	NewUnfinishedWorkMetric(name string, read func() (unfinished, longest float64))
}

// GaugeMetric is a value that goes up and down.
type GaugeMetric interface {
	Inc()
	Dec()
}

// CounterMetric is a value that only goes up.
type CounterMetric interface{ Inc() }

// HistogramMetric records observations.
type HistogramMetric interface{ Observe(float64) }

// queueMetrics records a queue's metrics; a nil *queueMetrics records
// nothing. Its methods are called with the queue's mu held, which guards
// its maps.
type queueMetrics[T comparable] struct {
	depth        GaugeMetric
	adds         CounterMetric
	latency      HistogramMetric
	workDuration HistogramMetric
	retries      CounterMetric
	added        map[T]time.Time // items queued or dirty, since their first add
	started      map[T]time.Time // items handed out by Get, since then
}

func newQueueMetrics[T comparable](name string, p MetricsProvider) *queueMetrics[T] {
	if p == nil {
		return nil
	}
	return &queueMetrics[T]{
		depth:        p.NewDepthMetric(name),
		adds:         p.NewAddsMetric(name),
		latency:      p.NewLatencyMetric(name),
		workDuration: p.NewWorkDurationMetric(name),
		retries:      p.NewRetriesMetric(name),
		added:        map[T]time.Time{},
		started:      map[T]time.Time{},
	}
}

func (m *queueMetrics[T]) add(item T) {
	if m == nil {
		return
	}
	m.adds.Inc()
	m.depth.Inc()
	if _, ok := m.added[item]; !ok {
		m.added[item] = time.Now()
	}
}

func (m *queueMetrics[T]) get(item T) {
	if m == nil {
		return
	}
	m.depth.Dec()
	now := time.Now()
	m.started[item] = now
	if at, ok := m.added[item]; ok {
		m.latency.Observe(now.Sub(at).Seconds())
		delete(m.added, item)
	}
}

func (m *queueMetrics[T]) done(item T) {
	if m == nil {
		return
	}
	if at, ok := m.started[item]; ok {
		m.workDuration.Observe(time.Since(at).Seconds())
		delete(m.started, item)
	}
}

func (m *queueMetrics[T]) retry() {
	if m != nil {
		m.retries.Inc()
	}
}

// unfinished returns the seconds of the items being processed: their sum
// and the longest.
func (m *queueMetrics[T]) unfinished() (total, longest float64) {
	now := time.Now()
	for _, at := range m.started {
		s := now.Sub(at).Seconds()
		total += s
		longest = max(longest, s)
	}
	return total, longest
}
