package kubevalidation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
)

// statusKind is a kind no manifest of testdata holds whose status rules
// TestStatusRules proves: an object whose spec kube refuses (as one
// stored before a rule existed), and writes of its status.
type statusKind struct {
	gvk      schema.GroupVersionKind
	plural   string
	strategy statusStrategy
	spec     interface { // the kind's own strategy
		Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	}
	obj    map[string]any
	writes map[string]statusWrite
}

// deletingNamespace marks a namespace deleted, its finalizer holding it.
func deletingNamespace(o map[string]any) {
	at(o, "metadata")["deletionTimestamp"] = t0
	at(o, "metadata")["deletionGracePeriodSeconds"] = 0
}

// metaCondition is a metav1.Condition of type and status, with kv
// changing or adding fields.
func metaCondition(typ, status string, kv ...any) map[string]any {
	c := counts("type", typ, "status", status, "reason", "Checked", "message", "m", "lastTransitionTime", t0, "observedGeneration", 1)
	for k, v := range counts(kv...) {
		c[k] = v
	}
	return c
}

var statusKinds = []statusKind{
	{
		gvk: schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}, plural: "persistentvolumes", strategy: persistentvolume.StatusStrategy, spec: persistentvolume.Strategy,
		obj: counts("apiVersion", "v1", "kind", "PersistentVolume", "metadata", counts("name", "pv"), "spec", counts("accessModes", []any{"ReadWriteOnce"})),
		writes: map[string]statusWrite{
			"bound":              {change: counts("phase", "Bound")},
			"phase kept":         {set: counts("phase", "Bound", "lastPhaseTransitionTime", t0), change: counts("phase", "Bound", "message", "m")},
			"phase changed":      {set: counts("phase", "Bound", "lastPhaseTransitionTime", t0), change: counts("phase", "Released", "lastPhaseTransitionTime", t0)},
			"transition written": {set: counts("phase", "Bound", "lastPhaseTransitionTime", t0), change: counts("phase", "Released", "lastPhaseTransitionTime", t1)},
			"no resourceVersion": {prepare: func(o map[string]any) { delete(at(o, "metadata"), "resourceVersion") }, change: counts("phase", "Released"), refused: true},
		},
	},
	{
		gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, plural: "namespaces", strategy: namespace.StatusStrategy, spec: namespace.Strategy,
		obj: counts("apiVersion", "v1", "kind", "Namespace", "metadata", counts("name", "ns"), "spec", counts("finalizers", []any{"not a finalizer"})),
		writes: map[string]statusWrite{
			"active":                {change: counts("phase", "Active")},
			"no phase":              {change: counts()},
			"terminating, not gone": {change: counts("phase", "Terminating"), refused: true},
			"unknown phase":         {change: counts("phase", "Sleeping"), refused: true},
			"deleting, terminating": {prepare: deletingNamespace, change: counts("phase", "Terminating")},
			"deleting, active":      {prepare: deletingNamespace, change: counts("phase", "Active"), refused: true},
		},
	},
	{
		gvk: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, plural: "nodes", strategy: node.StatusStrategy, spec: node.Strategy,
		obj: counts("apiVersion", "v1", "kind", "Node", "metadata", counts("name", "node-1"),
			"spec", counts("podCIDRs", []any{"not a CIDR"}, "providerID", "cloud://node-1")),
		writes: map[string]statusWrite{
			"resources": {change: counts("capacity", counts("cpu", "4", "memory", "8Gi", "pods", "110", "example.com/gpu", "2"),
				"allocatable", counts("cpu", "3500m", "memory", "7Gi", "pods", "110"))},
			"negative capacity":          {change: counts("capacity", counts("cpu", "-1", "memory", "-1Gi")), refused: true},
			"negative allocatable":       {change: counts("allocatable", counts("ephemeral-storage", "-1")), refused: true},
			"fractional pods":            {change: counts("capacity", counts("pods", "1500m")), refused: true},
			"fractional extended":        {change: counts("allocatable", counts("example.com/gpu", "0.5")), refused: true},
			"fractional kubernetes.io":   {change: counts("allocatable", counts("kubernetes.io/thing", "0.5"))},
			"fractional requests.":       {change: counts("allocatable", counts("requests.example.com/gpu", "0.5"))},
			"negative fractional pods":   {change: counts("capacity", counts("pods", "-0.5")), refused: true},
			"addresses":                  {change: counts("addresses", []any{counts("type", "InternalIP", "address", "10.0.0.1"), counts("type", "Hostname", "address", "node-1")})},
			"address twice":              {change: counts("addresses", []any{counts("type", "InternalIP", "address", "10.0.0.1"), counts("type", "InternalIP", "address", "10.0.0.1")}), refused: true},
			"address of two types":       {change: counts("addresses", []any{counts("type", "InternalIP", "address", "10.0.0.1"), counts("type", "ExternalIP", "address", "10.0.0.1")})},
			"declared features":          {change: counts("declaredFeatures", []any{"A", "B/sub", "C"})},
			"declared features unsorted": {change: counts("declaredFeatures", []any{"B", "A"}), refused: true},
			"declared feature twice":     {change: counts("declaredFeatures", []any{"A", "A"}), refused: true},
			"declared feature bad":       {change: counts("declaredFeatures", []any{"lower", "Has-Dash", "X//Y"}), refused: true},
			"declared feature too long":  {change: counts("declaredFeatures", []any{"A" + strings.Repeat("b", 253)}), refused: true},
			"config dropped":             {change: counts("config", counts("error", "e"))},
			"user namespace":             {change: counts("nodeInfo", counts("machineID", "m", "runningInUserNamespace", true))},
		},
	},
	{
		gvk: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, plural: "horizontalpodautoscalers",
		strategy: horizontalpodautoscaler.StatusStrategy, spec: horizontalpodautoscaler.Strategy,
		obj: counts("apiVersion", "autoscaling/v2", "kind", "HorizontalPodAutoscaler", "metadata", counts("name", "web", "namespace", "default"),
			"spec", counts("scaleTargetRef", counts("apiVersion", "apps/v1", "kind", "Deployment", "name", "web"), "minReplicas", 3, "maxReplicas", 1)),
		writes: map[string]statusWrite{
			"counts":              {change: counts("currentReplicas", 2, "desiredReplicas", 3, "observedGeneration", 1)},
			"negative current":    {change: counts("currentReplicas", -1), refused: true},
			"negative desired":    {change: counts("currentReplicas", 1, "desiredReplicas", -2), refused: true},
			"conditions":          {change: counts("desiredReplicas", 1, "conditions", []any{counts("type", "AbleToScale", "status", "True", "observedGeneration", 0)})},
			"negative generation": {change: counts("desiredReplicas", 1, "conditions", []any{counts("type", "AbleToScale", "status", "True", "observedGeneration", -1)}), refused: true},
		},
	},
	{
		gvk: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}, plural: "horizontalpodautoscalers",
		strategy: horizontalpodautoscaler.StatusStrategy, spec: horizontalpodautoscaler.Strategy,
		obj: counts("apiVersion", "autoscaling/v1", "kind", "HorizontalPodAutoscaler", "metadata", counts("name", "web", "namespace", "default"),
			"spec", counts("scaleTargetRef", counts("apiVersion", "apps/v1", "kind", "Deployment", "name", "web"), "minReplicas", 3, "maxReplicas", 1)),
		writes: map[string]statusWrite{
			"counts":           {change: counts("currentReplicas", 2, "desiredReplicas", 3)},
			"negative current": {change: counts("currentReplicas", -1, "desiredReplicas", 1), refused: true},
			"negative desired": {change: counts("currentReplicas", 1, "desiredReplicas", -2), refused: true},
		},
	},
	{
		gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, plural: "poddisruptionbudgets",
		strategy: poddisruptionbudget.StatusStrategy, spec: poddisruptionbudget.Strategy,
		obj: counts("apiVersion", "policy/v1", "kind", "PodDisruptionBudget", "metadata", counts("name", "web", "namespace", "default"),
			"spec", counts("minAvailable", 1, "maxUnavailable", 1, "selector", counts("matchLabels", counts("app", "web")))),
		writes: map[string]statusWrite{
			"counts":                      {change: counts("disruptionsAllowed", 1, "currentHealthy", 2, "desiredHealthy", 1, "expectedPods", 3, "observedGeneration", 1)},
			"negative disruptionsAllowed": {change: counts("disruptionsAllowed", -1), refused: true},
			"negative currentHealthy":     {change: counts("currentHealthy", -1), refused: true},
			"negative desiredHealthy":     {change: counts("desiredHealthy", -1), refused: true},
			"negative expectedPods":       {change: counts("expectedPods", -1), refused: true},
			"condition":                   {change: counts("conditions", []any{metaCondition("DisruptionAllowed", "True")})},
			"prefixed condition":          {change: counts("conditions", []any{metaCondition("example.com/Checked", "Unknown", "message", "")})},
			"condition twice":             {change: counts("conditions", []any{metaCondition("A", "True"), metaCondition("A", "False")}), refused: true},
			"condition without type":      {change: counts("conditions", []any{metaCondition("", "True")}), refused: true},
			"condition of bad type":       {change: counts("conditions", []any{metaCondition("Bad Type", "True")}), refused: true},
			"condition without status":    {change: counts("conditions", []any{metaCondition("A", "")}), refused: true},
			"condition of bad status":     {change: counts("conditions", []any{metaCondition("A", "Maybe")}), refused: true},
			"negative generation":         {change: counts("conditions", []any{metaCondition("A", "True", "observedGeneration", -1)}), refused: true},
			"no transition time":          {change: counts("conditions", []any{metaCondition("A", "True", "lastTransitionTime", nil)}), refused: true},
			"no reason":                   {change: counts("conditions", []any{metaCondition("A", "True", "reason", "")}), refused: true},
			"bad reason":                  {change: counts("conditions", []any{metaCondition("A", "True", "reason", "not-a-reason")}), refused: true},
			"long reason":                 {change: counts("conditions", []any{metaCondition("A", "True", "reason", strings.Repeat("R", 1025))}), refused: true},
			"long message":                {change: counts("conditions", []any{metaCondition("A", "True", "message", strings.Repeat("m", 32*1024+1))}), refused: true},
			"longest message":             {change: counts("conditions", []any{metaCondition("A", "True", "message", strings.Repeat("m", 32*1024))})},
		},
	},
}

// TestStatusRules writes the status of each of statusKinds' objects, its
// spec refused by kube, in each of its ways, both ways: kube's status
// strategy (PrepareForUpdate, ValidateUpdate, declarative validation) and
// ours (Resource.WritePart, ValidateStatusUpdate). Both accept a valid
// status whatever the spec, refuse the same invalid ones with the same
// causes, and store the same status.
func TestStatusRules(t *testing.T) {
	for _, k := range statusKinds {
		if len(k.spec.Validate(t.Context(), kubeInternal(t, k.gvk, encode(t, k.obj)))) == 0 {
			t.Fatalf("%s: kube accepts the spoiled spec", k.gvk.Kind)
		}
		for name, w := range k.writes {
			t.Run(k.gvk.Version+"/"+k.gvk.Kind+"/"+name, func(t *testing.T) {
				was := deepCopy(k.obj).(map[string]any)
				at(was, "metadata")["resourceVersion"] = "7"
				if w.prepare != nil {
					w.prepare(was)
				}
				if w.set != nil {
					was["status"] = deepCopy(w.set)
				}
				updated := deepCopy(was).(map[string]any)
				updated["status"] = deepCopy(w.change)
				js, oldJS := encode(t, updated), encode(t, was)

				obj, old := kubeInternal(t, k.gvk, js), kubeInternal(t, k.gvk, oldJS)
				k.strategy.PrepareForUpdate(t.Context(), obj, old)
				kube := kubeErrors(declarativelyAs(t, k.gvk, k.plural, k.strategy, "status", obj, old, k.strategy.ValidateUpdate(t.Context(), obj, old)))

				r := ours[k.gvk.Group+"/"+k.gvk.Version+"/"+k.plural]
				if r.ValidateStatusUpdate == nil {
					t.Fatalf("%s has no status validation", k.gvk.Kind)
				}
				stored := ourObject(t, r, oldJS)
				written := r.WritePart("status", stored, ourObject(t, r, js))
				sameCauses(t, kube, ourErrors(r.ValidateStatusUpdate(t.Context(), written, stored)), w.refused, oldJS, js)

				versioned, err := legacyscheme.Scheme.ConvertToVersion(obj, k.gvk.GroupVersion())
				if err != nil {
					t.Fatal(err)
				}
				var want map[string]any
				versionedJS, err := json.Marshal(versioned)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(versionedJS, &want); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(nowish(withoutNulls(want["status"])), nowish(withoutNulls(deepCopy(written["status"])))); d != "" {
					t.Errorf("stored status (-kube +ours):\n%s", d)
				}
			})
		}
	}
}

// nowish is v, generic JSON, with every time within a few seconds of now
// (set by one side's clock, then the other's) replaced by "now".
func nowish(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, f := range v {
			v[k] = nowish(f)
		}
	case []any:
		for i, f := range v {
			v[i] = nowish(f)
		}
	case string:
		if t, err := time.Parse(time.RFC3339, v); err == nil && time.Since(t).Abs() < 5*time.Second {
			return "now"
		}
	}
	return v
}
