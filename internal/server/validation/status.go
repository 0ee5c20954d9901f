package validation

import (
	"context"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

// ForStatusUpdate returns what kube's status strategy of the built-in
// resource group/version/plural checks on a write through its status
// subresource, metadata aside (the registry's), or nil when this package
// has no status strategy for it. kube's status strategies check metadata
// and status, never the spec: an object stored before a rule of its spec
// existed still takes status writes, so these run in place of Func,
// CreateFunc and UpdateFunc.
func ForStatusUpdate(group, version, plural string) UpdateFunc {
	return statusUpdates[[3]string{group, version, plural}]
}

var statusUpdates = map[[3]string]UpdateFunc{
	{"", "v1", "pods"}:                                podStatusUpdate,
	{"", "v1", "replicationcontrollers"}:              countsUpdate(replicaSetCounts, false),
	{"", "v1", "services"}:                            serviceStatusUpdate,
	{"", "v1", "persistentvolumeclaims"}:              claimStatusUpdate,
	{"apps", "v1", "deployments"}:                     countsUpdate(deploymentCounts, true),
	{"apps", "v1", "replicasets"}:                     countsUpdate(replicaSetCounts, false),
	{"apps", "v1", "daemonsets"}:                      countsUpdate(daemonSetCounts, true),
	{"apps", "v1", "statefulsets"}:                    countsUpdate(statefulSetCounts, true),
	{"networking.k8s.io", "v1", "ingresses"}:          ingressStatusUpdate,
	{"batch", "v1", "jobs"}:                           jobStatusUpdate,
	{"batch", "v1", "cronjobs"}:                       noStatusRules, // kube's has none either
	{"", "v1", "nodes"}:                               nodeStatusUpdate,
	{"", "v1", "namespaces"}:                          namespaceStatusUpdate,
	{"", "v1", "persistentvolumes"}:                   versionedStatusUpdate,
	{"autoscaling", "v1", "horizontalpodautoscalers"}: hpaStatusUpdate,
	{"autoscaling", "v2", "horizontalpodautoscalers"}: hpaStatusUpdate,
	{"policy", "v1", "poddisruptionbudgets"}:          pdbStatusUpdate,
}

// versionedStatusUpdate is kube's ValidatePersistentVolumeStatusUpdate: a
// write names the resourceVersion it replaces.
func versionedStatusUpdate(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	if str(object(o, "metadata"), "resourceVersion") == "" {
		c.required("resourceVersion", "")
	}
	return c
}

// hpaStatusUpdate is kube's ValidateHorizontalPodAutoscalerStatusUpdate;
// a v1 status, which keeps its conditions in an annotation, has counts
// only.
func hpaStatusUpdate(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	status, p := object(o, "status"), path("status")
	for i, cond := range list(status, "conditions") {
		cond, _ := cond.(map[string]any)
		c.nonNegative(p.child("conditions").index(i).child("observedGeneration"), cond["observedGeneration"])
	}
	for _, f := range []string{"currentReplicas", "desiredReplicas"} {
		c.nonNegative(p.child(f), count(status, f))
	}
	return c
}

// pdbStatusUpdate is kube's ValidatePodDisruptionBudgetStatusUpdate for
// policy/v1 (v1beta1, which skips the counts, is not served).
func pdbStatusUpdate(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	status, p := object(o, "status"), path("status")
	c.metaConditions(p.child("conditions"), list(status, "conditions"))
	for _, f := range []string{"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"} {
		c.nonNegative(p.child(f), count(status, f))
	}
	return c
}

// metaConditions is metav1 validation's ValidateConditions, the rules of
// a list of metav1.Condition: each type once, and ValidateCondition.
func (c *causes) metaConditions(p path, conds []any) {
	seen := map[string]bool{}
	for i, cond := range conds {
		cond, _ := cond.(map[string]any)
		cp, typ := p.index(i), str(cond, "type")
		if seen[typ] {
			c.duplicate(cp, typ)
		}
		seen[typ] = true
		if typ == "" {
			c.required(cp.child("type"), "is required")
		} else {
			c.qualifiedName(cp.child("type"), typ)
		}
		c.enum(cp.child("status"), str(cond, "status"), "False", "True", "Unknown")
		if n, ok := integer(cond["observedGeneration"]); ok && n < 0 {
			c.invalid(cp.child("observedGeneration"), n, "must be greater than or equal to zero")
		}
		if t, err := time.Parse(time.RFC3339, str(cond, "lastTransitionTime")); err != nil || t.IsZero() {
			c.required(cp.child("lastTransitionTime"), "")
		}
		switch reason := str(cond, "reason"); {
		case reason == "":
			c.required(cp.child("reason"), "")
		default:
			for _, msg := range kubefmt.ConditionReason(reason) {
				c.invalid(cp.child("reason"), reason, msg)
			}
			if len(reason) > maxConditionReason {
				c.tooLong(cp.child("reason"), maxConditionReason)
			}
		}
		if len(str(cond, "message")) > maxConditionMessage {
			c.tooLong(cp.child("message"), maxConditionMessage)
		}
	}
}

// The bounds of a metav1.Condition's reason and message, in bytes.
const (
	maxConditionReason  = 1024
	maxConditionMessage = 32 * 1024
)

func noStatusRules(context.Context, api.Object, api.Object) []api.StatusCause { return nil }

// replicaCounts are the counts a status holds, each checked not negative
// (a pointer's only when set), then which of them may not exceed which.
type replicaCounts struct {
	counts, pointers []string
	atMostReplicas   []string
	// availableMessage is what exceeding readyReplicas with
	// availableReplicas is called ("" when it is not checked).
	availableMessage string
}

// check adds the causes of status's counts.
func (r replicaCounts) check(c *causes, status map[string]any) {
	p := path("status")
	for _, f := range r.counts {
		c.nonNegative(p.child(f), count(status, f))
	}
	for _, f := range r.pointers {
		c.nonNegative(p.child(f), status[f])
	}
	replicas := count(status, "replicas")
	for _, f := range r.atMostReplicas {
		if n := count(status, f); n > replicas {
			c.invalid(p.child(f), n, "cannot be greater than status.replicas")
		}
	}
	if available := count(status, "availableReplicas"); r.availableMessage != "" && available > count(status, "readyReplicas") {
		c.invalid(p.child("availableReplicas"), available, r.availableMessage)
	}
}

// count is a status count as kube's int32 field holds it: 0 when absent.
func count(status map[string]any, f string) int64 {
	n, _ := integer(status[f])
	return n
}

// collisionCountKept is the rule kube's apps status updates share: a
// collisionCount once set never goes down (IsDecremented).
func (c *causes) collisionCountKept(o, old api.Object) {
	was, set := integer(object(old, "status")["collisionCount"])
	if !set {
		return
	}
	if n, ok := integer(object(o, "status")["collisionCount"]); !ok || n < was {
		c.invalid("status.collisionCount", n, "cannot be decremented")
	}
}

// countsUpdate is the status update rule that checks counts, and with
// collisions keeps the collisionCount.
func countsUpdate(counts replicaCounts, collisions bool) UpdateFunc {
	return func(_ context.Context, o, old api.Object) []api.StatusCause {
		var c causes
		counts.check(&c, object(o, "status"))
		if collisions {
			c.collisionCountKept(o, old)
		}
		return c
	}
}

// deploymentCounts are kube's ValidateDeploymentStatus.
var deploymentCounts = replicaCounts{
	counts:           []string{"observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"},
	pointers:         []string{"terminatingReplicas", "collisionCount"},
	atMostReplicas:   []string{"updatedReplicas", "readyReplicas", "availableReplicas"},
	availableMessage: "cannot be greater than readyReplicas",
}

// replicaSetCounts are kube's ValidateReplicaSetStatus and
// ValidateReplicationControllerStatus (a controller has no
// terminatingReplicas).
var replicaSetCounts = replicaCounts{
	counts:           []string{"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"},
	pointers:         []string{"terminatingReplicas"},
	atMostReplicas:   []string{"fullyLabeledReplicas", "readyReplicas", "availableReplicas"},
	availableMessage: "cannot be greater than readyReplicas",
}

// statefulSetCounts are kube's ValidateStatefulSetStatus.
var statefulSetCounts = replicaCounts{
	counts:           []string{"replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"},
	pointers:         []string{"observedGeneration", "collisionCount"},
	atMostReplicas:   []string{"readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"},
	availableMessage: "cannot be greater than status.readyReplicas",
}

// daemonSetCounts are kube's validateDaemonSetStatus.
var daemonSetCounts = replicaCounts{
	counts: []string{"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
		"observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable"},
	pointers: []string{"collisionCount"},
}
