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
	c.replicaSetTemplate(spec, p)
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
	c.replicaSetTemplate(spec, p)
	return c
}

// replicaSetTemplate is what kube's Deployment and ReplicaSet validation
// share: a selector that is set, not empty and selects the template's
// labels, and a template whose pods restart Always.
func (c *causes) replicaSetTemplate(spec map[string]any, p path) {
	raw, ok := spec["selector"].(map[string]any)
	if !ok {
		c.required(p.child("selector"), "")
	}
	var ls *selector.LabelSelector
	if ok {
		ls = new(selector.LabelSelector)
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, ls) // the schema has checked its shape
		if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
			// kube's message says deployment for ReplicaSets too.
			c.invalid(p.child("selector"), jsonValue{ls}, "empty selector is invalid for deployment")
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
	c.podTemplateSpec(template, tp)
	podSpec := object(template, "spec")
	if rp := str(podSpec, "restartPolicy"); rp != "Always" {
		c.notSupported(tp.child("spec").child("restartPolicy"), rp, "Always")
	}
	if podSpec["activeDeadlineSeconds"] != nil {
		c.forbidden(tp.child("spec").child("activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported")
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
		// kube's value is its internal DeploymentStrategy, whose fields
		// have no JSON names.
		type rollingUpdate struct{ MaxUnavailable, MaxSurge any }
		internal := struct {
			Type          string
			RollingUpdate *rollingUpdate
		}{Type: str(s, "type")}
		if ru := object(s, "rollingUpdate"); ru != nil {
			internal.RollingUpdate = &rollingUpdate{ru["maxUnavailable"], ru["maxSurge"]}
		}
		c.add(api.CauseTypeFieldValueNotSupported, p, "Unsupported value: "+render(internal)+`: supported values: "Recreate", "RollingUpdate"`)
	}
}
