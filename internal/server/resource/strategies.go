package resource

import (
	"context"
	"reflect"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	labelsel "github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/validation"
)

// strategies are what kube's registries (pkg/registry/<group>/<kind>) do on
// a write of a built-in kind beyond its schema and defaulting, keyed by
// group/version/plural; each sets fields of the kind's Resource, leaving
// the others as behaviours made them.
var strategies = map[GVR][]func(*Resource){
	{"apps", "v1", "deployments"}:                       {withScale(scaleSelector), prepare(prepareDeployment)},
	{"apps", "v1", "daemonsets"}:                        {prepare(prepareDaemonSet)},
	{"batch", "v1", "jobs"}:                             {prepare(prepareJob)},
	{"batch", "v1", "cronjobs"}:                         {prepare(prepareCronJob)},
	{"apps", "v1", "replicasets"}:                       {withScale(scaleSelector)},
	{"apps", "v1", "statefulsets"}:                      {withScale(scaleSelector)},
	{"", "v1", "replicationcontrollers"}:                {withScale(setSelector)},
	{"", "v1", "pods"}:                                  {returnDeleted, prepare(preparePod)},
	{"", "v1", "services"}:                              {returnDeleted, createOnUpdate, validateCreate(validation.ServiceCreate), validateUpdate(validation.ServiceUpdate)},
	{"", "v1", "endpoints"}:                             {createOnUpdate},
	{"", "v1", "limitranges"}:                           {createOnUpdate},
	{"coordination.k8s.io", "v1", "leases"}:             {createOnUpdate},
	{"node.k8s.io", "v1", "runtimeclasses"}:             {createOnUpdate},
	{"", "v1", "podtemplates"}:                          {returnDeleted},
	{"networking.k8s.io", "v1", "ipaddresses"}:          {func(r *Resource) { r.NameRule = validation.IPAddressName }},
	{"", "v1", "persistentvolumes"}:                     {returnDeleted},
	{"", "v1", "persistentvolumeclaims"}:                {returnDeleted},
	{"", "v1", "resourcequotas"}:                        {returnDeleted},
	{"storage.k8s.io", "v1", "storageclasses"}:          {returnDeleted},
	{"storage.k8s.io", "v1", "csidrivers"}:              {returnDeleted},
	{"storage.k8s.io", "v1", "csinodes"}:                {returnDeleted},
	{"storage.k8s.io", "v1", "volumeattachments"}:       {returnDeleted},
	{"storage.k8s.io", "v1", "volumeattributesclasses"}: {returnDeleted},
	{"resource.k8s.io", "v1", "deviceclasses"}:          {returnDeleted},
	{"resource.k8s.io", "v1", "resourceclaims"}:         {returnDeleted},
	{"resource.k8s.io", "v1", "resourceclaimtemplates"}: {returnDeleted},
	{"resource.k8s.io", "v1", "resourceslices"}:         {returnDeleted},
}

// validateUpdate sets the kind's ValidateUpdate to check, kube's rules
// tying an update to the stored object.
func validateUpdate(check func(obj, old api.Object) []api.StatusCause) func(*Resource) {
	return func(r *Resource) {
		r.ValidateUpdate = func(_ context.Context, obj, old api.Object) []api.StatusCause { return check(obj, old) }
	}
}

// validateCreate sets the kind's ValidateCreate to check, kube's rules
// that an update relaxes.
func validateCreate(check func(obj api.Object) []api.StatusCause) func(*Resource) {
	return func(r *Resource) {
		r.ValidateCreate = func(_ context.Context, obj api.Object) []api.StatusCause { return check(obj) }
	}
}

// returnDeleted is a kind whose kube storage sets ReturnDeletedObject: a
// DELETE answers the object, not a Status.
func returnDeleted(r *Resource) { r.ReturnDeletedObject = true }

// createOnUpdate is a kind whose kube strategy's AllowCreateOnUpdate is
// true: a PUT of a missing object creates it.
func createOnUpdate(r *Resource) { r.CreateOnUpdate = true }

// withScale serves the scale subresource as kube's ScaleREST of the kind:
// replicas at spec.replicas and status.replicas, the selector the Scale
// reports computed from spec.selector by selectorOf.
func withScale(selectorOf func(spec map[string]any) string) func(*Resource) {
	return func(r *Resource) {
		r.Scale = &ScalePaths{SpecReplicas: ".spec.replicas", StatusReplicas: ".status.replicas", Selector: func(obj map[string]any) string {
			spec, _ := obj["spec"].(map[string]any)
			return selectorOf(spec)
		}}
		r.Subresources = append(r.Subresources, ScaleSubresource)
	}
}

// scaleSelector is metav1.LabelSelectorAsSelector(spec.selector).String(),
// as scaleFromDeployment (and its ReplicaSet and StatefulSet twins) report it.
func scaleSelector(spec map[string]any) string {
	s, _ := labelSelectorString(spec["selector"])
	return s
}

// setSelector is labels.SelectorFromSet(spec.selector).String(), as
// scaleFromRC reports a ReplicationController's map selector.
func setSelector(spec map[string]any) string {
	m, _ := spec["selector"].(map[string]any)
	s, _ := labelSelectorString(map[string]any{"matchLabels": m})
	return s
}

// labelSelectorString is the LabelSelector v (its JSON form) as kube's
// labels.Selector String() writes it; ok is false when kube could not
// convert it (validation refuses such selectors).
func labelSelectorString(v any) (s string, ok bool) {
	sel, err := labelsel.FromLabelSelector(labelSelector(v))
	if err != nil {
		return "", false
	}
	return sel.String(), true
}

// prepare adds p to the kind's Prepare, after what behaviours set.
func prepare(p func(obj, old api.Object)) func(*Resource) {
	return func(r *Resource) {
		first := r.Prepare
		if first == nil {
			r.Prepare = p
			return
		}
		r.Prepare = func(obj, old api.Object) {
			first(obj, old)
			p(obj, old)
		}
	}
}

// GenerationOf reads obj's metadata.generation; 0 when it has none.
func GenerationOf(obj api.Object) int64 {
	switch g := obj.Metadata()["generation"].(type) {
	case int:
		return int64(g)
	case int64:
		return g
	case interface{ Int64() (int64, error) }:
		n, _ := g.Int64()
		return n
	case float64:
		return int64(g)
	}
	return 0
}

// prepareDeployment bumps a Deployment's generation when its annotations
// change, as kube's deployment PrepareForUpdate does (they are copied to
// its ReplicaSets); a spec change bumps it as for every kind with
// Generation. kube compares the maps semantically: nil equals empty.
func prepareDeployment(obj, old api.Object) {
	if old == nil {
		return
	}
	a, _ := obj.Metadata()["annotations"].(map[string]any)
	b, _ := old.Metadata()["annotations"].(map[string]any)
	if (len(a) != 0 || len(b) != 0) && !reflect.DeepEqual(a, b) {
		obj.SetMeta("generation", GenerationOf(old)+1)
	}
}

// templateGeneration is the annotation a v1 DaemonSet carries its internal
// spec.templateGeneration in (appsv1.DeprecatedTemplateGeneration).
const templateGeneration = "deprecated.daemonset.template.generation"

// prepareDaemonSet keeps a DaemonSet's template generation as kube's
// strategy and v1 conversion do: on create the annotation's value when
// it is a positive integer, else 1; on update the stored one, plus 1 when
// spec.template changed (the generation moves with it, as with every
// spec change).
func prepareDaemonSet(obj, old api.Object) {
	ann := MapAt(obj.Metadata(), "annotations")
	var tg int64
	if old == nil {
		s, _ := ann[templateGeneration].(string)
		tg, _ = strconv.ParseInt(s, 10, 64)
		tg = max(tg, 1)
	} else {
		oldAnn, _ := old.Metadata()["annotations"].(map[string]any)
		s, _ := oldAnn[templateGeneration].(string)
		tg, _ = strconv.ParseInt(s, 10, 64)
		if !reflect.DeepEqual(Path(obj, "spec", "template"), Path(old, "spec", "template")) {
			tg++
		}
	}
	ann[templateGeneration] = strconv.FormatInt(tg, 10)
}

// preparePod does what kube's pod PrepareForCreate does that needs no
// node: status reset to phase Pending with the pod's QoS class and, when
// the pod has scheduling gates, its PodScheduled condition saying so. An
// update keeps the stored status (StatusSubresource does that).
func preparePod(obj, old api.Object) {
	if old != nil {
		return
	}
	spec, _ := obj["spec"].(map[string]any)
	status := map[string]any{"phase": "Pending"}
	if gates, _ := spec["schedulingGates"].([]any); len(gates) > 0 {
		status["conditions"] = []any{map[string]any{
			"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
			"message": "Scheduling is blocked due to non-empty scheduling gates",
			// kube's UpdatePodCondition stamps the transition; kube's
			// typed encoder writes the zero probe time as null.
			"lastProbeTime": nil, "lastTransitionTime": api.NewTime(time.Now()).Format("2006-01-02T15:04:05Z"),
		}}
	}
	status["qosClass"] = validation.PodQOS(spec)
	obj["status"] = status
}

// The labels kube's job strategy gives a Job's pod template (batch.
// JobNameLabel, ControllerUidLabel and their legacy forms).
const (
	jobNameLabel       = "batch.kubernetes.io/job-name"
	controllerUIDLabel = "batch.kubernetes.io/controller-uid"
)

// prepareJob generates a new Job's selector unless spec.manualSelector is
// true, as kube's job PrepareForCreate (generateSelector) does: the
// template is labelled with the Job's name and uid, each label kept when
// the user set it (validation then judges), and the selector matches the
// uid label.
func prepareJob(obj, old api.Object) {
	spec, _ := obj["spec"].(map[string]any)
	oldSpec, _ := old["spec"].(map[string]any)
	dropScheduling(spec, oldSpec)
	if old != nil || spec == nil || spec["manualSelector"] == true {
		return
	}
	labels := MapAt(MapAt(MapAt(spec, "template"), "metadata"), "labels")
	for k, v := range map[string]string{"job-name": obj.Name(), jobNameLabel: obj.Name(), "controller-uid": obj.UID(), controllerUIDLabel: obj.UID()} {
		if _, set := labels[k]; !set {
			labels[k] = v
		}
	}
	match := MapAt(MapAt(spec, "selector"), "matchLabels")
	if _, set := match[controllerUIDLabel]; !set {
		match[controllerUIDLabel] = obj.UID()
	}
}

// prepareCronJob drops its job template's spec.scheduling as kube's
// cronjob strategy does.
func prepareCronJob(obj, old api.Object) {
	template := func(o api.Object) map[string]any {
		spec, _ := o["spec"].(map[string]any)
		tmpl, _ := spec["jobTemplate"].(map[string]any)
		s, _ := tmpl["spec"].(map[string]any)
		return s
	}
	dropScheduling(template(obj), template(old))
}

// dropScheduling is kube's job.DropDisabledFields: a Job spec's alpha
// scheduling goes, its WorkloadWithJob gate off in 1.37, unless the
// stored spec old has it.
func dropScheduling(spec, old map[string]any) {
	if _, inUse := old["scheduling"]; !inUse {
		delete(spec, "scheduling")
	}
}

// mapAt is the object at m[key], made there when absent.
func MapAt(m map[string]any, key string) map[string]any {
	c, _ := m[key].(map[string]any)
	if c == nil {
		c = map[string]any{}
		m[key] = c
	}
	return c
}
