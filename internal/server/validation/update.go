package validation

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/quantity"
)

// UpdateFunc checks an update against the stored object old, as a
// Resource's ValidateUpdate; the new object has passed Func already.
type UpdateFunc func(ctx context.Context, obj, old api.Object) []api.StatusCause

// ForUpdate returns the update rules of the built-in resource
// group/version/plural, or nil when this package has none.
func ForUpdate(group, version, plural string) UpdateFunc {
	return updates[[3]string{group, version, plural}]
}

var updates = map[[3]string]UpdateFunc{
	{"", "v1", "pods"}:                             podUpdate,
	{"", "v1", "configmaps"}:                       configMapUpdate,
	{"", "v1", "secrets"}:                          secretUpdate,
	{"", "v1", "persistentvolumeclaims"}:           claimUpdate,
	{"apps", "v1", "deployments"}:                  selectorUnchanged,
	{"apps", "v1", "replicasets"}:                  selectorUnchanged,
	{"apps", "v1", "daemonsets"}:                   selectorUnchanged,
	{"apps", "v1", "statefulsets"}:                 statefulSetUpdate,
	{"batch", "v1", "jobs"}:                        jobUpdate,
	{"batch", "v1", "cronjobs"}:                    cronJobUpdate,
	{"networking.k8s.io", "v1", "ingresses"}:       ingressUpdate,
	{"networking.k8s.io", "v1", "networkpolicies"}: networkPolicyUpdate,
}

// immutable is apimachinery's FieldImmutableErrorMsg.
const immutable = "field is immutable"

// selectorUnchanged is the rule kube's ValidateDeploymentUpdate,
// ValidateReplicaSetUpdate and ValidateDaemonSetSpecUpdate share: the
// selector of apps/v1 kinds is immutable.
func selectorUnchanged(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	sel := object(o, "spec")["selector"]
	if !equal(sel, object(old, "spec")["selector"]) {
		raw, _ := sel.(map[string]any)
		c.invalid("spec.selector", jsonValue{labelSelector(raw)}, immutable)
	}
	return c
}

// statefulSetUpdate is kube's ValidateStatefulSetUpdate (which in 1.37
// names each immutable field rather than refusing "updates to statefulset
// spec for fields other than ..."): the spec, its template's pod spec
// unchecked when the stored spec is invalid (so that a StatefulSet stored
// before a rule existed still takes a metadata change), and the immutable
// fields, the claim templates' quantities compared by value (as
// apimachinery's Semantic.DeepEqual compares Quantities: "1Gi" is
// "1024Mi"). kube renders changed volumeClaimTemplates as its internal Go
// types' JSON; this renders them as they were sent.
func statefulSetUpdate(ctx context.Context, o, old api.Object) []api.StatusCause {
	c := causes(statefulSet(o, len(statefulSet(old, false)) > 0))
	c = append(c, selectorUnchanged(ctx, o, old)...)
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	if claims := spec["volumeClaimTemplates"]; !equal(claimsByValue(claims), claimsByValue(oldSpec["volumeClaimTemplates"])) {
		c.invalid("spec.volumeClaimTemplates", jsonValue{claims}, immutable)
	}
	if name := str(spec, "serviceName"); name != str(oldSpec, "serviceName") {
		c.invalid("spec.serviceName", name, immutable)
	}
	if policy := str(spec, "podManagementPolicy"); policy != str(oldSpec, "podManagementPolicy") {
		c.invalid("spec.podManagementPolicy", jsonValue{policy}, immutable)
	}
	return c
}

// jobUpdate is job, then the update part of kube's ValidateJobSpecUpdate: the
// selector, completionMode, backoffLimitPerIndex, managedBy,
// podFailurePolicy and successPolicy immutable, completions too but on an
// Indexed Job (where it may change with parallelism), and the template,
// but for the metadata, resources and scheduling directives of a
// suspended Job that has not started (1.37's
// MutablePodResourcesForSuspendedJobs and
// MutableSchedulingDirectivesForSuspendedJobs are on). The template's bad
// value is rendered as its JSON where kube renders its internal Go type.
func jobUpdate(ctx context.Context, o, old api.Object) []api.StatusCause {
	c := causes(job(o, invalidSelectorValue(old)))
	c = append(c, selectorUnchanged(ctx, o, old)...)
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	p := path("spec")
	completions := spec["completions"]
	switch {
	case equal(completions, oldSpec["completions"]):
	case str(spec, "completionMode") != "Indexed":
		c.invalid(p.child("completions"), completions, immutable)
	case completions != nil && !equal(completions, spec["parallelism"]):
		c.invalid(p.child("completions"), completions, "can only be modified in tandem with spec.parallelism")
	}
	for _, f := range []string{"completionMode", "backoffLimitPerIndex", "managedBy"} {
		if !equal(spec[f], oldSpec[f]) {
			c.invalid(p.child(f), jsonValue{spec[f]}, immutable)
		}
	}
	switch {
	case oldSpec["suspend"] == true && mutableTemplate(old):
		podSpec := object(object(spec, "template"), "spec")
		if !equal(podSpec, withResourcesAndScheduling(podSpec, object(object(oldSpec, "template"), "spec"))) {
			c.invalid(p.child("template", "spec"), jsonValue{podSpec}, immutable)
		}
	case !equal(spec["template"], oldSpec["template"]):
		c.invalid(p.child("template"), jsonValue{spec["template"]}, immutable)
	}
	if pfp := spec["podFailurePolicy"]; !equal(pfp, oldSpec["podFailurePolicy"]) {
		pfp, _ := pfp.(map[string]any)
		c.invalid(p.child("podFailurePolicy"), internalPodFailurePolicy(pfp), immutable)
	}
	if sp := spec["successPolicy"]; !equal(sp, oldSpec["successPolicy"]) {
		sp, _ := sp.(map[string]any)
		c.invalid(p.child("successPolicy"), internalSuccessPolicy(sp), immutable)
	}
	return c
}

// mutableTemplate is kube's shouldAllowMutablePodTemplate of the stored
// Job: suspended, not started (or suspended since), no active pods.
func mutableTemplate(job api.Object) bool {
	status := object(job, "status")
	suspendedSince := slices.ContainsFunc(list(status, "conditions"), func(v any) bool {
		cond, _ := v.(map[string]any)
		return str(cond, "type") == "Suspended" && str(cond, "status") == "True"
	})
	active, _ := integer(status["active"])
	return object(job, "spec")["suspend"] == true && (status["startTime"] == nil || suspendedSince) && active == 0
}

// withResourcesAndScheduling is the stored pod spec old with what kube
// lets a suspended Job's template change taken from podSpec: the node
// affinity, node selector, tolerations and scheduling gates, and the
// resources of each container of the same name at the same place.
func withResourcesAndScheduling(podSpec, old map[string]any) map[string]any {
	out := shallowCopy(old)
	for _, f := range []string{"nodeSelector", "tolerations", "schedulingGates"} {
		out[f] = podSpec[f]
	}
	affinity, oldAffinity := object(podSpec, "affinity"), object(old, "affinity")
	switch {
	case affinity == nil && oldAffinity != nil:
		a := shallowCopy(oldAffinity)
		delete(a, "nodeAffinity")
		out["affinity"] = a
	case affinity != nil:
		a := shallowCopy(oldAffinity)
		a["nodeAffinity"] = affinity["nodeAffinity"]
		out["affinity"] = a
	}
	for _, f := range []string{"containers", "initContainers"} {
		cs, oldCs := list(podSpec, f), list(old, f)
		if len(cs) != len(oldCs) {
			continue
		}
		merged := make([]any, len(oldCs))
		for i, v := range oldCs {
			ctr, _ := cs[i].(map[string]any)
			was, _ := v.(map[string]any)
			merged[i] = was
			if str(ctr, "name") == str(was, "name") {
				m := shallowCopy(was)
				m["resources"] = ctr["resources"]
				merged[i] = m
			}
		}
		out[f] = merged
	}
	return out
}

// whenImmutable is kube's message for a change to an object that was
// stored with immutable: true.
const whenImmutable = "field is immutable when `immutable` is set"

// configMapUpdate is the update part of kube's ValidateConfigMapUpdate.
func configMapUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	return frozen(o, old, "data", "binaryData")
}

// secretUpdate is the update part of kube's ValidateSecretUpdate: the type
// never changes (both are defaulted to Opaque), and what frozen says.
func secretUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	if t := str(o, "type"); t != str(old, "type") {
		c.invalid("type", jsonValue{t}, immutable)
	}
	return append(c, frozen(o, old, "data")...)
}

// frozen is what kube forbids of a ConfigMap or Secret stored with
// immutable: true: unsetting it, changing any of the data fields.
func frozen(o, old api.Object, data ...string) []api.StatusCause {
	var c causes
	if old["immutable"] != true {
		return nil
	}
	if o["immutable"] != true {
		c.forbidden("immutable", whenImmutable)
	}
	for _, f := range data {
		if !equal(o[f], old[f]) {
			c.forbidden(path(f), whenImmutable)
		}
	}
	return c
}

// equal is apimachinery's equality.Semantic.DeepEqual on decoded JSON: a
// member absent, null, an empty list or an empty object are all Go's nil
// (kube's slices and maps compare so; a pointer to an empty struct is the
// one case it tells apart and this does not), numbers by value.
func equal(a, b any) bool {
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range a {
			if !equal(v, bm[k]) {
				return false
			}
		}
		for k, v := range bm {
			if _, seen := a[k]; !seen && !empty(v) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !equal(a[i], bl[i]) {
				return false
			}
		}
		return true
	}
	if x, ok := integer(a); ok {
		y, ok := integer(b)
		return ok && x == y
	}
	return a == b
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// changes lists the paths under p at which a and b differ, for the diff
// that follows a refused update's message.
func changes(p path, a, b any) []string {
	if equal(a, b) {
		return nil
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		var out []string
		for k := range am {
			out = append(out, changes(p.child(k), am[k], bm[k])...)
		}
		for k := range bm {
			if _, seen := am[k]; !seen {
				out = append(out, changes(p.child(k), nil, bm[k])...)
			}
		}
		return out
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, changes(p.index(i), al[i], bl[i])...)
		}
		return out
	}
	return []string{"  " + string(p) + ": " + render(a) + " -> " + render(b)}
}

// diff is changes as lines.
func diff(p path, a, b any) string {
	cs := changes(p, a, b)
	slices.Sort(cs)
	return strings.Join(cs, "\n")
}

// updatablePodFields is the list kube's ValidatePodUpdate names when it
// refuses a change to a pod's spec.
var updatablePodFields = strings.Join([]string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}, ",")

// podUpdate is the update part of kube's ValidatePodUpdate: a pod's spec
// is immutable but for its containers' images, a deadline that only
// shrinks, tolerations added (or their tolerationSeconds changed),
// scheduling gates removed, and a negative grace period set to 1. kube
// follows its refusal with a go-cmp diff of its internal Go types; this
// follows it with the JSON paths that changed. The extra freedom of pods
// with scheduling gates (nodeSelector and node affinity additions) is not
// replicated.
func podUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	p := path("spec")
	for _, f := range []string{"containers", "initContainers"} {
		cs, oldCs := list(spec, f), list(oldSpec, f)
		if len(cs) != len(oldCs) {
			c.forbidden(p.child(f), "pod updates may not add or remove containers")
			return c
		}
		// kube checks here too that images are set and trimmed, but
		// reports each cause once (its declarative validation step drops
		// repeated ones): pod, which runs on every write, has reported
		// them.
	}
	deadline, oldDeadline := spec["activeDeadlineSeconds"], oldSpec["activeDeadlineSeconds"]
	if n, ok := integer(deadline); ok {
		if n < 0 || n > math.MaxInt32 {
			c.invalid(p.child("activeDeadlineSeconds"), n, "must be between 0 and "+strconv.Itoa(math.MaxInt32)+", inclusive")
			return c
		}
		if was, ok := integer(oldDeadline); ok && was < n {
			c.invalid(p.child("activeDeadlineSeconds"), n, "must be less than or equal to previous value")
			return c
		}
	} else if oldDeadline != nil {
		c.invalid(p.child("activeDeadlineSeconds"), nil, "must not update from a positive integer to nil value")
	}
	c.onlyAddedTolerations(list(spec, "tolerations"), list(oldSpec, "tolerations"), p.child("tolerations"))
	c.onlyDeletedGates(list(spec, "schedulingGates"), list(oldSpec, "schedulingGates"), p.child("schedulingGates"))

	munged := shallowCopy(spec)
	for _, f := range []string{"containers", "initContainers"} {
		munged[f] = withOldImages(list(spec, f), list(oldSpec, f))
	}
	for _, f := range []string{"activeDeadlineSeconds", "schedulingGates", "tolerations"} {
		munged[f] = oldSpec[f]
	}
	if was, ok := integer(oldSpec["terminationGracePeriodSeconds"]); ok && was < 0 {
		if n, _ := integer(spec["terminationGracePeriodSeconds"]); n == 1 {
			munged["terminationGracePeriodSeconds"] = oldSpec["terminationGracePeriodSeconds"]
		}
	}
	if !equal(munged, oldSpec) {
		c.forbidden(p, "pod updates may not change fields other than "+updatablePodFields+"\n"+diff(p, oldSpec, munged))
	}
	return c
}

// withOldImages is containers with the images of old, the same length.
func withOldImages(containers, old []any) []any {
	out := make([]any, len(containers))
	for i, ctr := range containers {
		ctr, _ := ctr.(map[string]any)
		m := shallowCopy(ctr)
		was, _ := old[i].(map[string]any)
		m["image"] = was["image"]
		out[i] = m
	}
	return out
}

// onlyAddedTolerations is kube's validateOnlyAddedTolerations, less the
// validation of the tolerations themselves: each old toleration is still
// there, its tolerationSeconds aside.
func (c *causes) onlyAddedTolerations(tolerations, old []any, p path) {
	for _, o := range old {
		found := slices.ContainsFunc(tolerations, func(t any) bool {
			return equal(withoutSeconds(o), withoutSeconds(t))
		})
		if !found {
			c.forbidden(p, "existing toleration can not be modified except its tolerationSeconds")
			return
		}
	}
}

func withoutSeconds(t any) map[string]any {
	tm, _ := t.(map[string]any)
	m := shallowCopy(tm)
	delete(m, "tolerationSeconds")
	return m
}

// onlyDeletedGates is kube's validateOnlyDeletedSchedulingGates.
func (c *causes) onlyDeletedGates(gates, old []any, p path) {
	oldNames := make(map[string]bool, len(old))
	for _, g := range old {
		g, _ := g.(map[string]any)
		oldNames[str(g, "name")] = true
	}
	added := map[string]int{} // a name twice is reported once, at its last index
	for i, g := range gates {
		g, _ := g.(map[string]any)
		if name := str(g, "name"); !oldNames[name] {
			added[name] = i
		}
	}
	for name, i := range added {
		c.forbidden(p.index(i).child("name"), "only deletion is allowed, but found new scheduling gate '"+name+"'")
	}
}

// betaStorageClass is the annotation that named a claim's class before
// spec.storageClassName.
const betaStorageClass = "volume.beta.kubernetes.io/storage-class"

// claimUpdate is the update part of kube's
// ValidatePersistentVolumeClaimUpdate: the spec is immutable but for a
// volumeName set once, a storage class set where there was none (or named
// by the beta annotation), and, once the claim is bound, the storage
// request (never below status.capacity) and volumeAttributesClassName. As
// for Pods, the go-cmp diff kube appends is replaced by the changed paths.
func claimUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	munged, oldMunged := shallowCopy(spec), shallowCopy(oldSpec)
	if str(oldSpec, "volumeName") == "" {
		oldMunged["volumeName"] = spec["volumeName"]
	}
	annotations := stringMap(object(o, "metadata"), "annotations")
	oldClass, wasAnnotated := stringMap(object(old, "metadata"), "annotations")[betaStorageClass]
	newClass, annotated := annotations[betaStorageClass]
	class, set := spec["storageClassName"].(string)
	_, wasSet := oldSpec["storageClassName"].(string)
	switch {
	case wasAnnotated && !wasSet && set && class == oldClass && (!annotated || newClass == oldClass):
		delete(munged, "storageClassName") // moved from the annotation
	default:
		if newClass != oldClass {
			c.invalid(path("metadata").child("annotations", betaStorageClass), newClass, immutable)
		}
		if set && !wasSet && (!wasAnnotated || class == oldClass) {
			delete(munged, "storageClassName") // set where there was none
		}
	}
	status, oldStatus := object(o, "status"), object(old, "status")
	if str(status, "phase") == "Bound" {
		if resources := object(spec, "resources"); object(resources, "requests") != nil {
			requests := shallowCopy(object(resources, "requests"))
			requests["storage"] = object(object(oldSpec, "resources"), "requests")["storage"]
			resources = shallowCopy(resources)
			resources["requests"] = requests
			munged["resources"] = resources
		}
		munged["volumeAttributesClassName"] = oldSpec["volumeAttributesClassName"]
	}
	if !equal(munged, oldMunged) {
		c.forbidden("spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+diff("spec", oldMunged, munged))
	}
	size := str(object(object(spec, "resources"), "requests"), "storage")
	if less(size, str(object(object(oldSpec, "resources"), "requests"), "storage")) && !less(str(object(oldStatus, "capacity"), "storage"), size) {
		c.forbidden("spec.resources.requests.storage", "field can not be less than status.capacity")
	}
	if !equal(spec["volumeMode"], oldSpec["volumeMode"]) {
		c.invalid("volumeMode", jsonValue{spec["volumeMode"]}, immutable)
	}
	vac := spec["volumeAttributesClassName"]
	if !equal(vac, oldSpec["volumeAttributesClassName"]) && oldStatus["currentVolumeAttributesClassName"] != nil {
		switch vac {
		case nil:
			c.forbidden("spec.volumeAttributesClassName", "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil")
		case "":
			c.forbidden("spec.volumeAttributesClassName", "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil")
		}
	}
	return c
}

// less compares quantities as kube's Quantity.Cmp, an absent one (or one
// the schema let through unparsed) being zero.
func less(a, b string) bool {
	if a == "" {
		a = "0"
	}
	if b == "" {
		b = "0"
	}
	n, err := quantity.Compare(a, b)
	return err == nil && n < 0
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// claimResourceLists are where a PersistentVolumeClaim holds quantities.
var claimResourceLists = [][]string{
	{"spec", "resources", "requests"}, {"spec", "resources", "limits"},
	{"status", "capacity"}, {"status", "allocatedResources"},
}

// claimsByValue is a copy of StatefulSet claim templates with each
// quantity written as its value (canonical decimal), so that equal
// compares quantities as Quantity.Cmp does.
func claimsByValue(claims any) any {
	l, ok := claims.([]any)
	if !ok {
		return claims
	}
	out := make([]any, len(l))
	for i, t := range l {
		tm, _ := t.(map[string]any)
		c := map[string]any(api.Object(tm).DeepCopy())
		for _, at := range claimResourceLists {
			m := c
			for _, k := range at {
				m = object(m, k)
			}
			for k, v := range m {
				if s, ok := v.(string); ok {
					if q, err := quantity.Parse(s); err == nil {
						m[k] = resource.NewDecimalQuantity(*q.AsDec(), resource.DecimalSI).String()
					}
				}
			}
		}
		out[i] = c
	}
	return out
}
