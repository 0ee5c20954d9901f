package kubevalidation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
)

// statusStrategy is what kube's status strategies do on a write through
// the status subresource.
type statusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

var statusStrategies = map[schema.GroupVersionKind]statusStrategy{
	{Version: "v1", Kind: "Pod"}:                                 pod.StatusStrategy,
	{Version: "v1", Kind: "ReplicationController"}:               replicationcontroller.StatusStrategy,
	{Version: "v1", Kind: "Service"}:                             service.StatusStrategy,
	{Version: "v1", Kind: "PersistentVolumeClaim"}:               persistentvolumeclaim.StatusStrategy,
	{Group: "apps", Version: "v1", Kind: "Deployment"}:           deployment.StatusStrategy,
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:           replicaset.StatusStrategy,
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:            daemonset.StatusStrategy,
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:          statefulset.StatusStrategy,
	{Group: "batch", Version: "v1", Kind: "Job"}:                 job.StatusStrategy,
	{Group: "batch", Version: "v1", Kind: "CronJob"}:             cronjob.StatusStrategy,
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}: ingress.StatusStrategy,
}

// spoiled makes each kind's spec one kube refuses today: the objects
// stored before a rule existed, which must still take status writes.
var spoiled = map[string]func(o map[string]any){
	"Pod":                   func(o map[string]any) { container(spec(o))["name"] = "Bad_Name" },
	"ReplicationController": func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"Deployment":            func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"ReplicaSet":            func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"DaemonSet":             func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"StatefulSet":           func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"Job":                   func(o map[string]any) { container(at(template(o), "spec"))["name"] = "Bad_Name" },
	"CronJob":               func(o map[string]any) { spec(o)["schedule"] = "not a schedule" },
	"Service":               func(o map[string]any) { spec(o)["sessionAffinity"] = "Sometimes" },
	"PersistentVolumeClaim": func(o map[string]any) { spec(o)["accessModes"] = []any{"ReadWriteSometimes"} },
	"Ingress":               func(o map[string]any) { spec(o)["ingressClassName"] = "Bad_Class" },
}

// statusWrite is one write through the status subresource: prepare
// changes the stored object, set makes its status, change the written one.
type statusWrite struct {
	prepare     func(old map[string]any)
	set, change map[string]any
	refused     bool
}

func counts(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// replicaWrites are writes of a ReplicaSet's, a ReplicationController's,
// a Deployment's or a StatefulSet's counts.
var replicaWrites = map[string]statusWrite{
	"counts":              {change: counts("replicas", 3, "readyReplicas", 2, "availableReplicas", 2, "observedGeneration", 1)},
	"negative replicas":   {change: counts("replicas", -1), refused: true},
	"ready over replicas": {change: counts("replicas", 1, "readyReplicas", 2), refused: true},
	"available over ready": {
		change:  counts("replicas", 3, "readyReplicas", 1, "availableReplicas", 2),
		refused: true,
	},
	"negative observedGeneration": {change: counts("observedGeneration", -2), refused: true},
}

// collisionWrites are writes of the kinds that count hash collisions.
var collisionWrites = map[string]statusWrite{
	"collisionCount raised":      {set: counts("collisionCount", 1), change: counts("collisionCount", 2)},
	"collisionCount decremented": {set: counts("collisionCount", 2), change: counts("collisionCount", 1), refused: true},
	"collisionCount removed":     {set: counts("collisionCount", 2), change: counts(), refused: true},
	"collisionCount negative":    {change: counts("collisionCount", -1), refused: true},
}

var podWrites = map[string]statusWrite{
	"phase":                       {change: counts("phase", "Running")},
	"negative observedGeneration": {change: counts("observedGeneration", -1), refused: true},
	"qosClass changed":            {set: counts("qosClass", "BestEffort"), change: counts("qosClass", "Guaranteed"), refused: true},
	"conditions": {change: counts("conditions", []any{
		counts("type", "Ready", "status", "True"), counts("type", "example.com/Drained", "status", "False"),
	})},
	"condition type not qualified": {change: counts("conditions", []any{counts("type", "not a name!", "status", "True")}), refused: true},
	"condition negative observedGeneration": {
		change:  counts("conditions", []any{counts("type", "PodScheduled", "status", "True", "observedGeneration", -1)}),
		refused: true,
	},
	"nominatedNodeName":         {change: counts("nominatedNodeName", "node-1")},
	"nominatedNodeName invalid": {change: counts("nominatedNodeName", "Node_1"), refused: true},
	"nominatedNodeName kept":    {prepare: onNode, set: counts("nominatedNodeName", "node-1"), change: counts("nominatedNodeName", "node-1")},
	"nominatedNodeName bound":   {prepare: onNode, change: counts("nominatedNodeName", "node-2"), refused: true},
	"resource claim statuses": {
		prepare: withClaim,
		change:  counts("resourceClaimStatuses", []any{counts("name", "gpu", "resourceClaimName", "p-gpu-x1")}),
	},
	"resource claim statuses bad": {
		prepare: withClaim,
		change: counts("resourceClaimStatuses", []any{
			counts("name", "other"), counts("name", "gpu", "resourceClaimName", "Bad_Claim"), counts("name", "gpu"),
		}),
		refused: true,
	},
	"container user":              {change: userStatus(counts("uid", 4294967295, "gid", 2147483647, "supplementalGroups", []any{0, 5}))},
	"container user out of range": {change: userStatus(counts("uid", 4294967296, "gid", 2147483648, "supplementalGroups", []any{1, -1})), refused: true},
	"container user negative":     {change: userStatus(counts("uid", -1, "gid", -1)), refused: true},
	"allocated resources": {prepare: withDevices, change: allocatedStatus("containerStatuses", "Bad_Name",
		health("example.com/dev", counts("resourceID", "d1", "health", "Healthy")),
		health("claim:gpu", counts("resourceID", "g1", "health", "Unknown", "message", "probing")))},
	"allocated resources bad": {prepare: withDevices, change: allocatedStatus("containerStatuses", "Bad_Name",
		health("example.com/other", counts("resourceID", "d1", "health", "Sick"), counts("resourceID", "d1", "health", "Healthy", "message", "")),
		health("claim:gpu/r"),
		health("claim:x", counts("resourceID", "x", "health", "Healthy", "message", strings.Repeat("x", 1025)))),
		refused: true},
	"allocated resources of another container": {prepare: withDevices, change: allocatedStatus("containerStatuses", "gone", health("example.com/other"))},
	"allocated resources of an init container": {change: allocatedStatus("initContainerStatuses", "gone", health("x", counts("resourceID", "x", "health", "Bad"))), refused: true},
	"allocated resources, ephemeral":           {change: allocatedStatus("ephemeralContainerStatuses", "debug", health("x")), refused: true},
	"allocated resources, extended claim": {
		prepare: withDevices,
		change: func() map[string]any {
			st := allocatedStatus("containerStatuses", "Bad_Name", health("claim:p-extended-x/container-0-request-0", counts("resourceID", "d1", "health", "Healthy")))
			st["extendedResourceClaimStatus"] = counts("resourceClaimName", "p-extended-x", "requestMappings", []any{
				counts("containerName", "Bad_Name", "resourceName", "example.com/dev", "requestName", "container-0-request-0")})
			return st
		}(),
	},
	"extended claim bad": {
		prepare: withDevices,
		change: counts("extendedResourceClaimStatus", counts("resourceClaimName", "Bad_Claim", "requestMappings", []any{
			counts("containerName", "Bad_Name", "resourceName", "example.com/other", "requestName", "r.1"),
			counts("containerName", "gone", "resourceName", "example.com/dev", "requestName", "r"),
			counts("containerName", "gone", "resourceName", "example.com/dev", "requestName", "r"),
		})),
		refused: true,
	},
	"extended claim empty": {prepare: withDevices, change: counts("extendedResourceClaimStatus", counts("requestMappings", []any{})), refused: true},
	"container user on windows": {
		prepare: func(o map[string]any) { spec(o)["os"] = counts("name", "windows") },
		change:  userStatus(counts("uid", 1, "gid", 1)),
		refused: true,
	},
}

// withDevices makes the container Bad_Name request a device and use the
// claim gpu.
func withDevices(o map[string]any) {
	container(spec(o))["resources"] = counts("requests", counts("example.com/dev", "1"), "limits", counts("example.com/dev", "1"),
		"claims", []any{counts("name", "gpu")})
}

// allocatedStatus is a status of the container called name with allocated
// resources statuses.
func allocatedStatus(field, name string, statuses ...any) map[string]any {
	return counts(field, []any{counts("name", name, "allocatedResourcesStatus", statuses)})
}

// health is an allocated resource status of the resource name.
func health(name string, resources ...any) map[string]any {
	return counts("name", name, "resources", resources)
}

func withClaim(o map[string]any) {
	spec(o)["resourceClaims"] = []any{counts("name", "gpu", "resourceClaimTemplateName", "gpu-template")}
}

// userStatus is a status of the container Bad_Name run by a Linux user.
func userStatus(linux map[string]any) map[string]any {
	return counts("containerStatuses", []any{counts("name", "Bad_Name", "user", counts("linux", linux))})
}

func onNode(o map[string]any) { spec(o)["nodeName"] = "node-1" }

// ips is a list of PodIPs or HostIPs.
func ips(addrs ...string) []any {
	out := make([]any, len(addrs))
	for i, a := range addrs {
		out[i] = counts("ip", a)
	}
	return out
}

var podIPWrites = map[string]statusWrite{
	"podIPs":               {change: counts("podIP", "10.0.0.1", "podIPs", ips("10.0.0.1"))},
	"podIPs dual-stack":    {change: counts("podIP", "fd00::1", "podIPs", ips("fd00::1", "10.0.0.1"))},
	"podIPs of one family": {change: counts("podIP", "10.0.0.1", "podIPs", ips("10.0.0.1", "10.0.0.2")), refused: true},
	"podIPs three":         {change: counts("podIP", "10.0.0.1", "podIPs", ips("10.0.0.1", "fd00::1", "fd00::2")), refused: true},
	// defaulting makes podIP and podIPs agree, podIP winning
	"podIP alone":              {change: counts("podIP", "10.0.0.1")},
	"podIPs alone":             {change: counts("podIPs", ips("10.0.0.1"))},
	"podIP not first":          {change: counts("podIP", "10.0.0.2", "podIPs", ips("10.0.0.1", "fd00::1"))},
	"podIP invalid":            {change: counts("podIP", "10.0.0.256", "podIPs", ips("10.0.0.256", "fd00::1")), refused: true},
	"podIP leading zeros":      {change: counts("podIP", "010.0.0.1", "podIPs", ips("010.0.0.1", "fd00::1")), refused: true},
	"podIP leading zeros kept": {set: counts("podIP", "010.0.0.1", "podIPs", ips("010.0.0.1")), change: counts("podIP", "010.0.0.1", "podIPs", ips("010.0.0.1"))},
	"podIP IPv4-mapped":        {change: counts("podIP", "::ffff:10.0.0.1", "podIPs", ips("::ffff:10.0.0.1", "fd00::1")), refused: true},
	"podIP with a zone":        {change: counts("podIP", "fe80::1%eth0", "podIPs", ips("fe80::1%eth0", "10.0.0.1")), refused: true},
	"hostIPs":                  {change: counts("hostIP", "192.168.0.1", "hostIPs", ips("192.168.0.1", "fd00::9"))},
	"hostIP alone":             {change: counts("hostIP", "192.168.0.1")},
	"hostIPs alone":            {change: counts("hostIPs", ips("192.168.0.1")), refused: true},
	"hostIPs of one family":    {change: counts("hostIP", "fd00::9", "hostIPs", ips("fd00::9", "fd00::8")), refused: true},
	"hostIP invalid":           {change: counts("hostIP", "host", "hostIPs", ips("host")), refused: true},
}

// terminated is a container status, terminated with exit code exit.
func terminated(name string, exit int) map[string]any {
	return counts("name", name, "state", counts("terminated", counts("exitCode", exit)))
}

func running(name string) map[string]any {
	return counts("name", name, "state", counts("running", counts()))
}

// restartWrite is a write that starts again the container Bad_Name (the
// spoiled one) after it exited with exit, under the pod's policy, with
// edit changing its container.
func restartWrite(policy string, exit int, edit func(ctr map[string]any), refused bool) statusWrite {
	return statusWrite{
		prepare: func(o map[string]any) {
			spec(o)["restartPolicy"] = policy
			if edit != nil {
				edit(container(spec(o)))
			}
		},
		set:     counts("containerStatuses", []any{terminated("Bad_Name", exit)}),
		change:  counts("containerStatuses", []any{running("Bad_Name")}),
		refused: refused,
	}
}

// restartRule makes a container's policy Never but for a rule that does
// action on exit code 42.
func restartRule(action string) func(ctr map[string]any) {
	return func(ctr map[string]any) {
		ctr["restartPolicy"] = "Never"
		ctr["restartPolicyRules"] = []any{counts("action", action, "exitCodes", counts("operator", "In", "values", []any{42}))}
	}
}

var podContainerWrites = map[string]statusWrite{
	"restart under Always":             restartWrite("Always", 0, nil, false),
	"restart under Never":              restartWrite("Never", 1, nil, true),
	"restart after failure, OnFailure": restartWrite("OnFailure", 1, nil, false),
	"restart after success, OnFailure": restartWrite("OnFailure", 0, nil, true),
	"container policy Always":          restartWrite("Never", 0, func(c map[string]any) { c["restartPolicy"] = "Always" }, false),
	"container policy Never":           restartWrite("Always", 0, func(c map[string]any) { c["restartPolicy"] = "Never" }, true),
	"container rule matches":           restartWrite("Never", 42, restartRule("Restart"), false),
	"container rule does not match":    restartWrite("Always", 1, restartRule("Restart"), true),
	"restart all containers":           restartWrite("Never", 1, restartRule("RestartAllContainers"), false),
	"terminated still": {
		prepare: func(o map[string]any) { spec(o)["restartPolicy"] = "Never" },
		set:     counts("containerStatuses", []any{terminated("Bad_Name", 1)}),
		change:  counts("containerStatuses", []any{terminated("Bad_Name", 1)}),
	},
	"unknown container": {
		prepare: func(o map[string]any) { spec(o)["restartPolicy"] = "Always" },
		set:     counts("containerStatuses", []any{terminated("gone", 0)}),
		change:  counts("containerStatuses", []any{running("gone")}),
		refused: true,
	},
	"init container restarts": {
		prepare: func(o map[string]any) {
			spec(o)["restartPolicy"] = "Never"
			spec(o)["initContainers"] = []any{counts("name", "init", "image", "busybox", "restartPolicy", "Always")}
		},
		set:    counts("initContainerStatuses", []any{terminated("init", 0)}),
		change: counts("initContainerStatuses", []any{running("init")}),
	},
	"init container restarts under Never": {
		prepare: func(o map[string]any) {
			spec(o)["restartPolicy"] = "Never"
			spec(o)["initContainers"] = []any{counts("name", "init", "image", "busybox")}
		},
		set:     counts("initContainerStatuses", []any{terminated("init", 0)}),
		change:  counts("initContainerStatuses", []any{running("init")}),
		refused: true,
	},
	"ephemeral container restarts": {
		set:     counts("ephemeralContainerStatuses", []any{terminated("debug", 0)}),
		change:  counts("ephemeralContainerStatuses", []any{running("debug")}),
		refused: true,
	},
}

// loadBalanced is a load balancer status of one ingress point.
func loadBalanced(kv ...any) map[string]any {
	return counts("loadBalancer", counts("ingress", []any{counts(kv...)}))
}

// typeLoadBalancer makes a Service one of type LoadBalancer.
func typeLoadBalancer(o map[string]any) {
	if o["kind"] == "Service" {
		spec(o)["type"] = "LoadBalancer"
	}
}

// loadBalancerWrites are writes of the load balancer status of an
// Ingress or a Service of type LoadBalancer.
var loadBalancerWrites = map[string]statusWrite{
	"ingress IP":              {prepare: typeLoadBalancer, change: loadBalanced("ip", "192.0.2.1")},
	"ingress IP invalid":      {prepare: typeLoadBalancer, change: loadBalanced("ip", "192.0.2"), refused: true},
	"ingress IP zeros":        {prepare: typeLoadBalancer, change: loadBalanced("ip", "192.0.2.01"), refused: true},
	"ingress IP zeros kept":   {prepare: typeLoadBalancer, set: loadBalanced("ip", "192.0.2.01"), change: loadBalanced("ip", "192.0.2.01")},
	"ingress hostname":        {prepare: typeLoadBalancer, change: loadBalanced("hostname", "lb.example.com")},
	"ingress hostname an IP":  {prepare: typeLoadBalancer, change: loadBalanced("hostname", "192.0.2.1"), refused: true},
	"ingress hostname bad":    {prepare: typeLoadBalancer, change: loadBalanced("hostname", "LB_1.example.com"), refused: true},
	"ingress hostname zeros":  {prepare: typeLoadBalancer, change: loadBalanced("hostname", "192.0.2.01"), refused: true},
	"ingress hostname and IP": {prepare: typeLoadBalancer, change: loadBalanced("hostname", "lb.example.com", "ip", "2001:db8::1")},
}

var serviceWrites = map[string]statusWrite{
	"ingress not a load balancer": {
		prepare: func(o map[string]any) { spec(o)["type"] = "ClusterIP" },
		change:  loadBalanced("ip", "not an IP", "ipMode", "VIP"),
		refused: true,
	},
	"ipMode Proxy":      {prepare: typeLoadBalancer, change: loadBalanced("ip", "192.0.2.1", "ipMode", "Proxy")},
	"ipMode unknown":    {prepare: typeLoadBalancer, change: loadBalanced("ip", "192.0.2.1", "ipMode", "Direct"), refused: true},
	"ipMode alone":      {prepare: typeLoadBalancer, change: loadBalanced("hostname", "lb.example.com", "ipMode", "VIP"), refused: true},
	"ipMode and bad IP": {prepare: typeLoadBalancer, change: loadBalanced("ip", "::ffff:192.0.2.1", "ipMode", "Proxy"), refused: true},
}

var claimWrites = map[string]statusWrite{
	"capacity":                      {change: counts("capacity", counts("storage", "1Gi"))},
	"capacity negative":             {change: counts("capacity", counts("storage", "-1Gi")), refused: true},
	"capacity negative fraction":    {change: counts("capacity", counts("storage", "-500m")), refused: true},
	"allocated":                     {change: counts("allocatedResources", counts("storage", "1Gi", "example.com/iops", "3"))},
	"allocated negative":            {change: counts("allocatedResources", counts("storage", "-1Gi")), refused: true},
	"allocated negative fraction":   {change: counts("allocatedResources", counts("storage", "-500m")), refused: true},
	"allocated cpu":                 {change: counts("allocatedResources", counts("cpu", "1", "kubernetes.io/gpu", "1")), refused: true},
	"allocated name invalid":        {change: counts("allocatedResources", counts("example.com/a b", "-1")), refused: true},
	"resize status":                 {change: counts("allocatedResourceStatuses", counts("storage", "ControllerResizeInProgress"))},
	"resize status unknown":         {change: counts("allocatedResourceStatuses", counts("storage", "Resizing")), refused: true},
	"resize status of cpu":          {change: counts("allocatedResourceStatuses", counts("cpu", "NodeResizePending")), refused: true},
	"resize status of bad name":     {change: counts("allocatedResourceStatuses", counts("a b", "Resizing")), refused: true},
	"no resourceVersion":            {prepare: func(o map[string]any) { delete(at(o, "metadata"), "resourceVersion") }, change: counts(), refused: true},
	"no accessModes in stored spec": {prepare: func(o map[string]any) { delete(spec(o), "accessModes") }, change: counts(), refused: true},
}

const t0, t1, t2 = "2026-01-02T03:04:05Z", "2026-01-02T04:00:00Z", "2026-01-02T05:00:00Z"

// conditions are Job conditions, each a type and its status.
func conditions(typeStatus ...string) []any {
	var out []any
	for i := 0; i < len(typeStatus); i += 2 {
		out = append(out, counts("type", typeStatus[i], "status", typeStatus[i+1]))
	}
	return out
}

// complete is a complete Job's status, with kv more.
func complete(kv ...any) map[string]any {
	return counts(append([]any{"startTime", t0, "completionTime", t1, "conditions", conditions("SuccessCriteriaMet", "True", "Complete", "True")}, kv...)...)
}

// failed is a failed Job's status, with kv more.
func failed(kv ...any) map[string]any {
	return counts(append([]any{"startTime", t0, "conditions", conditions("FailureTarget", "True", "Failed", "True")}, kv...)...)
}

// indexedOf5 makes a Job Indexed of 5 completions, 2 in parallel, with
// perIndex a backoffLimitPerIndex.
func indexedOf5(perIndex bool) func(o map[string]any) {
	return func(o map[string]any) {
		indexed(5)(o)
		spec(o)["parallelism"] = 2
		if perIndex {
			spec(o)["backoffLimitPerIndex"] = 1
		} else {
			delete(spec(o), "backoffLimitPerIndex")
		}
	}
}

var jobWrites = map[string]statusWrite{
	"negative counts":            {change: counts("active", -1, "failed", -2, "succeeded", -1, "ready", -1, "terminating", -1), refused: true},
	"uncounted":                  {change: counts("uncountedTerminatedPods", counts("succeeded", []any{"a"}, "failed", []any{"b"}))},
	"uncounted empty, twice":     {change: counts("uncountedTerminatedPods", counts("succeeded", []any{"a", ""}, "failed", []any{"a"})), refused: true},
	"complete":                   {change: complete()},
	"complete without criteria":  {change: complete("conditions", conditions("Complete", "True")), refused: true},
	"complete without time":      {change: counts("startTime", t0, "conditions", conditions("SuccessCriteriaMet", "True", "Complete", "True")), refused: true},
	"completion time, running":   {change: counts("startTime", t0, "completionTime", t1), refused: true},
	"completion before start":    {change: complete("startTime", t1, "completionTime", t0), refused: true},
	"complete and failed":        {change: complete("conditions", conditions("SuccessCriteriaMet", "True", "Complete", "True", "FailureTarget", "True", "Failed", "True")), refused: true},
	"failed":                     {change: failed()},
	"failed without target":      {change: failed("conditions", conditions("Failed", "True")), refused: true},
	"finished with active":       {change: failed("active", 1), refused: true},
	"finished without startTime": {change: counts("conditions", conditions("FailureTarget", "True", "Failed", "True")), refused: true},
	"finished with uncounted":    {change: failed("uncountedTerminatedPods", counts("failed", []any{"a"})), refused: true},
	"finished with terminating":  {change: failed("terminating", 2), refused: true},
	"ready over active":          {change: counts("active", 1, "ready", 2), refused: true},
	"criteria and failure":       {change: counts("conditions", conditions("SuccessCriteriaMet", "True", "FailureTarget", "True")), refused: true},
	"completed indexes":          {prepare: indexedOf5(false), change: counts("completedIndexes", "0-2,4")},
	"completed indexes bad":      {prepare: indexedOf5(false), change: counts("completedIndexes", "0,0-1"), refused: true},
	"completed index too large":  {prepare: indexedOf5(false), change: counts("completedIndexes", "7"), refused: true},
	"completed indexes, not indexed": {
		prepare: func(o map[string]any) { spec(o)["completionMode"] = "NonIndexed" },
		change:  counts("completedIndexes", "0"), refused: true,
	},
	"failed indexes":                  {prepare: indexedOf5(true), change: counts("completedIndexes", "0-2", "failedIndexes", "3")},
	"failed indexes overlap":          {prepare: indexedOf5(true), change: counts("completedIndexes", "0-2", "failedIndexes", "1,4"), refused: true},
	"failed indexes bad":              {prepare: indexedOf5(true), change: counts("failedIndexes", "4-3"), refused: true},
	"failed indexes, no limit":        {prepare: indexedOf5(false), change: counts("failedIndexes", ""), refused: true},
	"stored bad indexes, other write": {prepare: indexedOf5(false), set: counts("completedIndexes", "9"), change: counts("completedIndexes", "9", "active", 1)},
}

// jobTransitions are writes that change a Job's stored status.
var jobTransitions = map[string]statusWrite{
	"failure disabled":          {set: failed(), change: counts("startTime", t0), refused: true},
	"failed decreased":          {set: counts("failed", 2), change: counts("failed", 1), refused: true},
	"succeeded decreased":       {set: counts("succeeded", 2), change: counts("succeeded", 1), refused: true},
	"succeeded scaled down":     {prepare: indexed(5), set: counts("succeeded", 2), change: counts("succeeded", 1)},
	"completion time changed":   {set: complete(), change: complete("completionTime", t2), refused: true},
	"start time changed":        {set: counts("startTime", t0), change: counts("startTime", t1), refused: true},
	"start time cleared":        {set: counts("startTime", t0), change: counts(), refused: true},
	"start time, suspended":     {prepare: suspend, set: counts("startTime", t0), change: counts("startTime", t1)},
	"start time, resumed":       {set: counts("startTime", t0, "conditions", conditions("Suspended", "True")), change: counts("startTime", t1, "conditions", conditions("Suspended", "False"))},
	"criteria disabled":         {set: counts("conditions", conditions("SuccessCriteriaMet", "True")), change: counts(), refused: true},
	"criteria after completion": {set: complete("conditions", conditions("Complete", "True")), change: complete(), refused: true},
	"stored inconsistent":       {set: failed("active", 3), change: failed("active", 3, "succeeded", 1)},
}

var statusWrites = map[string][]map[string]statusWrite{
	"Pod":                   {podWrites, podIPWrites, podContainerWrites},
	"ReplicationController": {replicaWrites},
	"ReplicaSet":            {replicaWrites, {"negative terminatingReplicas": {change: counts("terminatingReplicas", -1), refused: true}}},
	"Deployment": {replicaWrites, collisionWrites, {
		"updated over replicas":   {change: counts("replicas", 1, "updatedReplicas", 2), refused: true},
		"negative unavailable":    {change: counts("unavailableReplicas", -1), refused: true},
		"negative terminating":    {change: counts("terminatingReplicas", -1), refused: true},
		"available over replicas": {change: counts("replicas", 1, "readyReplicas", 1, "availableReplicas", 2), refused: true},
	}},
	"StatefulSet": {replicaWrites, collisionWrites, {
		"current over replicas": {change: counts("replicas", 1, "currentReplicas", 2), refused: true},
	}},
	"DaemonSet": {collisionWrites, {
		"counts":           {change: counts("currentNumberScheduled", 2, "desiredNumberScheduled", 2, "numberReady", 1)},
		"negative ready":   {change: counts("numberReady", -1), refused: true},
		"negative desired": {change: counts("desiredNumberScheduled", -3, "numberMisscheduled", -1), refused: true},
	}},
	"Job":                   {{"active": {change: counts("active", 1)}}, jobWrites, jobTransitions},
	"CronJob":               {{"lastScheduleTime": {change: counts("lastScheduleTime", "2026-01-02T03:04:05Z")}}},
	"Service":               {{"loadBalancer": {change: counts("loadBalancer", map[string]any{})}}, loadBalancerWrites, serviceWrites},
	"PersistentVolumeClaim": {{"phase": {change: counts("phase", "Pending")}}, claimWrites},
	"Ingress":               {{"loadBalancer": {change: counts("loadBalancer", map[string]any{})}}, loadBalancerWrites},
}

// TestStatusUpdates writes the status of each real manifest of a kind
// with a status subresource, its spec spoiled so that kube refuses it
// today, and validates each write both ways: kube's status strategy's
// PrepareForUpdate and ValidateUpdate (with declarative validation), our
// ValidateStatusUpdate. Both accept a valid status whatever the spec, and
// refuse the same invalid ones with the same causes.
func TestStatusUpdates(t *testing.T) {
	n, refused := 0, 0
	for _, m := range readManifests(t) {
		writes, ok := statusWrites[m.gvk.Kind]
		if !ok {
			continue
		}
		old := deepCopy(m.obj).(map[string]any)
		if m.gvk.Kind == "Job" {
			jobCreated(old)
		}
		spoiled[m.gvk.Kind](old)
		if len(kubeCauses(t, m.gvk, encode(t, old))) == 0 {
			t.Fatalf("%s: kube accepts the spoiled spec", m.name)
		}
		for _, ws := range writes {
			for name, w := range ws {
				n++
				if checkStatusWrite(t, m.name+"/"+name, m.gvk, old, w) {
					refused++
				}
			}
		}
	}
	if n < 1400 || refused < 900 {
		t.Fatalf("%d status writes, %d refused; want at least 1400 and 900", n, refused)
	}
}

// checkStatusWrite validates w on a copy of old both ways in a subtest;
// it says whether kube refused it.
func checkStatusWrite(t *testing.T, name string, gvk schema.GroupVersionKind, old map[string]any, w statusWrite) (refused bool) {
	was := deepCopy(old).(map[string]any)
	at(was, "metadata")["resourceVersion"] = "7" // as stored (a claim's status rules check it)
	if w.prepare != nil {
		w.prepare(was)
	}
	if w.set != nil {
		was["status"] = deepCopy(w.set)
	}
	updated := deepCopy(was).(map[string]any)
	updated["status"] = deepCopy(w.change)
	t.Run(name, func(t *testing.T) {
		js, oldJS := encode(t, updated), encode(t, was)
		refused = sameCauses(t, kubeStatusCauses(t, gvk, js, oldJS), ourStatusCauses(t, gvk, js, oldJS), w.refused, oldJS, js)
	})
	return refused
}

// kubeStatusCauses runs kube's status strategy on a write from old to js.
func kubeStatusCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	obj, was := kubeInternal(t, gvk, js), kubeInternal(t, gvk, old)
	s := statusStrategies[gvk]
	s.PrepareForUpdate(t.Context(), obj, was)
	return kubeErrors(declarativelyAs(t, gvk, kinds[gvk].plural, kinds[gvk].strategy, "status", obj, was, s.ValidateUpdate(t.Context(), obj, was)))
}

// ourStatusCauses runs our preparation and status validation of a write
// from old to js.
func ourStatusCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	obj, was := ourObject(t, r, js), ourObject(t, r, old)
	if r.Prepare != nil {
		r.Prepare(obj, was)
	}
	if r.ValidateStatusUpdate == nil {
		t.Fatalf("%s has no status validation", gvk.Kind)
	}
	return ourErrors(r.ValidateStatusUpdate(t.Context(), obj, was))
}

// metadataStatusStrategies are kube's status strategies whose handling of
// metadata TestStatusMetadata compares, with each kind's plural and, when
// not status, the subresource.
var metadataStatusStrategies = []struct {
	gvk      schema.GroupVersionKind
	plural   string
	strategy statusStrategy
	sub      string
}{
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "pods", pod.StatusStrategy, ""},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "services", service.StatusStrategy, ""},
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", namespace.StatusStrategy, ""},
	{schema.GroupVersionKind{Version: "v1", Kind: "Node"}, "nodes", node.StatusStrategy, ""},
	{schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}, "persistentvolumes", persistentvolume.StatusStrategy, ""},
	{schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}, "resourcequotas", resourcequota.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", deployment.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "statefulsets", statefulset.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "jobs", job.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, "horizontalpodautoscalers", horizontalpodautoscaler.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, "poddisruptionbudgets", poddisruptionbudget.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}, "certificatesigningrequests", certificates.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}, "certificatesigningrequests", certificates.ApprovalStrategy, "approval"},
	{schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "FlowSchema"}, "flowschemas", flowschema.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "ServiceCIDR"}, "servicecidrs", servicecidr.StatusStrategy, ""},
	{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment"}, "volumeattachments", volumeattachment.StatusStrategy, ""},
}

// statusMetadata is the part of metadata a status write may change.
type statusMetadata struct {
	Labels, Annotations map[string]string
	Finalizers          []string
	OwnerReferences     []metav1.OwnerReference
}

// TestStatusMetadata writes through the status subresource of each kind
// an object whose labels, annotations, finalizers and owner references all
// changed, and compares what kube's status strategy (PrepareForUpdate)
// keeps of them with what ours (Resource.WritePart) keeps: most of
// kube's take the request's metadata, a Deployment's keeps its labels, a
// Pod's its owner references, some keep all the stored metadata.
func TestStatusMetadata(t *testing.T) {
	meta := func(v string) map[string]any {
		return map[string]any{
			"name": "o", "uid": "6f1c2a8e-0d4b-4c1e-9a57-2b8d3e4f5a60", "resourceVersion": "7",
			"labels": map[string]any{"k": v}, "annotations": map[string]any{"k": v}, "finalizers": []any{"example.com/" + v},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": v, "uid": "uid-" + v}},
		}
	}
	for _, k := range metadataStatusStrategies {
		sub := k.sub
		if sub == "" {
			sub = "status"
		}
		t.Run(k.gvk.Kind+"/"+sub, func(t *testing.T) {
			apiVersion := k.gvk.GroupVersion().String()
			old := encode(t, map[string]any{"apiVersion": apiVersion, "kind": k.gvk.Kind, "metadata": meta("stored")})
			js := encode(t, map[string]any{"apiVersion": apiVersion, "kind": k.gvk.Kind, "metadata": meta("sent"), "status": map[string]any{}})

			obj, was := kubeInternal(t, k.gvk, js), kubeInternal(t, k.gvk, old)
			k.strategy.PrepareForUpdate(t.Context(), obj, was)
			m, err := apimeta.Accessor(obj)
			if err != nil {
				t.Fatal(err)
			}
			want := statusMetadata{m.GetLabels(), m.GetAnnotations(), m.GetFinalizers(), m.GetOwnerReferences()}

			r := ours[k.gvk.Group+"/"+k.gvk.Version+"/"+k.plural]
			written := r.WritePart(sub, ourObject(t, r, old), ourObject(t, r, js))
			var got metav1.ObjectMeta
			if err := json.Unmarshal(encode(t, written.Metadata()), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, statusMetadata{got.Labels, got.Annotations, got.Finalizers, got.OwnerReferences}); d != "" {
				t.Errorf("metadata (-kube +ours):\n%s", d)
			}
		})
	}
}

// TestPodStatusKept writes Pod statuses that leave out what kube's pod
// status strategy takes from the stored status (the QoS class,
// observedGenerations, resource claim statuses) and compares the status
// ours stores with the one kube's PrepareForUpdate makes.
func TestPodStatusKept(t *testing.T) {
	claims := []any{counts("name", "gpu", "resourceClaimName", "gpu-claim")}
	stored := counts("qosClass", "BestEffort", "observedGeneration", 3, "resourceClaimStatuses", claims,
		"conditions", []any{
			counts("type", "Ready", "status", "True", "observedGeneration", 2),
			counts("type", "example.com/A", "status", "True", "observedGeneration", 1),
			counts("type", "example.com/A", "status", "False", "observedGeneration", 2),
		})
	for name, written := range map[string]map[string]any{
		"left out": counts("phase", "Running"),
		"set":      counts("qosClass", "BestEffort", "observedGeneration", 4),
		"conditions": counts("conditions", []any{
			counts("type", "example.com/A", "status", "False"),
			counts("type", "example.com/A", "status", "True", "observedGeneration", 5),
			counts("type", "example.com/A", "status", "True"),
			counts("type", "Ready", "status", "False"),
			counts("type", "PodScheduled", "status", "True"),
		}),
		"null claims": counts("resourceClaimStatuses", nil),
	} {
		t.Run(name, func(t *testing.T) {
			podJSON := func(status map[string]any) []byte {
				return encode(t, counts("apiVersion", "v1", "kind", "Pod",
					"metadata", counts("name", "p", "namespace", "default", "resourceVersion", "7"),
					"spec", counts("containers", []any{counts("name", "c", "image", "busybox")},
						"resourceClaims", []any{counts("name", "gpu", "resourceClaimName", "gpu-claim")}),
					"status", status))
			}
			old, js := podJSON(stored), podJSON(written)
			gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
			obj, was := kubeInternal(t, gvk, js), kubeInternal(t, gvk, old)
			pod.StatusStrategy.PrepareForUpdate(t.Context(), obj, was)
			v1, err := legacyscheme.Scheme.ConvertToVersion(obj, corev1.SchemeGroupVersion)
			if err != nil {
				t.Fatal(err)
			}
			want := withoutNulls(deepCopy(v1.(*corev1.Pod).Status))

			r := ours["/v1/pods"]
			got := withoutNulls(deepCopy(r.StatusWrite(ourObject(t, r, old), ourObject(t, r, js))["status"]))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("stored status (-kube +ours):\n%s", d)
			}
		})
	}
}

// withoutNulls is v, generic JSON, less its null fields (kube's typed
// encoder writes a zero time as null, where ours leaves it out).
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, f := range v {
			if f == nil {
				delete(v, k)
			} else {
				v[k] = withoutNulls(f)
			}
		}
	case []any:
		for i, f := range v {
			v[i] = withoutNulls(f)
		}
	}
	return v
}
