package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
)

// Dispatcher calls the webhooks its Source holds.
type Dispatcher struct {
	source   Source
	observer Observer // nil: no metrics
	log      *slog.Logger
}

// New returns a Dispatcher of source's webhooks; observer may be nil.
func New(source Source, observer Observer, log *slog.Logger) *Dispatcher {
	return &Dispatcher{source: source, observer: observer, log: log}
}

// The kinds of webhook in kube's metrics' type label.
const (
	typeAdmit    = "admit"
	typeValidate = "validating"
)

// kube's error_type values of apiserver_admission_webhook_rejection_count.
const (
	rejectCalling  = "calling_webhook_error"
	rejectInternal = "apiserver_internal_error"
	rejectDenied   = "no_error"
)

// kube's audit annotation prefixes for mutating webhooks.
const (
	mutationAnnotationPrefix   = "mutation.webhook.admission.k8s.io/"
	failedOpenMutatingPrefix   = "failed-open." + mutationAnnotationPrefix
	failedOpenValidatingPrefix = "failed-open.validating.webhook.admission.k8s.io/"
)

// Any says whether there are webhooks of a kind (errors read as yes: the
// call then reports them), so that a write without webhooks skips
// preparing their attributes.
func (d *Dispatcher) Any(ctx context.Context, mutating bool) bool {
	hooks, err := d.source.Webhooks(ctx, mutating)
	return err != nil || len(hooks) > 0
}

// Mutate is one round of the mutating webhooks (r.Round, see
// Reinvocation): it calls those that match the write, in order, replacing
// a.Object with each one's patched object, and says whether one changed
// it. It returns the first refusal or failure, as kube's Status.
func (d *Dispatcher) Mutate(ctx context.Context, a *Attributes, r *Reinvocation) (changed bool, err error) {
	if Exempt(a) {
		return false, nil
	}
	hooks, err := d.source.Webhooks(ctx, true)
	if err != nil || len(hooks) == 0 {
		return false, err
	}
	start := time.Now()
	r.Begin(a.Object)
	changed, err = d.mutate(ctx, a, hooks, r)
	r.End(a.Object)
	d.observeStep(typeAdmit, a, start, err)
	return changed, err
}

func (d *Dispatcher) mutate(ctx context.Context, a *Attributes, hooks []*Webhook, r *Reinvocation) (anyChanged bool, err error) {
	for i, h := range hooks {
		if r.Skip(h.UID) {
			continue
		}
		inv, err := d.shouldCall(ctx, h, a)
		if err != nil {
			return anyChanged, err
		}
		if inv == nil {
			continue
		}
		changed, err := d.mutateOne(ctx, h, inv, r.Round, i)
		if changed && inv != a && err == nil {
			err = inv.Store(ctx)
		}
		r.Ran(h.UID, changed, h.Reinvoke)
		anyChanged = anyChanged || changed
		if err != nil {
			return anyChanged, err
		}
	}
	return anyChanged, nil
}

// mutateOne calls one mutating webhook and applies its patch.
func (d *Dispatcher) mutateOne(ctx context.Context, h *Webhook, a *Attributes, round, index int) (changed bool, err error) {
	start := time.Now()
	resp, err := d.call(ctx, h, a)
	defer func() {
		a.Annotate(fmt.Sprintf("%sround_%d_index_%d", mutationAnnotationPrefix, round, index),
			fmt.Sprintf(`{"configuration":%q,"webhook":%q,"mutated":%t}`, h.Configuration, h.Name, changed))
	}()
	if err == nil {
		a.answered(h, resp)
		if !resp.Allowed {
			err = denial{rejection(h.Name, resp.Result)}
		} else if len(resp.Patch) > 0 {
			changed, err = applyPatch(h, a, resp)
		}
	}
	err = d.outcome(ctx, h, a, typeAdmit, start, err)
	if err == nil {
		return changed, nil
	}
	var failedOpen *failOpen
	if errors.As(err, &failedOpen) {
		a.Annotate(fmt.Sprintf("%sround_%d_index_%d", failedOpenMutatingPrefix, round, index), h.Name)
		if ctx.Err() != nil {
			return changed, apierror.Timeout("request did not complete within requested timeout", 0)
		}
		return changed, nil
	}
	return changed, err
}

// applyPatch applies a mutating webhook's JSON patch to a.Object, within
// the bounds of a client's JSON patch, and says whether it changed it.
func applyPatch(h *Webhook, a *Attributes, resp *response) (bool, error) {
	if *resp.PatchType != "JSONPatch" {
		return false, &errCalling{h.Name, fmt.Errorf("unsupported patch type %q", *resp.PatchType), http.StatusForbidden}
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		return false, &errCalling{h.Name, fmt.Errorf("received undecodable patch in webhook response: %w", err), http.StatusServiceUnavailable}
	}
	if len(ops) == 0 {
		return false, nil
	}
	if a.Object == nil {
		return false, apierror.Internal(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.Name))
	}
	cur, err := api.MarshalObject(a.Object)
	if err != nil {
		return false, apierror.Internal(err)
	}
	patched, err := patch.ApplyJSONPatch(cur, resp.Patch)
	if err != nil {
		return false, apierror.Internal(err)
	}
	obj, err := api.ParseObject(patched)
	if err != nil {
		return false, apierror.Internal(fmt.Errorf("the patched object: %w", err))
	}
	changed := !reflect.DeepEqual(normalise(cur), normalise(patched))
	a.Object = obj
	return changed, nil
}

// normalise decodes JSON for a comparison of values, not of bytes.
func normalise(b []byte) any {
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

// Validate calls the validating webhooks that match the write, in
// parallel, and returns once all have answered: the first refusal or
// failure in the webhooks' order, as kube's Status, or nil.
func (d *Dispatcher) Validate(ctx context.Context, a *Attributes) error {
	if Exempt(a) {
		return nil
	}
	hooks, err := d.source.Webhooks(ctx, false)
	if err != nil || len(hooks) == 0 {
		return err
	}
	var relevant []*Webhook
	var invs []*Attributes // the attributes each relevant webhook is called with
	for _, h := range hooks {
		inv, err := d.shouldCall(ctx, h, a)
		if err != nil {
			return err
		}
		if inv != nil {
			relevant, invs = append(relevant, h), append(invs, inv)
		}
	}
	if len(relevant) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return apierror.Timeout("request did not complete within requested timeout", 0)
	}
	start := time.Now()
	errs := make([]error, len(relevant))
	var wg sync.WaitGroup
	for i, h := range relevant {
		wg.Go(func() { errs[i] = d.validateOne(ctx, h, invs[i], i) })
	}
	wg.Wait()
	err = nil
	for _, e := range errs {
		if e != nil {
			err = e
			break
		}
	}
	d.observeStep("validate", a, start, err)
	return err
}

func (d *Dispatcher) validateOne(ctx context.Context, h *Webhook, a *Attributes, index int) error {
	start := time.Now()
	resp, err := d.call(ctx, h, a)
	if err == nil {
		a.answered(h, resp)
		if !resp.Allowed {
			err = denial{rejection(h.Name, resp.Result)}
		}
	}
	err = d.outcome(ctx, h, a, typeValidate, start, err)
	var failedOpen *failOpen
	if errors.As(err, &failedOpen) {
		a.Annotate(fmt.Sprintf("%sround_0_index_%d", failedOpenValidatingPrefix, index), h.Name)
		return nil
	}
	return err
}

// answered records what a webhook answered besides its decision: its
// warnings and audit annotations ("<webhook>/<key>").
func (a *Attributes) answered(h *Webhook, resp *response) {
	a.Warn(resp.Warnings...)
	for k, v := range resp.AuditAnnotations {
		a.Annotate(h.Name+"/"+k, v)
	}
}

// failOpen marks a call failure that failurePolicy Ignore lets pass.
type failOpen struct{ *errCalling }

// outcome counts a call in kube's metrics and turns its error into what
// the request gets: a failure to call is 500 under failurePolicy Fail and
// a failOpen under Ignore; a refusal or any other error (a dry run the
// webhook does not support, a patch that does not apply) stands.
func (d *Dispatcher) outcome(ctx context.Context, h *Webhook, a *Attributes, typ string, start time.Time, err error) error {
	seconds := time.Since(start).Seconds()
	var calling *errCalling
	switch {
	case err == nil:
		d.observe(h, typ, a, seconds, false, http.StatusOK, "")
		return nil
	case errors.As(err, &calling):
		// The reason may quote the webhook's answer, up to 3 MiB.
		reason := apierror.Truncate(calling.reason.Error(), apierror.MaxWarningRunes)
		if h.Ignore {
			d.observe(h, typ, a, seconds, false, calling.code, "")
			d.log.Warn("failed calling webhook, failing open", "webhook", h.Name, "err", reason)
			return &failOpen{calling}
		}
		errorType := rejectCalling
		if errors.Is(calling.reason, context.Canceled) {
			errorType = "" // kube leaves the client's cancellations out of the rejections
		}
		d.observe(h, typ, a, seconds, true, calling.code, errorType)
		d.log.Warn("failed calling webhook, failing closed", "webhook", h.Name, "err", reason)
		return apierror.Internal(calling)
	}
	var denied denial
	if errors.As(err, &denied) {
		d.observe(h, typ, a, seconds, true, int(denied.Status.Code), rejectDenied)
		return denied.StatusError
	}
	d.observe(h, typ, a, seconds, true, 0, rejectInternal)
	return err
}

// denial is a webhook's refusal (kube's ErrWebhookRejection), which the
// metrics tell from the server's own errors whatever its status says.
type denial struct{ *api.StatusError }

func (d *Dispatcher) observe(h *Webhook, typ string, a *Attributes, seconds float64, rejected bool, code int, errorType string) {
	if d.observer != nil {
		d.observer.ObserveWebhook(h.Name, typ, a.Operation, seconds, rejected, code, errorType)
	}
}

func (d *Dispatcher) observeStep(typ string, a *Attributes, start time.Time, err error) {
	if d.observer != nil {
		d.observer.ObserveStep(typ, a.Operation, time.Since(start).Seconds(), err != nil)
	}
}
