package validation

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/kubefmt"
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
	// unconvertible is the detail of the cause kube adds when it cannot
	// make a selector of spec.selector, and then leaves the template
	// unchecked; "" when it adds none and checks the template.
	unconvertible string
}

var (
	replicaSetOwner = owner{true, "empty selector is invalid for deployment", "activeDeadlineSeconds in ReplicaSet is not Supported", "invalid label selector"}
	daemonSetOwner  = owner{false, "empty selector is invalid for daemonset", "activeDeadlineSeconds in DaemonSet is not Supported", ""}
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
		c.labelSelector(ls, p.child("selector"))
		if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
			c.invalid(p.child("selector"), jsonValue{ls}, o.emptySelector)
		}
	}
	tp := p.child("template")
	template := object(spec, "template")
	labels := stringMap(object(template, "metadata"), "labels")
	switch sel, err := selector.FromLabelSelector(ls); {
	case err != nil && o.unconvertible != "":
		c.invalid(p.child("selector"), jsonValue{ls}, o.unconvertible)
		return
	case err == nil && !sel.Empty() && !sel.Matches(labels):
		c.invalid(tp.child("metadata", "labels"), jsonValue{labels}, "`selector` does not match template `labels`")
	}
	c.ownedTemplate(template, tp, o.activeDeadline)
}

// ownedTemplate is what kube checks of the template of a kind that keeps
// pods running: its pod spec, restartPolicy Always, no deadline
// (activeDeadline is the message).
func (c *causes) ownedTemplate(template map[string]any, p path, activeDeadline string) {
	c.podTemplateSpec(template, p)
	c.restartsAlways(object(template, "spec"), p, activeDeadline)
}

// restartsAlways is the part of ownedTemplate about restarts.
func (c *causes) restartsAlways(podSpec map[string]any, p path, activeDeadline string) {
	if rp := str(podSpec, "restartPolicy"); rp != "Always" {
		c.notSupported(p.child("spec", "restartPolicy"), rp, "Always")
	}
	if podSpec["activeDeadlineSeconds"] != nil {
		c.forbidden(p.child("spec", "activeDeadlineSeconds"), activeDeadline)
	}
}

// statefulSet is kube's ValidateStatefulSetSpec as its strategy's
// ValidateUpdate calls it (the alpha Recreate update strategy is off),
// the template's pod spec unchecked with skipTemplate (kube's
// SkipValidatePodTemplateSpec); statefulSetCreate adds what Validate
// checks on create only.
func statefulSet(o api.Object, skipTemplate bool) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	switch policy := str(spec, "podManagementPolicy"); policy {
	case "":
		c.required(p.child("podManagementPolicy"), "")
	case "OrderedReady", "Parallel":
	default:
		c.invalid(p.child("podManagementPolicy"), jsonValue{policy}, "must be 'OrderedReady' or 'Parallel'")
	}
	c.statefulSetStrategy(object(spec, "updateStrategy"), p.child("updateStrategy"))
	if retention := object(spec, "persistentVolumeClaimRetentionPolicy"); retention != nil {
		for _, f := range []string{"whenDeleted", "whenScaled"} {
			if v := str(retention, f); v != "Retain" && v != "Delete" {
				c.notSupported(p.child("persistentVolumeClaimRetentionPolicy", f), v, "Retain", "Delete")
			}
		}
	}
	c.nonNegative(p.child("replicas"), spec["replicas"])
	c.nonNegative(p.child("minReadySeconds"), spec["minReadySeconds"])
	c.nonNegative(p.child("ordinals", "start"), object(spec, "ordinals")["start"])
	raw, ok := spec["selector"].(map[string]any)
	ls := labelSelector(raw)
	if !ok {
		c.required(p.child("selector"), "")
	} else {
		c.labelSelector(ls, p.child("selector"))
		if len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
			c.invalid(p.child("selector"), jsonValue{ls}, "empty selector is invalid for statefulset")
		}
	}
	tp := p.child("template")
	template := object(spec, "template")
	if sel, err := selector.FromLabelSelector(ls); err != nil {
		c.invalid(p.child("selector"), jsonValue{ls}, "")
	} else {
		labels := stringMap(object(template, "metadata"), "labels")
		if !sel.Empty() && !sel.Matches(labels) {
			c.invalid(tp.child("metadata", "labels"), jsonValue{labels}, "`selector` does not match template `labels`")
		}
		// kube checks the template's labels a second time, but its
		// declarative validation step drops repeated errors (its
		// ErrorList.Filter goes through ToAggregate, which dedups them).
		if skipTemplate {
			c.labels(stringMap(object(template, "metadata"), "labels"), tp.child("labels"))
		} else {
			c.podTemplateSpec(withClaimVolumes(template, list(spec, "volumeClaimTemplates")), tp)
		}
	}
	c.restartsAlways(object(template, "spec"), tp, "activeDeadlineSeconds in StatefulSet is not Supported")
	return c
}

// statefulSetCreate is what kube checks of a new StatefulSet: its spec,
// and, the fields being immutable, on create only: serviceName, when set,
// a DNS label, and the claim templates' specs.
func statefulSetCreate(_ context.Context, o api.Object) []api.StatusCause {
	c := causes(statefulSet(o, false))
	spec := object(o, "spec")
	p := path("spec")
	for i, t := range list(spec, "volumeClaimTemplates") {
		t, _ := t.(map[string]any)
		c.claimSpec(object(t, "spec"), p.child("volumeClaimTemplates").index(i).child("spec"))
	}
	if name := str(spec, "serviceName"); name != "" {
		for _, msg := range kubefmt.Util.DNS1123Label(name) {
			c.invalid(p.child("serviceName"), name, msg)
		}
	}
	return c
}

// withClaimVolumes is template as kube validates a StatefulSet's: with a
// volume for each claim template (which its pods get), in place of any of
// the same name. kube adds them in map order, first: this adds them in
// the claim templates' order, so that the template's own volumes have
// kube's indexes.
func withClaimVolumes(template map[string]any, claims []any) map[string]any {
	if len(claims) == 0 {
		return template
	}
	var vols []any
	named := map[string]bool{}
	for _, t := range claims {
		t, _ := t.(map[string]any)
		name := str(object(t, "metadata"), "name")
		if !named[name] {
			named[name] = true
			vols = append(vols, map[string]any{"name": name, "persistentVolumeClaim": map[string]any{"claimName": name}})
		}
	}
	podSpec := object(template, "spec")
	for _, v := range list(podSpec, "volumes") {
		if v, _ := v.(map[string]any); !named[str(v, "name")] {
			vols = append(vols, v)
		}
	}
	podSpec = shallowCopy(podSpec)
	podSpec["volumes"] = vols
	template = shallowCopy(template)
	template["spec"] = podSpec
	return template
}

// statefulSetStrategy is the part of kube's ValidateStatefulSetSpec about
// spec.updateStrategy.
func (c *causes) statefulSetStrategy(s map[string]any, p path) {
	ru, hasRollingUpdate := s["rollingUpdate"].(map[string]any)
	switch str(s, "type") {
	case "":
		c.required(p, "")
	case "OnDelete":
		if hasRollingUpdate {
			c.invalid(p.child("rollingUpdate"), internalStatefulRollingUpdate(ru), "only allowed for updateStrategy 'RollingUpdate'")
		}
	case "RollingUpdate":
		if hasRollingUpdate {
			rp := p.child("rollingUpdate")
			c.nonNegative(rp.child("partition"), ru["partition"])
			if mu := ru["maxUnavailable"]; mu != nil {
				c.positiveIntOrPercent(rp.child("maxUnavailable"), mu)
				if intOrPercentValue(mu) == 0 {
					c.invalid(rp.child("maxUnavailable"), jsonValue{mu}, "cannot be 0")
				}
				c.notAbove100Percent(rp.child("maxUnavailable"), mu)
			}
		}
	default:
		internal := struct {
			Type          string
			RollingUpdate any
		}{str(s, "type"), nil}
		if hasRollingUpdate {
			internal.RollingUpdate = internalStatefulRollingUpdate(ru).v
		}
		c.invalid(p, jsonValue{internal}, "must be 'RollingUpdate' or 'OnDelete'")
	}
}

// internalStatefulRollingUpdate is a StatefulSet's rollingUpdate as kube's
// internal type renders it in messages.
func internalStatefulRollingUpdate(ru map[string]any) jsonValue {
	partition, _ := integer(ru["partition"])
	return jsonValue{struct {
		Partition      int64
		MaxUnavailable any
	}{partition, ru["maxUnavailable"]}}
}

// positiveIntOrPercent is kube's ValidatePositiveIntOrPercent on a value
// the schema has found an integer or a string.
func (c *causes) positiveIntOrPercent(p path, v any) {
	if s, ok := v.(string); ok {
		for _, msg := range kubefmt.Percent(s) {
			c.invalid(p, jsonValue{s}, msg)
		}
		return
	}
	c.nonNegative(p, v)
}

// percent is the value of a valid percentage ("25%").
func percent(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok || len(kubefmt.Percent(s)) > 0 {
		return 0, false
	}
	n, _ := strconv.ParseInt(strings.TrimSuffix(s, "%"), 10, 64)
	return n, true
}

// intOrPercentValue is kube's getIntOrPercentValue: a percentage's
// number, else IntOrString's IntValue (a string that is not a number is 0).
func intOrPercentValue(v any) int64 {
	if n, ok := percent(v); ok {
		return n
	}
	if s, ok := v.(string); ok {
		n, _ := strconv.Atoi(s)
		return int64(n)
	}
	n, _ := integer(v)
	return n
}

// notAbove100Percent is kube's IsNotMoreThan100Percent.
func (c *causes) notAbove100Percent(p path, v any) {
	if n, ok := percent(v); ok && n > 100 {
		c.invalid(p, jsonValue{v}, "must not be greater than 100%")
	}
}

// strategy is kube's ValidateDeploymentStrategy.
func (c *causes) strategy(s map[string]any, p path) {
	switch str(s, "type") {
	case "Recreate":
		if s["rollingUpdate"] != nil {
			c.forbidden(p.child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")
		}
	case "RollingUpdate":
		ru, ok := s["rollingUpdate"].(map[string]any)
		if !ok {
			c.required(p.child("rollingUpdate"), "this should be defaulted and never be nil")
			break
		}
		rp := p.child("rollingUpdate")
		unavailable, surge := intOrZero(ru["maxUnavailable"]), intOrZero(ru["maxSurge"])
		c.positiveIntOrPercent(rp.child("maxUnavailable"), unavailable)
		c.positiveIntOrPercent(rp.child("maxSurge"), surge)
		if intOrPercentValue(unavailable) == 0 && intOrPercentValue(surge) == 0 {
			c.invalid(rp.child("maxUnavailable"), jsonValue{unavailable}, "may not be 0 when `maxSurge` is 0")
		}
		c.notAbove100Percent(rp.child("maxUnavailable"), unavailable)
	default:
		c.add(api.CauseTypeFieldValueNotSupported, p, "Unsupported value: "+render(internalStrategy(s))+`: supported values: "Recreate", "RollingUpdate"`)
	}
}

// daemonSetStrategy is kube's ValidateDaemonSetUpdateStrategy.
func (c *causes) daemonSetStrategy(s map[string]any, p path) {
	switch str(s, "type") {
	case "OnDelete":
	case "RollingUpdate":
		ru, ok := s["rollingUpdate"].(map[string]any)
		if !ok {
			c.required(p.child("rollingUpdate"), "")
			break
		}
		rp := p.child("rollingUpdate")
		unavailable, surge := intOrZero(ru["maxUnavailable"]), intOrZero(ru["maxSurge"])
		c.positiveIntOrPercent(rp.child("maxUnavailable"), unavailable)
		c.positiveIntOrPercent(rp.child("maxSurge"), surge)
		c.notAbove100Percent(rp.child("maxUnavailable"), unavailable)
		c.notAbove100Percent(rp.child("maxSurge"), surge)
		switch hasUnavailable, hasSurge := intOrPercentValue(unavailable) != 0, intOrPercentValue(surge) != 0; {
		case hasUnavailable && hasSurge:
			c.invalid(rp.child("maxSurge"), jsonValue{surge}, "may not be set when maxUnavailable is non-zero")
		case !hasUnavailable && !hasSurge:
			c.required(rp.child("maxUnavailable"), "cannot be 0 when maxSurge is 0")
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
