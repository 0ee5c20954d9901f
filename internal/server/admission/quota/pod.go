package quota

import (
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// pod is what quota reads of a pod, in core/v1's JSON names.
type pod struct {
	Metadata struct {
		DeletionTimestamp          *time.Time `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64     `json:"deletionGracePeriodSeconds"`
	} `json:"metadata"`
	Spec struct {
		ActiveDeadlineSeconds *int64       `json:"activeDeadlineSeconds"`
		PriorityClassName     string       `json:"priorityClassName"`
		Resources             *resources   `json:"resources"`
		Overhead              List         `json:"overhead"`
		InitContainers        []container  `json:"initContainers"`
		Containers            []container  `json:"containers"`
		Affinity              *podAffinity `json:"affinity"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		QOSClass   string `json:"qosClass"`
		Conditions []struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"conditions"`
		InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
		ContainerStatuses     []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type resources struct {
	Requests List `json:"requests"`
	Limits   List `json:"limits"`
}

type container struct {
	Name          string    `json:"name"`
	RestartPolicy string    `json:"restartPolicy"`
	Resources     resources `json:"resources"`
}

type containerStatus struct {
	Name               string     `json:"name"`
	AllocatedResources List       `json:"allocatedResources"`
	Resources          *resources `json:"resources"`
}

// podAffinity holds the pod (anti-)affinity terms, each only as far as
// whether it names other namespaces.
type podAffinity struct {
	PodAffinity     *affinityTerms `json:"podAffinity"`
	PodAntiAffinity *affinityTerms `json:"podAntiAffinity"`
}

type affinityTerms struct {
	Required  []affinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution"`
	Preferred []struct {
		Term affinityTerm `json:"podAffinityTerm"`
	} `json:"preferredDuringSchedulingIgnoredDuringExecution"`
}

type affinityTerm struct {
	Namespaces        []string `json:"namespaces"`
	NamespaceSelector any      `json:"namespaceSelector"`
}

// podLevelResources are the resources a pod's own spec.resources may set.
var podLevelResources = []string{"cpu", "memory"}

// podLevelSet says whether the pod sets pod-level cpu or memory in list
// (kube's IsPodLevelRequestsSet and IsPodLevelLimitsSet).
func podLevelSet(list List) bool {
	for name := range list {
		if slices.Contains(podLevelResources, name) {
			return true
		}
	}
	return false
}

// levelSet is kube's IsPodLevelResourcesSet.
func (p *pod) levelSet() bool {
	r := p.Spec.Resources
	return r != nil && (podLevelSet(r.Requests) || podLevelSet(r.Limits))
}

// resizeInfeasible is kube's IsPodResizeInfeasible: the first
// PodResizePending condition says Infeasible.
func (p *pod) resizeInfeasible() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "PodResizePending" {
			return c.Reason == "Infeasible"
		}
	}
	return false
}

func (p *pod) status(name string) *containerStatus {
	for _, list := range [][]containerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		if i := slices.IndexFunc(list, func(s containerStatus) bool { return s.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// perContainer is one container's requests or limits, given its status
// and whether the pod's resize is infeasible.
type perContainer func(c *container, s *containerStatus, infeasible bool) List

func specRequests(c *container, _ *containerStatus, _ bool) List { return c.Resources.Requests }
func specLimits(c *container, _ *containerStatus, _ bool) List   { return c.Resources.Limits }

// allocatedRequests is what the kubelet allocated, else the spec's
// (unless the resize is infeasible).
func allocatedRequests(c *container, s *containerStatus, infeasible bool) List {
	switch {
	case s != nil && s.AllocatedResources != nil:
		return s.AllocatedResources
	case infeasible:
		return nil
	}
	return c.Resources.Requests
}

// actuatedRequests is what the container runs with, else what was
// allocated, else the spec's (unless the resize is infeasible).
func actuatedRequests(c *container, s *containerStatus, infeasible bool) List {
	if s != nil && s.Resources != nil && s.Resources.Requests != nil {
		return s.Resources.Requests
	}
	return allocatedRequests(c, s, infeasible)
}

func actuatedLimits(c *container, s *containerStatus, infeasible bool) List {
	switch {
	case s != nil && s.Resources != nil && s.Resources.Limits != nil:
		return s.Resources.Limits
	case infeasible:
		return nil
	}
	return c.Resources.Limits
}

// aggregate is kube's aggregateContainerResourcesByFn with status
// resources: the containers' sum, and the largest of what each init
// container needs while it runs (with the sidecars started before it,
// which also run beside the containers).
func (p *pod) aggregate(of perContainer) List {
	infeasible := p.resizeInfeasible()
	out := List{}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		Add(out, of(c, p.status(c.Name), infeasible))
	}
	sidecars, inits := List{}, List{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := of(c, p.status(c.Name), infeasible)
		if c.RestartPolicy == "Always" {
			Add(out, r)
			Add(sidecars, r)
			r = sidecars
		} else {
			running := List{}
			Add(running, r)
			Add(running, sidecars)
			r = running
		}
		maxInto(inits, r)
	}
	maxInto(out, inits)
	return out
}

// maxInto sets each of list's quantities to the larger of its and
// other's.
func maxInto(list, other List) {
	for name, q := range other {
		if v, ok := list[name]; !ok || q.Cmp(v) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}

// largest is a new list of the largest quantities of lists.
func largest(lists ...List) List {
	out := List{}
	for _, l := range lists {
		maxInto(out, l)
	}
	return out
}

// requests is kube's PodRequests with status resources (as quota calls
// it): the largest of what the spec, the kubelet's allocation and the
// running containers ask (the spec left out if its resize is
// infeasible), pod-level cpu and memory in place of the containers', plus
// the overhead.
func (p *pod) requests() List {
	allocated, actuated := p.aggregate(allocatedRequests), p.aggregate(actuatedRequests)
	out := largest(actuated, allocated)
	if !p.resizeInfeasible() {
		out = largest(p.aggregate(specRequests), actuated, allocated)
	}
	if r := p.Spec.Resources; r != nil && podLevelSet(r.Requests) {
		applyPodLevel(out, r.Requests)
	}
	Add(out, p.Spec.Overhead)
	return out
}

// PodRequests is kube's PodRequests with its default options, as the
// PodResizeValidator admission plugin calls it: the containers' spec
// requests (init containers and sidecars aggregated), pod-level cpu and
// memory in their place, plus the overhead.
func PodRequests(obj api.Object) (List, error) {
	var p pod
	if err := Decode(obj, &p); err != nil {
		return nil, err
	}
	out := p.aggregate(specRequests)
	if r := p.Spec.Resources; r != nil && podLevelSet(r.Requests) {
		applyPodLevel(out, r.Requests)
	}
	Add(out, p.Spec.Overhead)
	return out, nil
}

// limits is kube's PodLimits with status resources: the overhead is added
// only to limits that are set and not zero.
func (p *pod) limits() List {
	actuated := p.aggregate(actuatedLimits)
	out := actuated
	if !p.resizeInfeasible() {
		out = largest(p.aggregate(specLimits), actuated)
	}
	if p.levelSet() {
		applyPodLevel(out, p.Spec.Resources.Limits)
	}
	for name, q := range p.Spec.Overhead {
		if v, ok := out[name]; ok && !v.IsZero() {
			v.Add(q)
			out[name] = v
		}
	}
	return out
}

// applyPodLevel puts the pod's own cpu and memory in place of the
// containers'.
func applyPodLevel(out, pod List) {
	for name, q := range pod {
		if slices.Contains(podLevelResources, name) {
			out[name] = q
		}
	}
}
