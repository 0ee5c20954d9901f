package validation

import (
	"encoding/json"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/selector"
)

// deployment is the part of kube's ValidateDeploymentSpec users meet first:
// replicas, the selector and the template it must select, the strategy.
func deployment(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	c.nonNegative(p.child("replicas"), spec["replicas"])
	c.selectedTemplate(spec, p, replicaSetOwner)
	c.strategy(object(spec, "strategy"), p.child("strategy"))
	c.nonNegative(p.child("minReadySeconds"), spec["minReadySeconds"])
	c.nonNegative(p.child("revisionHistoryLimit"), spec["revisionHistoryLimit"])
	if v := spec["progressDeadlineSeconds"]; v != nil {
		c.nonNegative(p.child("progressDeadlineSeconds"), v)
		deadline, _ := integer(v)
		if min, _ := integer(spec["minReadySeconds"]); deadline <= min {
			c.invalid(p.child("progressDeadlineSeconds"), deadline, "must be greater than minReadySeconds")
		}
	}
	return c
}

// replicaSet is kube's ValidateReplicaSetSpec.
func replicaSet(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	c.nonNegative(p.child("replicas"), spec["replicas"])
	c.nonNegative(p.child("minReadySeconds"), spec["minReadySeconds"])
	c.selectedTemplate(spec, p, replicaSetOwner)
	return c
}

// daemonSet is the part of kube's ValidateDaemonSetSpec users meet first:
// the selector and the template it must select, the update strategy's
// type, minReadySeconds, revisionHistoryLimit.
func daemonSet(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	c.selectedTemplate(spec, p, daemonSetOwner)
	c.nonNegative(p.child("minReadySeconds"), spec["minReadySeconds"])
	c.nonNegative(p.child("templateGeneration"), spec["templateGeneration"])
	c.daemonSetStrategy(object(spec, "updateStrategy"), p.child("updateStrategy"))
	c.nonNegative(p.child("revisionHistoryLimit"), spec["revisionHistoryLimit"])
	return c
}

// owner is how kube's validation of a kind that owns pods by a selector
// differs from one kind to the next.
type owner struct {
	// requireSelector: a missing selector is Required (it is then also
	// one that selects nothing, so no template).
	requireSelector bool
	// emptySelector and activeDeadline name the kind in the messages.
	emptySelector, activeDeadline string
}

var (
	replicaSetOwner = owner{true, "empty selector is invalid for deployment", "activeDeadlineSeconds in ReplicaSet is not Supported"}
	daemonSetOwner  = owner{false, "empty selector is invalid for daemonset", "activeDeadlineSeconds in DaemonSet is not Supported"}
)

// selectedTemplate is what kube's validation of Deployments, ReplicaSets
// and DaemonSets shares: a selector that is not empty and selects the
// template's labels, and a template whose pods restart Always.
func (c *causes) selectedTemplate(spec map[string]any, p path, o owner) {
	raw, ok := spec["selector"].(map[string]any)
	if !ok && o.requireSelector {
		c.required(p.child("selector"), "")
	}
	ls := labelSelector(raw)
	if ok {
		if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
			c.invalid(p.child("selector"), jsonValue{ls}, o.emptySelector)
		}
	}
	sel, err := selector.FromLabelSelector(ls)
	if err != nil {
		c.invalid(p.child("selector"), jsonValue{ls}, "invalid label selector")
		return
	}
	tp := p.child("template")
	template := object(spec, "template")
	labels := stringMap(object(template, "metadata"), "labels")
	if !sel.Empty() && !sel.Matches(labels) {
		c.invalid(tp.child("metadata", "labels"), jsonValue{labels}, "`selector` does not match template `labels`")
	}
	c.ownedTemplate(template, tp, o.activeDeadline)
}

// ownedTemplate is what kube checks of the template of a kind that keeps
// pods running: its pod spec, restartPolicy Always, no deadline
// (activeDeadline is the message).
func (c *causes) ownedTemplate(template map[string]any, p path, activeDeadline string) {
	c.podTemplateSpec(template, p)
	podSpec := object(template, "spec")
	if rp := str(podSpec, "restartPolicy"); rp != "Always" {
		c.notSupported(p.child("spec", "restartPolicy"), rp, "Always")
	}
	if podSpec["activeDeadlineSeconds"] != nil {
		c.forbidden(p.child("spec", "activeDeadlineSeconds"), activeDeadline)
	}
}

// strategy is kube's ValidateDeploymentStrategy, less the checks of
// maxSurge and maxUnavailable.
func (c *causes) strategy(s map[string]any, p path) {
	switch str(s, "type") {
	case "Recreate":
		if s["rollingUpdate"] != nil {
			c.forbidden(p.child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")
		}
	case "RollingUpdate":
		if s["rollingUpdate"] == nil {
			c.required(p.child("rollingUpdate"), "this should be defaulted and never be nil")
		}
	default:
		c.add(api.CauseTypeFieldValueNotSupported, p, "Unsupported value: "+render(internalStrategy(s))+`: supported values: "Recreate", "RollingUpdate"`)
	}
}

// daemonSetStrategy is kube's ValidateDaemonSetUpdateStrategy, less the
// checks of maxSurge and maxUnavailable.
func (c *causes) daemonSetStrategy(s map[string]any, p path) {
	switch str(s, "type") {
	case "OnDelete":
	case "RollingUpdate":
		if s["rollingUpdate"] == nil {
			c.required(p.child("rollingUpdate"), "")
		}
	default:
		c.add(api.CauseTypeFieldValueNotSupported, p, "Unsupported value: "+render(internalStrategy(s))+`: supported values: "RollingUpdate", "OnDelete"`)
	}
}

// internalStrategy is a Deployment's or DaemonSet's strategy as kube's
// internal type, whose fields have no JSON names, renders it in messages.
func internalStrategy(s map[string]any) any {
	type rollingUpdate struct{ MaxUnavailable, MaxSurge any }
	internal := struct {
		Type          string
		RollingUpdate *rollingUpdate
	}{Type: str(s, "type")}
	if ru := object(s, "rollingUpdate"); ru != nil {
		// IntOrStrings, not pointers: unset is 0.
		internal.RollingUpdate = &rollingUpdate{intOrZero(ru["maxUnavailable"]), intOrZero(ru["maxSurge"])}
	}
	return internal
}

func intOrZero(v any) any {
	if v == nil {
		return 0
	}
	return v
}

// labelSelector is raw as kube's LabelSelector, nil when raw is.
func labelSelector(raw map[string]any) *selector.LabelSelector {
	if raw == nil {
		return nil
	}
	ls := new(selector.LabelSelector)
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, ls) // the schema has checked its shape
	return ls
}
