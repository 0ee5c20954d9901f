package controller

import (
	"time"

	"github.com/listwatch/listwatch/client/workqueue"
)

// MetricsProvider makes a controller's metrics (Options.Metrics): its
// reconciles' and its queue's, under the controller's Name. This package
// imports no metrics library; package
// github.com/listwatch/listwatch/controllermetrics is a provider for
// Prometheus, with controller-runtime's and client-go's metric names.
type MetricsProvider interface {
	workqueue.MetricsProvider
	// NewReconcileMetrics returns the reconcile metrics of the controller
	// name, which runs workers workers.
	NewReconcileMetrics(name string, workers int) ReconcileMetrics
}

// ReconcileMetrics records one controller's reconciles.
type ReconcileMetrics interface {
	// Started: a worker began a reconcile.
	Started()
	// Finished: a reconcile ended as result after took.
	Finished(result ReconcileResult, took time.Duration)
	// Panicked: a reconcile panicked (it then finishes as ResultError).
	Panicked()
}

// ReconcileResult is how a reconcile ended, named as controller-runtime
// labels it.
type ReconcileResult string

// The reconcile results.
const (
	ResultSuccess      ReconcileResult = "success"
	ResultError        ReconcileResult = "error"
	ResultRequeue      ReconcileResult = "requeue"
	ResultRequeueAfter ReconcileResult = "requeue_after"
)

// ReconcileResults lists every ReconcileResult, for a provider that
// creates each series at zero.
var ReconcileResults = []ReconcileResult{ResultSuccess, ResultError, ResultRequeue, ResultRequeueAfter}

// noMetrics records nothing: a controller without Options.Metrics.
type noMetrics struct{}

func (noMetrics) Started()                                {}
func (noMetrics) Finished(ReconcileResult, time.Duration) {}
func (noMetrics) Panicked()                               {}
