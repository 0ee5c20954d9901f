// Package quota is kube's ResourceQuota accounting
// (k8s.io/apiserver pkg/admission/plugin/resourcequota CheckRequest and
// k8s.io/kubernetes pkg/quota/v1/evaluator/core): what a write of an
// object costs against a namespace's quotas, the refusal of a write that
// would exceed one, and what a namespace's objects use in all.
//
// Every namespaced resource is counted as count/<resource>[.<group>] (and
// configmaps, secrets, replicationcontrollers and resourcequotas under
// their bare names too); pods charge their compute resources (kube's pod
// requests and limits: init containers at their peak, sidecars, pod-level
// resources, overhead; requests.<extended resource or device class>) and
// "pods" while not terminal; services
// services, services.nodeports and services.loadbalancers; claims
// persistentvolumeclaims and requests.storage, also per storage class.
//
// Pods match a quota's scopes as kube's: Terminating and NotTerminating
// (activeDeadlineSeconds), BestEffort and NotBestEffort (kube's QoS
// class), PriorityClass (by the class name's selector) and
// CrossNamespacePodAffinity; claims VolumeAttributesClass (by the
// selector, on each class the claim names); other objects match no
// scope.
//
// The plugin's configuration (LoadConfig) limits resources: a write
// that consumes one, or matches one of its scopes, needs a quota that
// covers it.
package quota

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listwatch/listwatch/client/api"
)

// List is a resource list: quantities by resource name.
type List = map[string]resource.Quantity

// Quota is one ResourceQuota's status: what it allows and uses.
type Quota struct {
	Name string
	// ResourceVersion is the revision the status was read at; a status
	// write is conditional on it.
	ResourceVersion string
	Hard, Used      List
	// Scopes are the quota's scopes and scopeSelector's expressions: an
	// object is charged only if it matches every one.
	Scopes []Scope
}

// Scope is one scope selector expression (a scope alone is Exists).
type Scope struct {
	Name     string   `json:"scopeName"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

// Parse reads a ResourceQuota's status and scopes.
func Parse(obj api.Object) Quota {
	spec, _ := obj["spec"].(map[string]any)
	status, _ := obj["status"].(map[string]any)
	q := Quota{Name: obj.Name(), ResourceVersion: obj.ResourceVersion(), Hard: Read(status, "hard"), Used: Read(status, "used")}
	scopes, _ := spec["scopes"].([]any)
	for _, s := range scopes {
		name, _ := s.(string)
		q.Scopes = append(q.Scopes, Scope{Name: name, Operator: "Exists"})
	}
	var selector struct {
		MatchExpressions []Scope `json:"matchExpressions"`
	}
	if Decode(spec["scopeSelector"], &selector) == nil {
		q.Scopes = append(q.Scopes, selector.MatchExpressions...)
	}
	return q
}

// Read reads the resource list m[key]; what does not parse is left out.
func Read(m map[string]any, key string) List {
	list, _ := m[key].(map[string]any)
	out := make(List, len(list))
	for name, v := range list {
		if q, err := resource.ParseQuantity(fmt.Sprint(v)); err == nil {
			out[name] = q
		}
	}
	return out
}

// Encode is a list as JSON holds it.
func Encode(l List) map[string]any {
	out := make(map[string]any, len(l))
	for name, q := range l {
		out[name] = q.String()
	}
	return out
}

// legacyAliases are the bare names kube also counts some kinds under.
var legacyAliases = map[string]string{"configmaps": "configmaps", "resourcequotas": "resourcequotas",
	"replicationcontrollers": "replicationcontrollers", "secrets": "secrets"}

// countName is kube's object count resource of a group's resource.
func countName(group, plural string) string {
	if group == "" {
		return "count/" + plural
	}
	return "count/" + plural + "." + group
}

// evaluator is kube's quota evaluator of one resource.
type evaluator struct {
	group, plural string
}

func evaluatorFor(group, plural string) evaluator { return evaluator{group, plural} }

func (e evaluator) core(plural string) bool { return e.group == "" && e.plural == plural }

// handles says whether a write of the resource costs quota: a create;
// an update of a service or a claim, or of a pod that enters or leaves
// the Terminating scope (its activeDeadlineSeconds set), or a pod's
// resize; an update of a
// claim's status (kube's RequiresQuotaReplenish compares the allocated
// storage's pointers, which always differ).
func (e evaluator) handles(w Write) bool {
	switch {
	case w.Subresource == "status":
		return w.Op == "UPDATE" && e.core("persistentvolumeclaims")
	case w.Subresource == "resize": // kube's pod evaluator: a resize changes requests
		return w.Op == "UPDATE" && e.core("pods")
	case w.Subresource != "":
		return false
	case w.Op == "CREATE":
		return true
	case w.Op != "UPDATE":
		return false
	case e.core("pods"):
		return terminating(w.Object) != terminating(w.Old)
	}
	return e.core("services") || e.core("persistentvolumeclaims")
}

// terminating says whether a pod's JSON form sets a non-negative
// activeDeadlineSeconds.
func terminating(pod api.Object) bool {
	spec, _ := pod["spec"].(map[string]any)
	var deadline *int64
	return Decode(spec["activeDeadlineSeconds"], &deadline) == nil && deadline != nil && *deadline >= 0
}

// The resources the evaluators of pods, services and claims charge.
var (
	podResources = []string{"count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
		"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"}
	serviceResources = []string{"count/services", "services", "services.nodeports", "services.loadbalancers"}
	claimResources   = []string{"persistentvolumeclaims", "requests.storage"}
)

// storageClassSuffix qualifies a claim's resources by storage class.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// hugePagesPrefix starts the names of huge page resources.
const hugePagesPrefix = "hugepages-"

// matching are the names among hard the evaluator charges.
func (e evaluator) matching(hard List) []string {
	var out []string
	for name := range hard {
		if e.charges(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (e evaluator) charges(name string) bool {
	switch {
	case e.core("pods"):
		return slices.Contains(podResources, name) || strings.HasPrefix(name, hugePagesPrefix) ||
			strings.HasPrefix(name, "requests."+hugePagesPrefix) || extendedForQuota(name)
	case e.core("services"):
		return slices.Contains(serviceResources, name)
	case e.core("persistentvolumeclaims"):
		if name == "count/persistentvolumeclaims" || slices.Contains(claimResources, name) {
			return true
		}
		for _, r := range claimResources {
			if strings.HasSuffix(name, storageClassSuffix+r) {
				return true
			}
		}
		return false
	}
	return name == countName(e.group, e.plural) || e.group == "" && legacyAliases[e.plural] == name && name != ""
}

// deviceClassPrefix starts the implicit extended resources of a DRA
// device class.
const deviceClassPrefix = "deviceclass.resource.kubernetes.io/"

// native says whether a resource name is kube's own: unprefixed or in
// the kubernetes.io/ namespace (kube's IsNativeResource).
func native(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

// extendedForQuota is kube's isExtendedResourceNameForQuota: requests.
// of an extended resource or of a device class (extended resources are
// not overcommitted, so only their requests are limited).
func extendedForQuota(name string) bool {
	return strings.HasPrefix(name, "requests.") && (!native(name) || strings.HasPrefix(name, "requests."+deviceClassPrefix))
}

// extendedRequest is kube's IsDRAExtendedResourceName: a pod's request
// of an extended resource (not native, not requests.-prefixed, a
// qualified name as requests.<name>) or of a device class.
func extendedRequest(name string) bool {
	if strings.HasPrefix(name, deviceClassPrefix) {
		return true
	}
	return !native(name) && !strings.HasPrefix(name, "requests.") && len(validation.IsQualifiedName("requests."+name)) == 0
}

// read decodes what the evaluator reads of obj: a *pod, *service or
// *claim, nil for an object only counted.
func (e evaluator) read(obj api.Object) (any, error) {
	if !e.reads() {
		return nil, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return e.decode(b)
}

// decode is read from an object's JSON.
func (e evaluator) decode(b []byte) (any, error) {
	var v any
	switch {
	case e.core("pods"):
		v = new(pod)
	case e.core("services"):
		v = new(service)
	case e.core("persistentvolumeclaims"):
		v = new(claim)
	default:
		return nil, nil
	}
	return v, json.Unmarshal(b, v)
}

func (e evaluator) reads() bool {
	return e.core("pods") || e.core("services") || e.core("persistentvolumeclaims")
}

// matches says whether a read object matches every scope (kube's
// generic.Matches with its evaluators' scope functions).
func matches(scopes []Scope, obj any) bool {
	if len(scopes) == 0 {
		return true
	}
	for _, s := range scopes {
		if !matchesScope(s, obj) {
			return false
		}
	}
	return true
}

// matchesScope says whether a read object matches one scope expression:
// only pods and claims match any.
func matchesScope(s Scope, obj any) bool {
	switch o := obj.(type) {
	case *pod:
		return podMatches(s, o)
	case *claim:
		return claimMatches(s, o)
	}
	return false
}

// selects is kube's label selector of a scope expression tested on the
// labels {scope name: value}, or on none if the value is absent.
func selects(s Scope, value string, present bool) bool {
	switch s.Operator {
	case "Exists":
		return present
	case "DoesNotExist":
		return !present
	case "In":
		return present && slices.Contains(s.Values, value)
	case "NotIn":
		return !present || !slices.Contains(s.Values, value)
	}
	return false
}

// claimMatches is kube's pvcMatchesScopeFunc: the VolumeAttributesClass
// scope tests every class the claim names (spec, status, the one it is
// being modified to), or none.
func claimMatches(s Scope, c *claim) bool {
	if s.Name != "VolumeAttributesClass" {
		return false
	}
	classes := c.volumeAttributesClasses()
	if len(classes) == 0 {
		return selects(s, "", false)
	}
	return slices.ContainsFunc(classes, func(class string) bool { return selects(s, class, true) })
}

// podMatches is kube's podMatchesScopeFunc.
func podMatches(s Scope, pod *pod) bool {
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	switch s.Name {
	case "Terminating":
		return terminating
	case "NotTerminating":
		return !terminating
	case "BestEffort":
		return bestEffort(pod)
	case "NotBestEffort":
		return !bestEffort(pod)
	case "PriorityClass":
		class := pod.Spec.PriorityClassName
		return selects(s, class, class != "")
	case "CrossNamespacePodAffinity":
		return crossNamespaceAffinity(pod)
	}
	return false
}

// bestEffort is kube's QoS class BestEffort: the status's class, else no
// cpu or memory requested or limited (by the pod if it sets its own, else
// by any container).
func bestEffort(pod *pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == "BestEffort"
	}
	none := func(r *resources) bool {
		for _, name := range []string{"cpu", "memory"} {
			req, lim := r.Requests[name], r.Limits[name]
			if !req.IsZero() || !lim.IsZero() {
				return false
			}
		}
		return true
	}
	if pod.levelSet() {
		return none(pod.Spec.Resources)
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if !none(&c.Resources) {
			return false
		}
	}
	return true
}

// crossNamespaceAffinity says whether a pod (anti-)affinity term of the
// pod names namespaces or a namespaceSelector.
func crossNamespaceAffinity(pod *pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []affinityTerm
	for _, pa := range []*affinityTerms{a.PodAffinity, a.PodAntiAffinity} {
		if pa == nil {
			continue
		}
		terms = append(terms, pa.Required...)
		for _, w := range pa.Preferred {
			terms = append(terms, w.Term)
		}
	}
	return slices.ContainsFunc(terms, func(t affinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil })
}

// usage is what a read object costs.
func (e evaluator) usage(obj any, now time.Time) List {
	switch o := obj.(type) {
	case *pod:
		return podUsage(o, now)
	case *service:
		return serviceUsage(o)
	case *claim:
		return claimUsage(o)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := List{countName(e.group, e.plural): one}
	if alias := legacyAliases[e.plural]; e.group == "" && alias != "" {
		out[alias] = one
	}
	return out
}

// Decode reads an object's JSON form (or a part of it) into a Go type of
// its fields.
func Decode(from any, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// podUsage is kube's PodUsageFunc: count/pods always; the rest while the
// pod is not terminal nor past its deletion's grace period.
func podUsage(pod *pod, now time.Time) List {
	out := List{"count/pods": *resource.NewQuantity(1, resource.DecimalSI)}
	if pod.Status.Phase == "Failed" || pod.Status.Phase == "Succeeded" {
		return out
	}
	if m := pod.Metadata; m.DeletionTimestamp != nil && m.DeletionGracePeriodSeconds != nil &&
		now.After(m.DeletionTimestamp.Add(time.Duration(*m.DeletionGracePeriodSeconds)*time.Second)) {
		return out
	}
	Add(out, computeUsage(pod.requests(), pod.limits()))
	return out
}

// computeUsage is kube's podComputeUsageHelper: what requests and limits
// charge, "pods" included.
func computeUsage(requests, limits List) List {
	out := List{"pods": *resource.NewQuantity(1, resource.DecimalSI)}
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		if q, ok := requests[r]; ok {
			out[r], out["requests."+r] = q, q
		}
		if q, ok := limits[r]; ok {
			out["limits."+r] = q
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(name, hugePagesPrefix) {
			out[name], out["requests."+name] = q, q
		}
		if extendedRequest(name) {
			out["requests."+name] = q
		}
	}
	return out
}

// service is what quota reads of a Service.
type service struct {
	Spec struct {
		Type                          string `json:"type"`
		AllocateLoadBalancerNodePorts *bool  `json:"allocateLoadBalancerNodePorts"`
		Ports                         []struct {
			NodePort int32 `json:"nodePort"`
		} `json:"ports"`
	} `json:"spec"`
}

func serviceUsage(svc *service) List {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	ports := int64(len(svc.Spec.Ports))
	out := List{"count/services": one, "services": one,
		"services.loadbalancers": {Format: resource.DecimalSI}, "services.nodeports": {Format: resource.DecimalSI}}
	switch svc.Spec.Type {
	case "NodePort":
		out["services.nodeports"] = *resource.NewQuantity(ports, resource.DecimalSI)
	case "LoadBalancer":
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out["services.nodeports"] = *resource.NewQuantity(ports, resource.DecimalSI)
		out["services.loadbalancers"] = one
	}
	return out
}

// claim is what quota reads of a PersistentVolumeClaim.
type claim struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		StorageClassName          *string   `json:"storageClassName"`
		VolumeAttributesClassName string    `json:"volumeAttributesClassName"`
		Resources                 resources `json:"resources"`
	} `json:"spec"`
	Status struct {
		AllocatedResources               List   `json:"allocatedResources"`
		CurrentVolumeAttributesClassName string `json:"currentVolumeAttributesClassName"`
		ModifyVolumeStatus               *struct {
			TargetVolumeAttributesClassName string `json:"targetVolumeAttributesClassName"`
		} `json:"modifyVolumeStatus"`
	} `json:"status"`
}

// volumeAttributesClasses are the classes a claim names, each once
// (kube's getReferencedVolumeAttributesClassNames).
func (c *claim) volumeAttributesClasses() []string {
	var out []string
	for _, name := range []string{c.Spec.VolumeAttributesClassName, c.Status.CurrentVolumeAttributesClassName} {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if m := c.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" && !slices.Contains(out, m.TargetVolumeAttributesClassName) {
		out = append(out, m.TargetVolumeAttributesClassName)
	}
	return out
}

func claimUsage(pvc *claim) List {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := List{"persistentvolumeclaims": one, "count/persistentvolumeclaims": one}
	// The beta annotation first, as kube's GetPersistentVolumeClaimClass.
	class, annotated := pvc.Metadata.Annotations["volume.beta.kubernetes.io/storage-class"]
	if !annotated && pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class != "" {
		out[class+storageClassSuffix+"persistentvolumeclaims"] = one
	}
	storage, ok := pvc.Spec.Resources.Requests["storage"]
	if !ok {
		return out
	}
	storage = roundUp(storage)
	if allocated, ok := pvc.Status.AllocatedResources["storage"]; ok && allocated.Cmp(storage) > 0 {
		storage = roundUp(allocated)
	}
	out["requests.storage"] = storage
	if class != "" {
		out[class+storageClassSuffix+"requests.storage"] = storage
	}
	return out
}

// roundUp is a quantity in whole bytes, as kube counts storage.
func roundUp(q resource.Quantity) resource.Quantity {
	r := q.DeepCopy()
	r.RoundUp(0)
	return r
}

// Add adds list to sum.
func Add(sum, list List) {
	for name, q := range list {
		v, ok := sum[name]
		if !ok {
			sum[name] = q.DeepCopy()
			continue
		}
		v.Add(q)
		sum[name] = v
	}
}

// mask is the part of list named in names.
func mask(list List, names []string) List {
	out := List{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q
		}
	}
	return out
}

// pretty is kube's prettyPrint of a list: name=value, in name order.
func pretty(l List) string {
	parts := make([]string, 0, len(l))
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, name+"="+q.String())
	}
	return strings.Join(parts, ",")
}
