package kubevalidation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// update is one change to a valid object: set makes the stored object
// (nil leaves the manifest as it is), change makes the update from it;
// refused says whether kube refuses it.
type update struct {
	set, change func(obj map[string]any)
	refused     bool
	// uncreatable says set makes an object only a subresource's write
	// makes (a pod with ephemeral containers), which kube refuses on
	// create: it is not checked as created.
	uncreatable bool
}

var podUpdates = map[string]update{
	// The pull policy is set: kube defaults it from the image's tag.
	"image changed": {
		set:    func(o map[string]any) { container(spec(o))["imagePullPolicy"] = "IfNotPresent" },
		change: func(o map[string]any) { container(spec(o))["image"] = "busybox:1.37" },
	},
	"image emptied":     {change: func(o map[string]any) { container(spec(o))["image"] = " " }, refused: true},
	"image removed":     {change: func(o map[string]any) { delete(container(spec(o)), "image") }, refused: true},
	"container renamed": {change: func(o map[string]any) { container(spec(o))["name"] = "renamed" }, refused: true},
	"container added": {change: func(o map[string]any) {
		spec(o)["containers"] = append(list(spec(o), "containers"), map[string]any{"name": "added", "image": "busybox"})
	}, refused: true},
	"restartPolicy changed": {
		set:     func(o map[string]any) { spec(o)["restartPolicy"] = "Always" },
		change:  func(o map[string]any) { spec(o)["restartPolicy"] = "Never" },
		refused: true,
	},
	"deadline set": {change: func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 30 }},
	"deadline lowered": {
		set:    func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 30 },
		change: func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 10 },
	},
	"deadline raised": {
		set:     func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 30 },
		change:  func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 60 },
		refused: true,
	},
	"deadline removed": {
		set:     func(o map[string]any) { spec(o)["activeDeadlineSeconds"] = 30 },
		change:  func(o map[string]any) { delete(spec(o), "activeDeadlineSeconds") },
		refused: true,
	},
	"toleration added": {change: func(o map[string]any) {
		spec(o)["tolerations"] = append(list(spec(o), "tolerations"), map[string]any{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5})
	}},
	"tolerationSeconds changed": {
		set: func(o map[string]any) {
			spec(o)["tolerations"] = []any{map[string]any{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}}
		},
		change: func(o map[string]any) {
			spec(o)["tolerations"] = []any{map[string]any{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 9}}
		},
	},
	"toleration changed": {
		set: func(o map[string]any) {
			spec(o)["tolerations"] = []any{map[string]any{"key": "k", "operator": "Exists"}}
		},
		change: func(o map[string]any) {
			spec(o)["tolerations"] = []any{map[string]any{"key": "j", "operator": "Exists"}}
		},
		refused: true,
	},
	"scheduling gate added": {
		change:  func(o map[string]any) { spec(o)["schedulingGates"] = []any{map[string]any{"name": "example.com/wait"}} },
		refused: true,
	},
	"scheduling gate removed": {
		set:    func(o map[string]any) { spec(o)["schedulingGates"] = []any{map[string]any{"name": "example.com/wait"}} },
		change: func(o map[string]any) { delete(spec(o), "schedulingGates") },
	},
	"grace period from negative to 1": {
		set:    func(o map[string]any) { spec(o)["terminationGracePeriodSeconds"] = -1 },
		change: func(o map[string]any) { spec(o)["terminationGracePeriodSeconds"] = 1 },
	},
	"grace period changed": {change: func(o map[string]any) { spec(o)["terminationGracePeriodSeconds"] = 7 }, refused: true},
}

// loadBalancer makes a Service a LoadBalancer one of class (none if "").
func loadBalancer(class string) func(o map[string]any) {
	return func(o map[string]any) {
		spec(o)["type"] = "LoadBalancer"
		delete(spec(o), "loadBalancerClass")
		if class != "" {
			spec(o)["loadBalancerClass"] = class
		}
	}
}

// localHealthCheck makes a Service a LoadBalancer with a health check
// node port.
func localHealthCheck(port int) func(o map[string]any) {
	return func(o map[string]any) {
		spec(o)["type"] = "LoadBalancer"
		spec(o)["externalTrafficPolicy"] = "Local"
		spec(o)["healthCheckNodePort"] = port
	}
}

var serviceUpdates = map[string]update{
	"loadBalancerClass changed": {set: loadBalancer("a.example.com/lb"), change: loadBalancer("b.example.com/lb"), refused: true},
	"loadBalancerClass set":     {set: loadBalancer(""), change: loadBalancer("a.example.com/lb"), refused: true},
	"loadBalancerClass removed": {set: loadBalancer("a.example.com/lb"), change: loadBalancer(""), refused: true},
	"to LoadBalancer with a class": {set: clusterIPType, change: func(o map[string]any) {
		loadBalancer("a.example.com/lb")(o)
		spec(o)["externalTrafficPolicy"] = "Cluster"
	}},
	"healthCheckNodePort changed": {set: localHealthCheck(30100), change: localHealthCheck(30101), refused: true},
	"healthCheckNodePort dropped with Local": {set: localHealthCheck(30100), change: func(o map[string]any) {
		spec(o)["externalTrafficPolicy"] = "Cluster"
		delete(spec(o), "healthCheckNodePort")
	}},
}

var appsUpdates = map[string]update{
	"selector changed": {change: func(o map[string]any) {
		sel := at(o, "spec", "selector")
		sel["matchExpressions"] = append(list(sel, "matchExpressions"), map[string]any{"key": "not-there", "operator": "DoesNotExist"})
	}, refused: true},
	"template label added": {change: func(o map[string]any) { at(template(o), "metadata", "labels")["added"] = "x" }},
}

// templateGeneration is the annotation a v1 DaemonSet carries its
// spec.templateGeneration in, which kube's strategy sets on every update.
const templateGeneration = "deprecated.daemonset.template.generation"

var daemonSetUpdates = map[string]update{
	"template changed": {change: func(o map[string]any) { container(at(template(o), "spec"))["image"] = "busybox:1.37" }},
	"templateGeneration set": {
		set:    func(o map[string]any) { at(o, "metadata", "annotations")[templateGeneration] = "3" },
		change: func(o map[string]any) { at(o, "metadata", "annotations")[templateGeneration] = "1" },
	},
	"templateGeneration set with the template": {
		set: func(o map[string]any) { at(o, "metadata", "annotations")[templateGeneration] = "3" },
		change: func(o map[string]any) {
			at(o, "metadata", "annotations")[templateGeneration] = "9"
			at(template(o), "metadata", "labels")["added"] = "x"
		},
	},
	"updateStrategy OnDelete": {change: setSpec("updateStrategy", map[string]any{"type": "OnDelete"})},
	"maxSurge with maxUnavailable": {
		change:  setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": 1}}),
		refused: true,
	},
}

// claimTemplate is a StatefulSet's claim template of the given size.
func claimTemplate(name, size string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{
		"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": size}},
	}}
}

// resizeClaims gives a StatefulSet's claim templates (one named data if it
// has none) the size: their names stay, as the template's mounts use them.
func resizeClaims(size string) func(o map[string]any) {
	return func(o map[string]any) {
		claims := list(spec(o), "volumeClaimTemplates")
		if len(claims) == 0 {
			spec(o)["volumeClaimTemplates"] = []any{claimTemplate("data", size)}
			return
		}
		for i, c := range claims {
			name := c.(map[string]any)["metadata"].(map[string]any)["name"].(string)
			claims[i] = claimTemplate(name, size)
		}
	}
}

var statefulSetUpdates = map[string]update{
	"claim template resized": {
		set:     resizeClaims("1Gi"),
		change:  resizeClaims("2Gi"),
		refused: true,
	},
	"claim template added": {
		change: func(o map[string]any) {
			spec(o)["volumeClaimTemplates"] = append(list(spec(o), "volumeClaimTemplates"), claimTemplate("added", "1Gi"))
		},
		refused: true,
	},
	"replicas changed":    {change: func(o map[string]any) { spec(o)["replicas"] = 7 }},
	"serviceName changed": {change: func(o map[string]any) { spec(o)["serviceName"] = "other" }, refused: true},
	"podManagementPolicy changed": {
		set:     func(o map[string]any) { spec(o)["podManagementPolicy"] = "OrderedReady" },
		change:  func(o map[string]any) { spec(o)["podManagementPolicy"] = "Parallel" },
		refused: true,
	},
}

// jobCreated makes a Job as kube's job strategy makes it on create (a
// generated selector and the labels it selects), which its update
// validation expects.
func jobCreated(o map[string]any) {
	const uid = "6c1f9b3e-0000-4000-8000-000000000001"
	name := at(o, "metadata")["name"].(string)
	at(o, "metadata")["uid"] = uid
	spec(o)["selector"] = map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": uid}}
	labels := at(template(o), "metadata", "labels")
	for k, v := range map[string]string{"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid, "batch.kubernetes.io/job-name": name, "job-name": name} {
		labels[k] = v
	}
}

func suspend(o map[string]any) { spec(o)["suspend"] = true }

// setCompletions sets a Job's completions, and its maxFailedIndexes, if
// any, to them: kube refuses more failed indexes than completions.
func setCompletions(o map[string]any, n int) {
	spec(o)["completions"] = n
	if _, ok := spec(o)["maxFailedIndexes"]; ok {
		spec(o)["maxFailedIndexes"] = n
	}
}

// nonIndexed makes a Job NonIndexed with completions, without the
// per-index fields kube allows on Indexed Jobs only.
func nonIndexed(completions int) func(o map[string]any) {
	return func(o map[string]any) {
		spec(o)["completionMode"] = "NonIndexed"
		spec(o)["completions"] = completions
		delete(spec(o), "backoffLimitPerIndex")
		delete(spec(o), "maxFailedIndexes")
	}
}

func indexed(completions int) func(o map[string]any) {
	return func(o map[string]any) {
		spec(o)["completionMode"] = "Indexed"
		setCompletions(o, completions)
		spec(o)["parallelism"] = completions
	}
}

var jobUpdates = map[string]update{
	// Both set: kube defaults completions only with parallelism.
	"parallelism changed": {
		set:    func(o map[string]any) { setCompletions(o, 3); spec(o)["parallelism"] = 1 },
		change: func(o map[string]any) { spec(o)["parallelism"] = 2 },
	},
	"completions changed": {
		set:     nonIndexed(3),
		change:  func(o map[string]any) { spec(o)["completions"] = 4 },
		refused: true,
	},
	"completions with parallelism, Indexed": {set: indexed(3), change: indexed(5)},
	"completions alone, Indexed": {
		set:     indexed(3),
		change:  func(o map[string]any) { spec(o)["completions"] = 5 },
		refused: true,
	},
	"completionMode changed": {
		set:     nonIndexed(2),
		change:  func(o map[string]any) { spec(o)["completionMode"] = "Indexed" },
		refused: true,
	},
	"backoffLimitPerIndex set": {
		set: func(o map[string]any) {
			indexed(3)(o)
			delete(spec(o), "backoffLimitPerIndex")
			delete(spec(o), "maxFailedIndexes")
		},
		change:  func(o map[string]any) { spec(o)["backoffLimitPerIndex"] = 1 },
		refused: true,
	},
	"managedBy set": {change: func(o map[string]any) { spec(o)["managedBy"] = "example.com/queue" }, refused: true},
	"podFailurePolicy set": {
		change: func(o map[string]any) {
			spec(o)["podFailurePolicy"] = map[string]any{"rules": []any{
				map[string]any{"action": "FailJob", "onExitCodes": map[string]any{"containerName": "c", "operator": "In", "values": []any{1, 42}}},
				map[string]any{"action": "Ignore", "onPodConditions": []any{map[string]any{"type": "DisruptionTarget"}}},
			}}
		},
		refused: true,
	},
	"podFailurePolicy removed": {
		set: func(o map[string]any) {
			spec(o)["podFailurePolicy"] = map[string]any{"rules": []any{map[string]any{"action": "Count", "onPodConditions": []any{map[string]any{"type": "DisruptionTarget"}}}}}
			at(template(o), "spec")["restartPolicy"] = "Never"
		},
		change:  func(o map[string]any) { delete(spec(o), "podFailurePolicy") },
		refused: true,
	},
	"successPolicy set": {
		set: indexed(3),
		change: func(o map[string]any) {
			spec(o)["successPolicy"] = map[string]any{"rules": []any{map[string]any{"succeededIndexes": "0-1", "succeededCount": 1}, map[string]any{"succeededCount": 2}}}
		},
		refused: true,
	},
	"suspend toggled": {change: func(o map[string]any) { spec(o)["suspend"] = true }},
	"suspended, resources changed": {
		set: suspend,
		change: func(o map[string]any) {
			container(at(template(o), "spec"))["resources"] = map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "3"}}
		},
	},
	"suspended, scheduling changed": {
		set: func(o map[string]any) {
			suspend(o)
			at(template(o), "spec")["affinity"] = map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}}},
			}}}
		},
		change: func(o map[string]any) {
			ps := at(template(o), "spec")
			ps["nodeSelector"] = map[string]any{"zone": "b"}
			ps["tolerations"] = []any{map[string]any{"key": "k", "operator": "Exists"}}
			ps["schedulingGates"] = []any{map[string]any{"name": "example.com/queue"}}
			delete(ps, "affinity")
			at(template(o), "metadata", "annotations")["added"] = "x"
		},
	},
	"suspended, pod anti-affinity removed": {
		set: func(o map[string]any) {
			suspend(o)
			at(template(o), "spec")["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
				map[string]any{"weight": 1, "podAffinityTerm": map[string]any{"topologyKey": "zone"}},
			}}}
		},
		change:  func(o map[string]any) { delete(at(template(o), "spec"), "affinity") },
		refused: true,
	},
	"suspended, image changed": {
		set:     suspend,
		change:  func(o map[string]any) { container(at(template(o), "spec"))["image"] = "busybox:1.37" },
		refused: true,
	},
	"suspended after it started, nodeSelector changed": {
		set: func(o map[string]any) {
			suspend(o)
			o["status"] = map[string]any{"startTime": "2026-01-01T00:00:00Z"}
		},
		change:  func(o map[string]any) { at(template(o), "spec")["nodeSelector"] = map[string]any{"zone": "b"} },
		refused: true,
	},
	"suspended since it started, nodeSelector changed": {
		set: func(o map[string]any) {
			suspend(o)
			o["status"] = map[string]any{"startTime": "2026-01-01T00:00:00Z", "conditions": []any{
				map[string]any{"type": "Suspended", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"},
			}}
		},
		change: func(o map[string]any) { at(template(o), "spec")["nodeSelector"] = map[string]any{"zone": "b"} },
	},
	"suspended with active pods, nodeSelector changed": {
		set: func(o map[string]any) {
			suspend(o)
			o["status"] = map[string]any{"active": 1}
		},
		change:  func(o map[string]any) { at(template(o), "spec")["nodeSelector"] = map[string]any{"zone": "b"} },
		refused: true,
	},
	"suspended, generated label removed": {
		set:    func(o map[string]any) { spec(o)["suspend"] = true },
		change: func(o map[string]any) { delete(at(template(o), "metadata", "labels"), "job-name") },
	},
	"template changed": {change: func(o map[string]any) { container(at(template(o), "spec"))["image"] = "busybox:1.37" }, refused: true},
	"selector changed": {change: func(o map[string]any) {
		sel := at(o, "spec", "selector")
		sel["matchExpressions"] = []any{map[string]any{"key": "not-there", "operator": "DoesNotExist"}}
	}, refused: true},
}

var cronJobUpdates = map[string]update{
	"schedule changed":       {change: setSpec("schedule", "*/5 * * * *")},
	"schedule with TZ":       {change: setSpec("schedule", "TZ=UTC 0 * * * *"), refused: true},
	"timeZone set":           {change: setSpec("timeZone", "Europe/Paris")},
	"timeZone set, unknown":  {change: setSpec("timeZone", "Mars/Olympus"), refused: true},
	"jobTemplate changed":    {change: func(o map[string]any) { at(o, "spec", "jobTemplate", "spec")["backoffLimit"] = 2 }},
	"jobTemplate made wrong": {change: func(o map[string]any) { at(o, "spec", "jobTemplate", "spec")["backoffLimit"] = -2 }, refused: true},
}

func setImmutable(o map[string]any) { o["immutable"] = true }

// dataUpdates are changes to a ConfigMap or a Secret.
var dataUpdates = map[string]update{
	"data changed":             {change: func(o map[string]any) { at(o, "data")["added"] = "eA==" }},
	"immutable, label changed": {set: setImmutable, change: func(o map[string]any) { at(o, "metadata", "labels")["added"] = "x" }},
	"immutable, data changed": {set: setImmutable, change: func(o map[string]any) {
		at(o, "data")["added"] = "eA=="
	}, refused: true},
	"immutable unset": {set: setImmutable, change: func(o map[string]any) { o["immutable"] = false }, refused: true},
	"immutable removed, data changed": {set: setImmutable, change: func(o map[string]any) {
		delete(o, "immutable")
		at(o, "data")["added"] = "eA=="
	}, refused: true},
}

var configMapUpdates = map[string]update{
	"immutable, binaryData changed": {set: setImmutable, change: func(o map[string]any) {
		at(o, "binaryData")["added"] = "eA=="
	}, refused: true},
}

var secretUpdates = map[string]update{
	"type changed": {change: func(o map[string]any) { o["type"] = "example.com/other" }, refused: true},
}

func storage(o map[string]any, q string) { at(o, "spec", "resources", "requests")["storage"] = q }

// bound sets a claim bound, with its capacity.
func bound(capacity string) func(o map[string]any) {
	return func(o map[string]any) {
		storage(o, "2Gi")
		o["status"] = map[string]any{"phase": "Bound", "capacity": map[string]any{"storage": capacity}}
	}
}

var claimUpdates = map[string]update{
	"storage raised":                        {change: func(o map[string]any) { storage(o, "100Gi") }, refused: true},
	"storage raised, bound":                 {set: bound("2Gi"), change: func(o map[string]any) { storage(o, "3Gi") }},
	"storage lowered to capacity, bound":    {set: bound("1Gi"), change: func(o map[string]any) { storage(o, "1Gi") }, refused: true},
	"storage lowered above capacity, bound": {set: bound("512Mi"), change: func(o map[string]any) { storage(o, "1Gi") }},
	"volumeName set":                        {change: func(o map[string]any) { spec(o)["volumeName"] = "pv-b" }},
	"volumeName changed": {
		set:     func(o map[string]any) { spec(o)["volumeName"] = "pv-a" },
		change:  func(o map[string]any) { spec(o)["volumeName"] = "pv-b" },
		refused: true,
	},
	"storageClassName set": {
		set:    func(o map[string]any) { delete(spec(o), "storageClassName") },
		change: func(o map[string]any) { spec(o)["storageClassName"] = "fast" },
	},
	"storageClassName from the annotation": {
		set: func(o map[string]any) {
			delete(spec(o), "storageClassName")
			at(o, "metadata", "annotations")["volume.beta.kubernetes.io/storage-class"] = "fast"
		},
		change: func(o map[string]any) { spec(o)["storageClassName"] = "fast" },
	},
	"storageClassName changed": {
		set:     func(o map[string]any) { spec(o)["storageClassName"] = "slow" },
		change:  func(o map[string]any) { spec(o)["storageClassName"] = "fast" },
		refused: true,
	},
	"volumeMode changed": {
		set:     func(o map[string]any) { spec(o)["volumeMode"] = "Filesystem" },
		change:  func(o map[string]any) { spec(o)["volumeMode"] = "Block" },
		refused: true,
	},
	"accessModes changed": {change: func(o map[string]any) { spec(o)["accessModes"] = []any{"ReadWriteMany"} }, refused: true},
	"volumeAttributesClassName changed, bound": {
		set:    func(o map[string]any) { bound("2Gi")(o); spec(o)["volumeAttributesClassName"] = "gold" },
		change: func(o map[string]any) { spec(o)["volumeAttributesClassName"] = "silver" },
	},
	"volumeAttributesClassName emptied, applied": {
		set: func(o map[string]any) {
			bound("2Gi")(o)
			spec(o)["volumeAttributesClassName"] = "gold"
			at(o, "status")["currentVolumeAttributesClassName"] = "gold"
		},
		change:  func(o map[string]any) { spec(o)["volumeAttributesClassName"] = "" },
		refused: true,
	},
	"volumeAttributesClassName removed, applied": {
		set: func(o map[string]any) {
			bound("2Gi")(o)
			spec(o)["volumeAttributesClassName"] = "gold"
			at(o, "status")["currentVolumeAttributesClassName"] = "gold"
		},
		change:  func(o map[string]any) { delete(spec(o), "volumeAttributesClassName") },
		refused: true,
	},
}

// invalidManifests are the corpus's manifests kube refuses as written,
// which no update starts from.
var invalidManifests = []string{
	// A volume mount of a token volume the manifest does not declare.
	"kubernetes-doc-yaml/admin/high-availability/kube-scheduler.yaml#Pod",
}

// TestUpdates changes each real manifest of a kind with update rules in
// each way that applies to it, and validates the update both ways: kube's
// strategy's PrepareForUpdate and ValidateUpdate, our Validate and
// ValidateUpdate.
func TestUpdates(t *testing.T) {
	byKind := map[string][]map[string]update{
		"Pod":         {podUpdates},
		"Deployment":  {appsUpdates},
		"ReplicaSet":  {appsUpdates},
		"DaemonSet":   {appsUpdates, daemonSetUpdates},
		"StatefulSet": {appsUpdates, statefulSetUpdates},
		"Job":         {jobUpdates},
		"CronJob":     {cronJobUpdates},
		"ConfigMap":   {dataUpdates, configMapUpdates},
		"Secret":      {dataUpdates, secretUpdates},

		"PersistentVolumeClaim": {claimUpdates},
		"Service":               {serviceUpdates},
	}
	n, refused := 0, 0
	var invalid []string
	for _, m := range readManifests(t) {
		created := deepCopy(m.obj).(map[string]any)
		if m.gvk.Kind == "Job" {
			jobCreated(created)
		}
		if _, ok := byKind[m.gvk.Kind]; ok && len(kubeCauses(t, m.gvk, encode(t, created))) > 0 {
			invalid = append(invalid, m.name)
			continue
		}
		for _, updates := range byKind[m.gvk.Kind] {
			for name, u := range updates {
				n++
				if checkUpdate(t, m.name+"/"+name, m.gvk, m.obj, u) {
					refused++
				}
			}
		}
	}
	if diff := cmp.Diff(invalidManifests, invalid); diff != "" {
		t.Errorf("manifests kube refuses as written (-want +got):\n%s", diff)
	}
	if n < 450 || refused < 240 {
		t.Fatalf("%d updates, %d refused; want at least 450 and 240", n, refused)
	}
}

// checkUpdate applies u to a copy of obj and validates the update both
// ways in a subtest; it says whether kube refused it.
func checkUpdate(t *testing.T, name string, gvk schema.GroupVersionKind, obj map[string]any, u update) (refused bool) {
	return checkUpdateBy(t, name, gvk, obj, u, kubeUpdateCauses, ourUpdateCauses)
}

// updateCauses are the causes of an update from old to js.
type updateCauses func(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause

// checkUpdateBy is checkUpdate with kube's and our validation of updates
// given.
func checkUpdateBy(t *testing.T, name string, gvk schema.GroupVersionKind, obj map[string]any, u update, kubeUpdate, ourUpdate updateCauses) (refused bool) {
	old := deepCopy(obj).(map[string]any)
	if gvk.Kind == "Job" {
		jobCreated(old)
	}
	if u.set != nil {
		u.set(old)
	}
	updated := deepCopy(old).(map[string]any)
	u.change(updated)
	t.Run(name, func(t *testing.T) {
		js, was := encode(t, updated), encode(t, old)
		if kube := kubeCauses(t, gvk, was); len(kube) > 0 && !u.uncreatable {
			t.Fatalf("the update's set makes an object kube refuses: %v", kube)
		}
		refused = sameCauses(t, kubeUpdate(t, gvk, js, was), ourUpdate(t, gvk, js, was), u.refused, was, js)
	})
	return refused
}

// sameCauses fails unless kube's and our causes of an update from old to
// js are the same and kube's refusal is the one expected; it says whether
// kube refused it.
func sameCauses(t *testing.T, kube, ours []cause, wantRefused bool, old, js []byte) (refused bool) {
	t.Helper()
	if diff := cmp.Diff(kube, ours); diff != "" {
		t.Errorf("causes (-kube +ours):\n%s\nold: %s\nnew: %s", diff, old, js)
	}
	if wantRefused != (len(kube) > 0) {
		t.Errorf("kube's causes %v; want some: %v", kube, wantRefused)
	}
	return len(kube) > 0
}

// TestMetadataUpdatesOfInvalidObjects stores each real manifest broken in
// each way TestMutations breaks it (as an object stored before a rule
// existed, or through etcd, would be) and adds a label to it: kube
// refuses the update but where its strategy tolerates what was stored
// invalid (a StatefulSet's pod template, a Service's source ranges, ...),
// and ours must refuse it with the same causes. TestNetworking does the
// same with networkingObjects.
func TestMetadataUpdatesOfInvalidObjects(t *testing.T) {
	n, accepted := 0, 0
	for _, m := range readManifests(t) {
		if !createValidated(m.gvk) {
			continue
		}
		eachMutation(m, func(name string, mutate func(map[string]any)) {
			old := deepCopy(m.obj).(map[string]any)
			if m.gvk.Kind == "Job" {
				jobCreated(old)
			}
			mutate(old)
			n++
			if labelAddedToInvalid(t, m.name+"/"+name, m.gvk, old) {
				accepted++
			}
		})
	}
	if n < 2400 || accepted < 280 {
		t.Fatalf("%d updates of invalid objects, %d accepted; want at least 2400 and 280", n, accepted)
	}
}

// labelAddedToInvalid validates, both ways in a subtest, the update that
// adds a label to old, stored as it is; it says whether kube accepted it.
func labelAddedToInvalid(t *testing.T, name string, gvk schema.GroupVersionKind, old map[string]any) (accepted bool) {
	old = deepCopy(old).(map[string]any)
	at(old, "metadata")["resourceVersion"] = "7"
	updated := deepCopy(old).(map[string]any)
	at(updated, "metadata", "labels")["added"] = "x"
	t.Run(name+"/label added", func(t *testing.T) {
		js, was := encode(t, updated), encode(t, old)
		kube := kubeUpdateCauses(t, gvk, js, was)
		if diff := cmp.Diff(kube, ourUpdateCauses(t, gvk, js, was)); diff != "" {
			t.Errorf("causes (-kube +ours):\n%s\nold: %s", diff, was)
		}
		accepted = len(kube) == 0
	})
	return accepted
}
