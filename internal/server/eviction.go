package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/client/wait"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// evictionSubresource is pods/eviction: POST an Eviction naming the pod
// and the pod is deleted if its PodDisruptionBudget allows it, as kube's
// EvictionREST (pkg/registry/core/pod/storage/eviction.go), which kubectl
// drain and the autoscalers call. No disruption controller runs here: a
// budget's status is what its clients wrote, and the eviction only
// decrements disruptionsAllowed and records the pod in disruptedPods.
var evictionSubresource = resource.Subresource{Name: "eviction", Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}}

// evictionBeta is the other apiVersion kube's EvictionREST accepts
// (AcceptsGroupVersion); its Eviction has the same fields as v1's.
const evictionBeta = "policy/v1beta1"

// Kube's EvictionsRetry: the tries of a deletion that ignores budgets when
// the pod changed meanwhile, and the pause between them.
const (
	evictionTries      = 20
	evictionRetryPause = 500 * time.Millisecond
)

// maxDisruptedPods is kube's MaxDisruptedPodSize: a budget recording more
// pods whose eviction its controller has not yet seen refuses evictions.
const maxDisruptedPods = 2000

// The messages and cause type of a refused eviction, as kube's.
const (
	disruptionBudgetCause = "DisruptionBudget"
	violatesBudget        = "Cannot evict pod as it would violate the pod's disruption budget."
	severalBudgets        = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)

// evict serves a pod's eviction as kube's create handler and
// EvictionREST.Create: the Eviction is read, mutated by admission, checked
// (name, deleteOptions, dry run) and validated by admission; then the pod
// is evicted. The answer is a Status with code 201, or with code 500 when
// several budgets select the pod, both written with HTTP 201 as kube's
// handler writes whatever Status the storage returns.
func (q *request) evict() {
	ev, err := q.readEviction()
	if err == nil {
		// kube's NamespaceLifecycle refuses an Eviction, a create, in a
		// Terminating namespace (kubectl drain leaves such pods to it).
		err = q.s.registry.CheckNamespace(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
	}
	if err == nil {
		ev, err = q.mutate(ev, nil)
	}
	var opts deleteOptions
	if err == nil {
		opts, err = evictionOptions(ev, q.info.Name, q.r.URL.Query()["dryRun"])
	}
	if err == nil {
		err = q.admit(q.r.Context(), ev, nil)
	}
	var status api.Status
	if err == nil {
		e := &eviction{s: q.s, ctx: opts.context(q.r), ns: q.info.Namespace, name: q.info.Name, opts: opts.registry()}
		e.pods, _ = q.s.catalog.Get("", "v1", "pods")
		e.budgets, _ = q.s.catalog.Get("policy", "v1", "poddisruptionbudgets")
		status, err = e.run()
	}
	if err != nil {
		q.fail(err)
		return
	}
	status.TypeMeta = api.TypeMeta{APIVersion: "v1", Kind: "Status"}
	if status.Code == 0 {
		status.Code = http.StatusCreated
	}
	writeAs(q.w, http.StatusCreated, q.out, status)
}

// readEviction reads the request's Eviction, of policy/v1 or v1beta1 (as
// v1, as well as one that names neither), with the metadata kube's create
// handler wipes removed.
func (q *request) readEviction() (api.Object, error) {
	ev, err := q.readCreate(evictionSubresource, evictionBeta)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"creationTimestamp", "uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		delete(ev.Metadata(), f) // rest.WipeObjectMetaSystemFields
	}
	return ev, nil
}

// evictionOptions are the DeleteOptions of Eviction ev for pod name, once
// checked as kube's EvictionREST.Create checks them, with the request's
// dry run (query) propagated into them and, if it has options, into ev
// (propagateDryRun).
func evictionOptions(ev api.Object, name string, query []string) (deleteOptions, error) {
	var opts deleteOptions
	if ev.Name() != name {
		return opts, apierror.BadRequest("name in URL does not match name in Eviction object")
	}
	raw, ok := ev["deleteOptions"].(map[string]any)
	if !ok && ev["deleteOptions"] != nil {
		return opts, apierror.BadRequest("the body is not a valid Eviction: deleteOptions is not an object")
	}
	if raw["ignoreStoreReadErrorWithClusterBreakingPotential"] == true {
		const f = "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"
		return opts, apierror.Invalid(evictionSubresource.Group, evictionSubresource.Kind, name, []api.StatusCause{
			apierror.Field(api.CauseTypeFieldValueInvalid, f, "Invalid value: true: can not be set for pod eviction, try after removing the option")})
	}
	if raw != nil {
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &opts)
		}
		if err != nil {
			return opts, apierror.BadRequest(fmt.Sprintf("the body is not a valid Eviction: %v", err))
		}
	}
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = query
		if raw != nil && len(query) > 0 { // and into the Eviction admission sees
			raw["dryRun"] = api.StringList(query)
		}
	case len(query) > 0 && !reflect.DeepEqual(query, opts.DryRun):
		// A plain error in kube: a 500 with no reason.
		return opts, &api.StatusError{Status: api.NewStatus(http.StatusInternalServerError, "",
			fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", query, opts.DryRun))}
	}
	return opts, nil
}

// eviction is one pod's eviction once admitted.
type eviction struct {
	s        *Server
	ctx      context.Context // a dry run's if the request or its options ask
	ns, name string
	opts     registry.DeleteOptions // the Eviction's
	pods     *resource.Resource
	budgets  *resource.Resource
}

// run evicts the pod as kube's EvictionREST.Create once admitted: a pod
// that is terminal, pending or being deleted is deleted at once; else its
// one budget, if any, must allow the disruption (which it records), or
// the pod must be unready and its budget allow unready pods to go.
func (e *eviction) run() (api.Status, error) {
	pod, deleted, err := e.deleteIgnoringBudgets()
	if err != nil || deleted {
		return api.Status{Status: api.StatusSuccess}, err
	}
	budgets, err := e.budgetsOf(pod)
	if err != nil {
		return api.Status{}, err
	}
	if len(budgets) > 1 {
		return api.Status{Status: api.StatusFailure, Message: severalBudgets, Code: http.StatusInternalServerError}, nil
	}
	opts, unready := e.opts, false
	if len(budgets) == 1 {
		b := budgets[0]
		unready = !podReady(pod) && (b.Spec.UnhealthyPodEvictionPolicy == "AlwaysAllow" ||
			b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0)
		if !unready {
			if err := e.decrement(b.Metadata.Name); err != nil {
				return api.Status{}, err
			}
		}
	}
	if unready {
		// The pod must not have become ready since it was read.
		opts.ResourceVersion = new(pod.ResourceVersion())
	}
	err = e.markAndDelete(opts)
	if unready && e.opts.ResourceVersion == nil && isReason(err, api.StatusReasonConflict) {
		return api.Status{}, stillProcessed(budgets[0].Metadata.Name)
	}
	return api.Status{Status: api.StatusSuccess}, err
}

// deleteIgnoringBudgets deletes the pod, and reports it deleted, if no
// budget need be checked (canIgnorePDB): it is terminal, pending or being
// deleted. A pod not terminal must not change between the read and the
// delete (shouldEnforceResourceVersion); if it does, the eviction starts
// again, unless the client gave a resourceVersion. Else it returns the pod.
func (e *eviction) deleteIgnoringBudgets() (api.Object, bool, error) {
	for try := 1; ; try++ {
		pod, err := e.s.registry.Get(e.ctx, e.pods, e.ns, e.name)
		if err != nil {
			return nil, false, err
		}
		status, _ := pod["status"].(map[string]any)
		phase := stringAt(status, "phase")
		terminal, deleting := phase == "Succeeded" || phase == "Failed", pod.Metadata()["deletionTimestamp"] != nil
		if !terminal && !deleting && phase != "Pending" {
			return pod, false, nil
		}
		opts := e.opts
		if !terminal && !deleting && opts.ResourceVersion == nil {
			opts.ResourceVersion = new(pod.ResourceVersion())
		}
		err = e.markAndDelete(opts)
		if err == nil || !isReason(err, api.StatusReasonConflict) || e.opts.ResourceVersion != nil || try == evictionTries {
			return nil, err == nil, err
		}
		if err := wait.Sleep(e.ctx, evictionRetryPause); err != nil {
			return nil, false, err
		}
	}
}

// markAndDelete gives the pod kube's DisruptionTarget condition, unless
// this is a dry run, and deletes it with opts (addConditionAndDeletePod).
// Neither write is admitted, as in kube, whose storage makes them.
func (e *eviction) markAndDelete(opts registry.DeleteOptions) error {
	if !registry.IsDryRun(e.ctx) {
		status := partView(e.pods) // kube's pods/status storage
		updated, err := e.s.registry.Update(e.ctx, status, e.ns, e.name, func(cur api.Object) (api.Object, error) {
			if err := registry.CheckPreconditions(e.pods, cur, opts.Preconditions); err != nil {
				return nil, err
			}
			pod := cur.DeepCopy()
			delete(pod.Metadata(), "resourceVersion") // the preconditions are checked
			st, _ := pod["status"].(map[string]any)
			if st == nil {
				st = map[string]any{}
				pod["status"] = st
			}
			st["conditions"] = setPodCondition(listAt(st, "conditions"), map[string]any{
				"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"})
			return pod, nil
		})
		if err != nil {
			return err
		}
		e.s.afterWrite(e.pods, updated.Object)
		if opts.ResourceVersion != nil {
			opts.ResourceVersion = new(updated.Object.ResourceVersion()) // the write was ours
		}
	}
	obj, _, err := e.s.registry.Delete(e.ctx, e.pods, e.ns, e.name, opts)
	if err == nil {
		e.s.afterWrite(e.pods, obj)
	}
	return err
}

// budget is what an eviction reads of a PodDisruptionBudget.
type budget struct {
	Metadata struct {
		Name       string `json:"name"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Selector                   *selector.LabelSelector `json:"selector"`
		UnhealthyPodEvictionPolicy string                  `json:"unhealthyPodEvictionPolicy"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64             `json:"observedGeneration"`
		DisruptionsAllowed int32             `json:"disruptionsAllowed"`
		CurrentHealthy     int32             `json:"currentHealthy"`
		DesiredHealthy     int32             `json:"desiredHealthy"`
		DisruptedPods      map[string]string `json:"disruptedPods"`
		Conditions         []budgetCondition `json:"conditions"`
	} `json:"status"`
}

// budgetCondition is what an eviction reads of a budget's condition.
type budgetCondition struct{ Type, Status, Reason, Message string }

func budgetOf(obj api.Object) (budget, error) {
	var b budget
	raw, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	return b, err
}

// budgetsOf returns the budgets of the pod's namespace whose selector
// selects it; an invalid selector selects nothing, a missing one nothing.
func (e *eviction) budgetsOf(pod api.Object) ([]budget, error) {
	list, err := e.s.registry.List(e.ctx, e.budgets, e.ns, registry.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []budget
	for _, obj := range list.Items {
		b, err := budgetOf(obj)
		if err != nil {
			return nil, apierror.Internal(err)
		}
		sel, err := selector.FromLabelSelector(b.Spec.Selector)
		if err == nil && sel.Matches(pod.Labels()) {
			out = append(out, b)
		}
	}
	return out, nil
}

// decrement takes one disruption from budget name for the pod, as kube's
// checkAndDecrement, on the budget as stored (a concurrent write makes it
// check again, as kube's retry on conflict does): refused with 429 while
// the budget's status is older than its spec or it allows none, with 403
// when it is broken; else disruptionsAllowed goes down, and the pod is
// recorded in disruptedPods.
func (e *eviction) decrement(name string) error {
	updated, err := e.s.registry.Update(e.ctx, partView(e.budgets), e.ns, name, func(cur api.Object) (api.Object, error) {
		b, err := budgetOf(cur)
		if err != nil {
			return nil, apierror.Internal(err)
		}
		if err := allowsDisruption(b); err != nil {
			return nil, err
		}
		next := cur.DeepCopy()
		delete(next.Metadata(), "resourceVersion")
		st := next["status"].(map[string]any) // budgetOf found status.observedGeneration
		allowed := b.Status.DisruptionsAllowed - 1
		st["disruptionsAllowed"] = json.Number(strconv.Itoa(int(allowed)))
		if allowed == 0 {
			st["conditions"] = setCondition(listAt(st, "conditions"), map[string]any{
				"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": "",
				"observedGeneration": json.Number(strconv.FormatInt(b.Status.ObservedGeneration, 10))})
		}
		pods, _ := st["disruptedPods"].(map[string]any)
		if pods == nil {
			pods = map[string]any{}
			st["disruptedPods"] = pods
		}
		pods[e.name] = api.NewTime(time.Now()).Format(time.RFC3339)
		return next, nil
	})
	if err == nil {
		e.s.afterWrite(e.budgets, updated.Object)
	}
	return err
}

// allowsDisruption is kube's check of a budget before an eviction, with
// its answers.
func allowsDisruption(b budget) error {
	name := b.Metadata.Name
	refuse := func(why, msg string) error {
		err := apierror.ForbiddenTo(apierror.Target{Group: "policy", Resource: "poddisruptionbudget", Name: name}, why)
		err.Status.Details.Causes = []api.StatusCause{{Type: disruptionBudgetCause, Message: msg}}
		return err
	}
	switch {
	case b.Status.ObservedGeneration < b.Metadata.Generation:
		return stillProcessed(name)
	case b.Status.DisruptionsAllowed < 0:
		return refuse("pdb disruptions allowed is negative",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: pdb disruptions allowed is negative", name))
	case len(b.Status.DisruptedPods) > maxDisruptedPods:
		return refuse("DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: too many pending evictions not confirmed by PDB controller", name))
	case b.Status.DisruptionsAllowed > 0:
		return nil
	}
	var cond budgetCondition
	for _, c := range b.Status.Conditions {
		if c.Type == "DisruptionAllowed" {
			cond = c
			break
		}
	}
	failed := cond.Status == "False" && cond.Message != ""
	var msg string
	switch {
	case failed && cond.Reason == "SyncFailed": // the healthy counts are not to be trusted
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", name, cond.Message)
	case b.Status.CurrentHealthy <= b.Status.DesiredHealthy:
		msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
	case failed:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", name, cond.Reason, cond.Message)
	default:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", name)
	}
	err := apierror.TooManyRequests(violatesBudget, 0)
	err.Status.Details.Causes = []api.StatusCause{{Type: disruptionBudgetCause, Message: msg}}
	return err
}

// stillProcessed is kube's 429 for a budget whose status does not yet
// answer its spec, or an unready pod that changed while being evicted.
func stillProcessed(name string) error {
	err := apierror.TooManyRequests(violatesBudget, 10)
	err.Status.Details.Causes = []api.StatusCause{{Type: disruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)}}
	return err
}

// podReady is kube's IsPodReady: the Ready condition is True.
func podReady(pod api.Object) bool {
	status, _ := pod["status"].(map[string]any)
	for _, c := range listAt(status, "conditions") {
		c, _ := c.(map[string]any)
		if stringAt(c, "type") == "Ready" {
			return stringAt(c, "status") == "True"
		}
	}
	return false
}

// setCondition is conditions with cond set as apimachinery's
// SetStatusCondition sets a meta/v1 Condition: an existing one of its type
// keeps its lastTransitionTime unless the status changes, a new one gets
// the present.
func setCondition(conditions []any, cond map[string]any) []any {
	now := api.NewTime(time.Now()).Format(time.RFC3339)
	for i, c := range conditions {
		c, _ := c.(map[string]any)
		if stringAt(c, "type") != stringAt(cond, "type") {
			continue
		}
		next := maps.Clone(c)
		maps.Copy(next, cond)
		if stringAt(c, "status") != stringAt(cond, "status") {
			next["lastTransitionTime"] = now
		}
		out := slices.Clone(conditions)
		out[i] = next
		return out
	}
	cond["lastTransitionTime"] = now
	return append(conditions, cond)
}
