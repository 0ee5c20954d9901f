package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/internal/server/defaulting"
)

// PodQOS is kube's qos.ComputePodQOS with the 1.37 default gates
// (PodLevelResources and its kubelet QoS fix on): the pod-level resources
// decide when they set a supported resource, else the containers' do.
func PodQOS(spec map[string]any) string {
	if res, ok := spec["resources"].(map[string]any); ok && podLevelSet(res) {
		return requirementsQOS(res)
	}
	var qos string
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			c, _ := c.(map[string]any)
			res, _ := c["resources"].(map[string]any)
			switch cq := requirementsQOS(res); {
			case cq == "Burstable":
				return cq
			case qos == "":
				qos = cq
			case qos != cq:
				return "Burstable"
			}
		}
	}
	if qos == "" {
		return "BestEffort"
	}
	return qos
}

// podLevelSet is kube's IsPodLevelResourcesSet: requests or limits name
// cpu, memory or a hugepages- resource.
func podLevelSet(res map[string]any) bool {
	for _, f := range []string{"requests", "limits"} {
		m, _ := res[f].(map[string]any)
		for name := range m {
			if name == "cpu" || name == "memory" || strings.HasPrefix(name, "hugepages-") {
				return true
			}
		}
	}
	return false
}

// requirementsQOS is kube's requirementsQOS: BestEffort without requests
// and limits, else by cpu and memory: Guaranteed when each has limit equal
// to request and above zero, BestEffort when neither has either, Burstable
// otherwise.
func requirementsQOS(res map[string]any) string {
	requests, _ := res["requests"].(map[string]any)
	limits, _ := res["limits"].(map[string]any)
	if len(requests) == 0 && len(limits) == 0 {
		return "BestEffort"
	}
	var qos string
	for _, name := range []string{"cpu", "memory"} {
		req, lim := quantityOf(requests[name]), quantityOf(limits[name])
		rq := "Guaranteed"
		switch {
		case req.Cmp(lim) != 0:
			return "Burstable"
		case req.Sign() == 0:
			rq = "BestEffort"
		}
		if qos == "" {
			qos = rq
		} else if qos != rq {
			return "Burstable"
		}
	}
	return qos
}

// quantityOf is the value of a resource quantity in a requests or limits
// map; absent (or, as validation refuses it, malformed) reads as zero.
func quantityOf(v any) resource.Quantity {
	q, _ := defaulting.ParseQuantity(v)
	return q
}
