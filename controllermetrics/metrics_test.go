package controllermetrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/cache/cachetest"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/listwatch/listwatch/controllermetrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value returns the value of the first series name{labels...} gathered
// from reg, as a scrape sees it (a histogram's sample count), failing if
// there is none.
func value(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue series
				}
			}
			return metricValue(m)
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// series is a series' expected value.
type series struct {
	name   string
	labels map[string]string
	want   float64
}

func expectValues(t *testing.T, reg prometheus.Gatherer, want []series) {
	t.Helper()
	for _, s := range want {
		if got := value(t, reg, s.name, s.labels); got != s.want {
			t.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.want)
		}
	}
}

// run runs fn's goroutine until the test ends.
func run(t *testing.T, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = fn(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestMetricsCountReconcilesQueueAndInformer runs a controller with every
// kind of reconcile outcome and checks each series it exports.
func TestMetricsCountReconcilesQueueAndInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := controllermetrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		lw := cachetest.NewFakeListerWatcher[*cachetest.Object]()
		lw.AddList("10", cachetest.New("ns", "slow", 1), cachetest.New("ns", "ok", 2), cachetest.New("ns", "fail", 3),
			cachetest.New("ns", "boom", 4), cachetest.New("ns", "later", 5))
		inf := cache.NewInformer(lw, cache.InformerOptions[*cachetest.Object]{})
		run(t, inf.Run)
		began := time.Now()
		controllermetrics.AddInformer(m, "objects", client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "objects"}, inf)
		release := make(chan struct{})
		var mu sync.Mutex
		calls := map[string]int{} // guarded by mu
		reconcile := func(ctx context.Context, r controller.Request) (controller.Result, error) {
			mu.Lock()
			n := calls[r.Name]
			calls[r.Name]++
			mu.Unlock()
			switch {
			case r.Name == "slow":
				<-release
			case r.Name == "fail" && n == 0:
				return controller.Result{}, errors.New("boom")
			case r.Name == "boom" && n == 0:
				panic("boom")
			case r.Name == "later" && n == 0:
				return controller.Result{RequeueAfter: 5 * time.Second}, nil
			}
			return controller.Result{}, nil
		}
		limiter := workqueue.NewItemExponentialFailureRateLimiter[controller.Request](time.Second, time.Minute)
		c, err := controller.New(controller.Options{Name: "test", MaxConcurrentReconciles: 2, RateLimiter: limiter, Metrics: m,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, reconcile)
		if err != nil {
			t.Fatal(err)
		}
		if err := controller.For(c, inf); err != nil {
			t.Fatal(err)
		}
		run(t, c.Start)
		time.Sleep(10 * time.Second) // the bubble's clock: retries done, slow still running
		synctest.Wait()

		ctl := map[string]string{"controller": "test"}
		queue := map[string]string{"name": "test"}
		objects := map[string]string{"name": "objects", "group": "example.com", "version": "v1", "resource": "objects"}
		expectValues(t, reg, []series{
			{"controller_runtime_active_workers", ctl, 1},
			{"controller_runtime_max_concurrent_reconciles", ctl, 2},
			{"workqueue_unfinished_work_seconds", queue, 10},
			{"workqueue_longest_running_processor_seconds", queue, 10},
			{"workqueue_depth", queue, 0},
			{"workqueue_adds_total", queue, 8},    // 5 listed, 3 retried
			{"workqueue_retries_total", queue, 3}, // 2 rate-limited, 1 after
			{"workqueue_queue_duration_seconds", queue, 8},
			{"workqueue_work_duration_seconds", queue, 7}, // slow is not done
			{"informer_synced", objects, 1},
			{"informer_store_resource_version", objects, 10},
			{"reflector_lists_total", objects, 1},
			{"reflector_watches_total", objects, 1},
			{"reflector_relists_total", objects, 0},
			{"reflector_errors_total", objects, 0},
		})
		if got := value(t, reg, "reflector_last_progress_timestamp_seconds", objects); got != float64(began.Unix()) {
			t.Errorf("reflector_last_progress_timestamp_seconds = %v, want the list's time %v", got, began.Unix())
		}

		close(release)
		synctest.Wait()
		expectValues(t, reg, []series{
			{"controller_runtime_reconcile_total", map[string]string{"controller": "test", "result": "success"}, 5},
			{"controller_runtime_reconcile_total", map[string]string{"controller": "test", "result": "error"}, 2},
			{"controller_runtime_reconcile_total", map[string]string{"controller": "test", "result": "requeue_after"}, 1},
			{"controller_runtime_reconcile_total", map[string]string{"controller": "test", "result": "requeue"}, 0},
			{"controller_runtime_reconcile_errors_total", ctl, 2}, // the panic counts as an error
			{"controller_runtime_reconcile_panics_total", ctl, 1},
			{"controller_runtime_reconcile_time_seconds", ctl, 8},
			{"controller_runtime_active_workers", ctl, 0},
			{"workqueue_unfinished_work_seconds", queue, 0},
			{"workqueue_work_duration_seconds", queue, 8},
		})
	})
}
