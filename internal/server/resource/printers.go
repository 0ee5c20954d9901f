package resource

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	labelsel "github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/kubespec"
)

// printed are the Table columns of the built-in kinds kube's printers
// cover (pkg/printers/internalversion, AddHandlers), after the name, by
// group/version/plural; the columns of priority 1 are those kubectl shows
// with -o wide. Kube fills every column on the server. Descriptions are
// the OpenAPI ones of the fields, as kube takes them from SwaggerDoc.
func printed() map[GVR][]Column {
	return map[GVR][]Column{
		{"", "v1", "pods"}:                   podColumns(),
		{"apps", "v1", "deployments"}:        deploymentColumns(),
		{"apps", "v1", "replicasets"}:        replicaSetColumns("apps.v1.ReplicaSetSpec", "apps.v1.ReplicaSetStatus", structuredSelector("<error>", "<none>")),
		{"", "v1", "replicationcontrollers"}: replicaSetColumns("core.v1.ReplicationControllerSpec", "core.v1.ReplicationControllerStatus", mapSelector("spec", "selector")),
		{"apps", "v1", "statefulsets"}: {
			column("Ready", "string", "", "Number of the pod with ready state", func(o api.Object) any {
				return ratio(Path(o, "status", "readyReplicas"), Path(o, "spec", "replicas"))
			}),
			ageColumn(),
			wide(containerNames(podTemplate...)), wide(containerImages(podTemplate...)),
		},
		{"apps", "v1", "daemonsets"}: {
			column("Desired", "integer", "", doc("apps.v1.DaemonSetStatus", "desiredNumberScheduled"), intCell("status", "desiredNumberScheduled")),
			column("Current", "integer", "", doc("apps.v1.DaemonSetStatus", "currentNumberScheduled"), intCell("status", "currentNumberScheduled")),
			column("Ready", "integer", "", doc("apps.v1.DaemonSetStatus", "numberReady"), intCell("status", "numberReady")),
			column("Up-to-date", "integer", "", doc("apps.v1.DaemonSetStatus", "updatedNumberScheduled"), intCell("status", "updatedNumberScheduled")),
			column("Available", "integer", "", doc("apps.v1.DaemonSetStatus", "numberAvailable"), intCell("status", "numberAvailable")),
			column("Node Selector", "string", "", doc("core.v1.PodSpec", "nodeSelector"), mapSelector("spec", "template", "spec", "nodeSelector")),
			ageColumn(),
			wide(containerNames(podTemplate...)), wide(containerImages(podTemplate...)),
			wide(column("Selector", "string", "", doc("apps.v1.DaemonSetSpec", "selector"), structuredSelector("<error>", "<none>"))),
		},
		{"", "v1", "services"}: serviceColumns(),
		{"batch", "v1", "jobs"}: {
			column("Status", "string", "", "Status of the job.", jobStatus),
			column("Completions", "string", "", doc("batch.v1.JobStatus", "succeeded"), jobCompletions),
			column("Duration", "string", "", "Time required to complete the job.", jobDuration),
			ageColumn(),
			wide(containerNames(podTemplate...)), wide(containerImages(podTemplate...)),
			wide(column("Selector", "string", "", doc("batch.v1.JobSpec", "selector"), structuredSelector("<error>", "<none>"))),
		},
		{"batch", "v1", "cronjobs"}: {
			column("Schedule", "string", "", doc("batch.v1.CronJobSpec", "schedule"), stringCell("spec", "schedule")),
			column("Timezone", "string", "", doc("batch.v1.CronJobSpec", "timeZone"), orNone("spec", "timeZone")),
			column("Suspend", "boolean", "", doc("batch.v1.CronJobSpec", "suspend"), func(o api.Object) any {
				switch Path(o, "spec", "suspend") {
				case true:
					return "True"
				case false:
					return "False"
				}
				return "<unset>"
			}),
			column("Active", "integer", "", doc("batch.v1.CronJobStatus", "active"), func(o api.Object) any {
				l, _ := Path(o, "status", "active").([]any)
				return len(l)
			}),
			column("Last Schedule", "string", "", doc("batch.v1.CronJobStatus", "lastScheduleTime"), func(o api.Object) any {
				if s := str(Path(o, "status", "lastScheduleTime")); s != "" {
					return age(s)
				}
				return "<none>"
			}),
			ageColumn(),
			wide(containerNames("spec", "jobTemplate", "spec", "template", "spec")),
			wide(containerImages("spec", "jobTemplate", "spec", "template", "spec")),
			wide(column("Selector", "string", "", doc("batch.v1.JobSpec", "selector"), structuredSelector("<error>", "<none>", "spec", "jobTemplate", "spec", "selector"))),
		},
		{"", "v1", "persistentvolumeclaims"}: {
			column("Status", "string", "", doc("core.v1.PersistentVolumeClaimStatus", "phase"), terminatingOr("status", "phase")),
			column("Volume", "string", "", doc("core.v1.PersistentVolumeClaimSpec", "volumeName"), stringCell("spec", "volumeName")),
			column("Capacity", "string", "", doc("core.v1.PersistentVolumeClaimStatus", "capacity"), boundOnly(storage("status", "capacity"))),
			column("Access Modes", "string", "", doc("core.v1.PersistentVolumeClaimStatus", "accessModes"), boundOnly(func(o api.Object) any { return accessModes(o, "status") })),
			column("StorageClass", "string", "", "StorageClass of the pvc", storageClass),
			column("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pvc", orUnset("spec", "volumeAttributesClassName")),
			ageColumn(),
			wide(column("VolumeMode", "string", "", doc("core.v1.PersistentVolumeClaimSpec", "volumeMode"), orUnset("spec", "volumeMode"))),
		},
		{"", "v1", "endpoints"}: {
			column("Endpoints", "string", "", doc("core.v1.Endpoints", "subsets"), endpoints),
			ageColumn(),
		},
		{"networking.k8s.io", "v1", "networkpolicies"}: {
			column("Pod-Selector", "string", "", doc("networking.v1.NetworkPolicySpec", "podSelector"), structuredSelector("<error>", "<none>", "spec", "podSelector")),
			ageColumn(),
		},
		{"storage.k8s.io", "v1", "storageclasses"}: {
			column("Provisioner", "string", "", doc("storage.v1.StorageClass", "provisioner"), stringCell("provisioner")),
			column("ReclaimPolicy", "string", "", doc("storage.v1.StorageClass", "reclaimPolicy"), orDefault("Delete", "reclaimPolicy")),
			column("VolumeBindingMode", "string", "", doc("storage.v1.StorageClass", "volumeBindingMode"), orDefault("Immediate", "volumeBindingMode")),
			column("AllowVolumeExpansion", "string", "", doc("storage.v1.StorageClass", "allowVolumeExpansion"), func(o api.Object) any {
				return o["allowVolumeExpansion"] == true
			}),
			ageColumn(),
		},
		{"scheduling.k8s.io", "v1", "priorityclasses"}: {
			column("Value", "integer", "", doc("scheduling.v1.PriorityClass", "value"), intCell("value")),
			column("Global-Default", "boolean", "", doc("scheduling.v1.PriorityClass", "globalDefault"), func(o api.Object) any {
				return o["globalDefault"] == true
			}),
			ageColumn(),
			column("PreemptionPolicy", "string", "", doc("scheduling.v1.PriorityClass", "preemptionPolicy"), stringCell("preemptionPolicy")),
		},
		{"policy", "v1", "poddisruptionbudgets"}: {
			column("Min Available", "string", "", "The minimum number of pods that must be available.", intOrString("minAvailable")),
			column("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", intOrString("maxUnavailable")),
			column("Allowed Disruptions", "integer", "", "Calculated number of pods that may be disrupted at this time.", intCell("status", "disruptionsAllowed")),
			ageColumn(),
		},
		// kube describes the handler with ObjectMeta's doc of a field it has not: "".
		{"node.k8s.io", "v1", "runtimeclasses"}: {column("Handler", "string", "", "", stringCell("handler")), ageColumn()},
		{"", "v1", "persistentvolumes"}: {
			column("Capacity", "string", "", doc("core.v1.PersistentVolumeSpec", "capacity"), storage("spec", "capacity")),
			column("Access Modes", "string", "", doc("core.v1.PersistentVolumeSpec", "accessModes"), func(o api.Object) any { return accessModes(o, "spec") }),
			column("Reclaim Policy", "string", "", doc("core.v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy"), stringCell("spec", "persistentVolumeReclaimPolicy")),
			column("Status", "string", "", doc("core.v1.PersistentVolumeStatus", "phase"), terminatingOr("status", "phase")),
			column("Claim", "string", "", doc("core.v1.PersistentVolumeSpec", "claimRef"), func(o api.Object) any {
				ref := asMap(Path(o, "spec", "claimRef"))
				if ref == nil {
					return ""
				}
				return str(ref["namespace"]) + "/" + str(ref["name"])
			}),
			column("StorageClass", "string", "", "StorageClass of the pv", storageClass),
			column("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pv", orUnset("spec", "volumeAttributesClassName")),
			column("Reason", "string", "", doc("core.v1.PersistentVolumeStatus", "reason"), stringCell("status", "reason")),
			ageColumn(),
			wide(column("VolumeMode", "string", "", doc("core.v1.PersistentVolumeSpec", "volumeMode"), orUnset("spec", "volumeMode"))),
		},
		{"", "v1", "podtemplates"}: {
			containerNames("template", "spec"), containerImages("template", "spec"),
			column("Pod Labels", "string", "", "The labels for the pod template.", mapSelector("template", "metadata", "labels")),
		},
		{"networking.k8s.io", "v1", "ingresses"}: {
			column("Class", "string", "", "The name of the IngressClass resource that should be used for additional configuration", orNone("spec", "ingressClassName")),
			column("Hosts", "string", "", "Hosts that incoming requests are matched against before the ingress rule", ingressHosts),
			column("Address", "string", "", "Address is a list containing ingress points for the load-balancer", func(o api.Object) any {
				return strings.Join(loadBalancerIngress(o), ",")
			}),
			column("Ports", "string", "", "Ports of TLS configurations that open", func(o api.Object) any {
				if tls, _ := Path(o, "spec", "tls").([]any); len(tls) > 0 {
					return "80, 443"
				}
				return "80"
			}),
			ageColumn(),
		},
		{"discovery.k8s.io", "v1", "endpointslices"}: {
			column("AddressType", "string", "", doc("discovery.v1.EndpointSlice", "addressType"), stringCell("addressType")),
			column("Ports", "string", "", doc("discovery.v1.EndpointSlice", "ports"), slicePorts),
			column("Endpoints", "string", "", doc("discovery.v1.EndpointSlice", "endpoints"), sliceEndpoints),
			ageColumn(),
		},
		{"apps", "v1", "controllerrevisions"}: {
			column("Controller", "string", "", "Controller of the object", revisionController),
			column("Revision", "string", "", doc("apps.v1.ControllerRevision", "revision"), intCell("revision")),
			ageColumn(),
		},
		{"storage.k8s.io", "v1", "volumeattributesclasses"}: {
			column("DriverName", "string", "", doc("storage.v1.VolumeAttributesClass", "driverName"), stringCell("driverName")),
			ageColumn(),
		},
		{"storage.k8s.io", "v1", "csinodes"}: {
			column("Drivers", "integer", "", "Drivers indicates the number of CSI drivers registered on the node", func(o api.Object) any {
				l, _ := Path(o, "spec", "drivers").([]any)
				return len(l)
			}),
			ageColumn(),
		},
		{"storage.k8s.io", "v1", "volumeattachments"}: {
			column("Attacher", "string", "name", doc("storage.v1.VolumeAttachmentSpec", "attacher"), stringCell("spec", "attacher")),
			column("PV", "string", "", doc("storage.v1.VolumeAttachmentSource", "persistentVolumeName"), stringCell("spec", "source", "persistentVolumeName")),
			column("Node", "string", "", doc("storage.v1.VolumeAttachmentSpec", "nodeName"), stringCell("spec", "nodeName")),
			column("Attached", "boolean", "", doc("storage.v1.VolumeAttachmentStatus", "attached"), func(o api.Object) any {
				return Path(o, "status", "attached") == true
			}),
			ageColumn(),
		},
		{"networking.k8s.io", "v1", "servicecidrs"}: {
			column("CIDRs", "string", "", doc("networking.v1.ServiceCIDRSpec", "cidrs"), func(o api.Object) any {
				return strings.Join(strings2(Path(o, "spec", "cidrs")), ",")
			}),
			ageColumn(),
		},
		{"networking.k8s.io", "v1", "ipaddresses"}: {
			// kube's rows have an age too, but its columns do not define it.
			column("ParentRef", "string", "", doc("networking.v1.IPAddressSpec", "parentRef"), ipAddressParent),
		},
		{"storage.k8s.io", "v1", "csidrivers"}: {
			column("AttachRequired", "boolean", "", doc("storage.v1.CSIDriverSpec", "attachRequired"), func(o api.Object) any {
				return Path(o, "spec", "attachRequired") != false
			}),
			column("PodInfoOnMount", "boolean", "", doc("storage.v1.CSIDriverSpec", "podInfoOnMount"), isTrue("spec", "podInfoOnMount")),
			column("StorageCapacity", "boolean", "", doc("storage.v1.CSIDriverSpec", "storageCapacity"), isTrue("spec", "storageCapacity")),
			column("TokenRequests", "string", "", doc("storage.v1.CSIDriverSpec", "tokenRequests"), func(o api.Object) any {
				// An empty list is unset once kube has stored it (protobuf).
				reqs, _ := Path(o, "spec", "tokenRequests").([]any)
				if len(reqs) == 0 {
					return "<unset>"
				}
				audiences := make([]string, len(reqs))
				for i, r := range reqs {
					audiences[i] = str(asMap(r)["audience"])
				}
				return strings.Join(audiences, ",")
			}),
			column("RequiresRepublish", "boolean", "", doc("storage.v1.CSIDriverSpec", "requiresRepublish"), isTrue("spec", "requiresRepublish")),
			column("Modes", "string", "", doc("storage.v1.CSIDriverSpec", "volumeLifecycleModes"), func(o api.Object) any {
				if modes := strings2(Path(o, "spec", "volumeLifecycleModes")); len(modes) > 0 {
					return strings.Join(modes, ",")
				}
				return "<none>"
			}),
			ageColumn(),
		},
		{"storage.k8s.io", "v1", "csistoragecapacities"}: {
			column("StorageClassName", "string", "", doc("storage.v1.CSIStorageCapacity", "storageClassName"), stringCell("storageClassName")),
			column("Capacity", "string", "", doc("storage.v1.CSIStorageCapacity", "capacity"), func(o api.Object) any {
				if q, ok := o["capacity"]; ok && q != nil {
					return quantity(q)
				}
				return "<unset>"
			}),
		},
		{"", "v1", "resourcequotas"}: {
			column("Request", "string", "", "Request represents a minimum amount of cpu/memory that a container may consume.", func(o api.Object) any { return quotaUsage(o, false) }),
			column("Limit", "string", "", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", func(o api.Object) any { return quotaUsage(o, true) }),
			ageColumn(),
		},
		{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas"}: {
			column("PriorityLevel", "string", "", doc("flowcontrol.v1.PriorityLevelConfigurationReference", "name"), stringCell("spec", "priorityLevelConfiguration", "name")),
			column("MatchingPrecedence", "string", "", doc("flowcontrol.v1.FlowSchemaSpec", "matchingPrecedence"), intCell("spec", "matchingPrecedence")),
			column("DistinguisherMethod", "string", "", doc("flowcontrol.v1.FlowSchemaSpec", "distinguisherMethod"), func(o api.Object) any {
				if m := asMap(Path(o, "spec", "distinguisherMethod")); m != nil {
					return str(m["type"])
				}
				return "<none>"
			}),
			ageColumn(),
			column("MissingPL", "string", "", "references a broken or non-existent PriorityLevelConfiguration", func(o api.Object) any {
				conds, _ := Path(o, "status", "conditions").([]any)
				for _, c := range conds {
					if cm := asMap(c); str(cm["type"]) == "Dangling" {
						return str(cm["status"])
					}
				}
				return "?"
			}),
		},
		{"flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"}: {
			column("Type", "string", "", doc("flowcontrol.v1.PriorityLevelConfigurationSpec", "type"), stringCell("spec", "type")),
			column("NominalConcurrencyShares", "string", "", doc("flowcontrol.v1.LimitedPriorityLevelConfiguration", "nominalConcurrencyShares"), limited("nominalConcurrencyShares")),
			column("Queues", "string", "", doc("flowcontrol.v1.QueuingConfiguration", "queues"), limited("limitResponse", "queuing", "queues")),
			column("HandSize", "string", "", doc("flowcontrol.v1.QueuingConfiguration", "handSize"), limited("limitResponse", "queuing", "handSize")),
			column("QueueLengthLimit", "string", "", doc("flowcontrol.v1.QueuingConfiguration", "queueLengthLimit"), limited("limitResponse", "queuing", "queueLengthLimit")),
			ageColumn(),
		},
		{"certificates.k8s.io", "v1", "clustertrustbundles"}: {
			column("SignerName", "string", "", doc("certificates.v1.ClusterTrustBundleSpec", "signerName"), orNone("spec", "signerName")),
		},
		{"certificates.k8s.io", "v1", "podcertificaterequests"}: {
			column("PodName", "string", "", doc("certificates.v1.PodCertificateRequestSpec", "podName"), stringCell("spec", "podName")),
			column("ServiceAccountName", "string", "", doc("certificates.v1.PodCertificateRequestSpec", "serviceAccountName"), stringCell("spec", "serviceAccountName")),
			column("NodeName", "string", "", doc("certificates.v1.PodCertificateRequestSpec", "nodeName"), stringCell("spec", "nodeName")),
			column("SignerName", "string", "", doc("certificates.v1.PodCertificateRequestSpec", "signerName"), stringCell("spec", "signerName")),
			column("State", "string", "", "Is the request Pending, Issued, Denied, or Failed?", func(o api.Object) any {
				state := "Pending"
				conds, _ := Path(o, "status", "conditions").([]any)
				for _, c := range conds {
					if t := str(asMap(c)["type"]); t == "Issued" || t == "Denied" || t == "Failed" {
						state = t
					}
				}
				return state
			}),
			column("UnverifiedUserAnnotations", "string", "", doc("certificates.v1.PodCertificateRequestSpec", "unverifiedUserAnnotations"), mapSelector("spec", "unverifiedUserAnnotations")),
		},
		{"resource.k8s.io", "v1", "deviceclasses"}:          {ageColumn()},
		{"resource.k8s.io", "v1", "resourceclaimtemplates"}: {ageColumn()},
		{"resource.k8s.io", "v1", "resourceclaims"}: {
			column("State", "string", "", "A summary of the current state (allocated, pending, reserved, etc.).", claimState),
			ageColumn(),
		},
		{"resource.k8s.io", "v1", "resourceslices"}: {
			column("Node", "string", "", doc("resource.v1.ResourceSliceSpec", "nodeName"), stringCell("spec", "nodeName")),
			column("Driver", "string", "", doc("resource.v1.ResourceSliceSpec", "driver"), stringCell("spec", "driver")),
			column("Pool", "string", "", doc("resource.v1.ResourcePool", "name"), stringCell("spec", "pool", "name")),
			ageColumn(),
		},
		{"resource.k8s.io", "v1", "devicetaintrules"}: {
			column("Key", "string", "", doc("resource.v1.DeviceTaint", "key"), stringCell("spec", "taint", "key")),
			column("Value", "string", "", doc("resource.v1.DeviceTaint", "value"), stringCell("spec", "taint", "value")),
			column("Effect", "string", "", doc("resource.v1.DeviceTaint", "effect"), stringCell("spec", "taint", "effect")),
			column("TimeAdded", "string", "", doc("resource.v1.DeviceTaint", "timeAdded"), func(o api.Object) any {
				if Path(o, "spec", "taint", "timeAdded") == nil {
					return ""
				}
				return since("spec", "taint", "timeAdded")(o)
			}),
			ageColumn(),
		},
		// kube describes these with v1beta1's fields, whose docs differ.
		{"certificates.k8s.io", "v1", "certificatesigningrequests"}: {
			ageColumn(),
			column("SignerName", "string", "", "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
				orNone("spec", "signerName")),
			// kube describes the requestor with the request's doc.
			column("Requestor", "string", "", "Base64-encoded PKCS#10 CSR data", stringCell("spec", "username")),
			column("RequestedDuration", "string", "", doc("certificates.v1.CertificateSigningRequestSpec", "expirationSeconds"), func(o api.Object) any {
				if s := Path(o, "spec", "expirationSeconds"); s != nil {
					return HumanDuration(time.Duration(integer(s)) * time.Second)
				}
				return "<none>"
			}),
			column("Condition", "string", "", "Conditions applied to the request, such as approval or denial.", csrCondition),
		},
		{"apiregistration.k8s.io", "v1", "apiservices"}: {
			column("Service", "string", "", "The reference to the service that hosts this API endpoint.", func(o api.Object) any {
				if svc := asMap(Path(o, "spec", "service")); svc != nil {
					return str(svc["namespace"]) + "/" + str(svc["name"])
				}
				return "Local"
			}),
			column("Available", "string", "", "Whether this service is available.", apiServiceAvailable),
			ageColumn(),
		},
		{"", "v1", "nodes"}: {
			column("Status", "string", "", "The status of the node", nodeStatus),
			column("Roles", "string", "", "The roles of the node", nodeRoles),
			ageColumn(),
			column("Version", "string", "", doc("core.v1.NodeSystemInfo", "kubeletVersion"), stringCell("status", "nodeInfo", "kubeletVersion")),
			wide(column("Internal-IP", "string", "", doc("core.v1.NodeStatus", "addresses"), nodeAddress("InternalIP"))),
			wide(column("External-IP", "string", "", doc("core.v1.NodeStatus", "addresses"), nodeAddress("ExternalIP"))),
			wide(column("OS-Image", "string", "", doc("core.v1.NodeSystemInfo", "osImage"), orUnknown("osImage"))),
			wide(column("Kernel-Version", "string", "", doc("core.v1.NodeSystemInfo", "kernelVersion"), func(o api.Object) any {
				k := orUnknown("kernelVersion")(o).(string)
				if arch := str(Path(o, "status", "nodeInfo", "architecture")); arch != "" {
					k += " (" + arch + ")"
				}
				return k
			})),
			wide(column("Container-Runtime", "string", "", doc("core.v1.NodeSystemInfo", "containerRuntimeVersion"), orUnknown("containerRuntimeVersion"))),
		},
	}
}

// hpaColumns are kube's columns of HorizontalPodAutoscalers, of either
// version (kube prints its internal one), with the version's targets.
func hpaColumns(targets func(api.Object) any) []Column {
	return []Column{
		column("Reference", "string", "", doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "scaleTargetRef"), func(o api.Object) any {
			return str(Path(o, "spec", "scaleTargetRef", "kind")) + "/" + str(Path(o, "spec", "scaleTargetRef", "name"))
		}),
		column("Targets", "string", "", doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"), targets),
		column("MinPods", "string", "", doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas"), func(o api.Object) any {
			if n := Path(o, "spec", "minReplicas"); n != nil {
				return strconv.FormatInt(integer(n), 10)
			}
			return "<unset>"
		}),
		column("MaxPods", "string", "", doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas"), intCell("spec", "maxReplicas")),
		column("Replicas", "string", "", doc("autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"), intCell("status", "currentReplicas")),
		ageColumn(),
	}
}

func percent(v any) string { return strconv.FormatInt(integer(v), 10) + "%" }

// maxMetrics is how many metrics kube's formatHPAMetrics lists.
const maxMetrics = 2

// hpaTargets is kube's formatHPAMetrics: each metric's current value (from
// the status metric at the same index) over its target, the first two,
// then how many more.
func hpaTargets(o api.Object) any {
	specs, _ := Path(o, "spec", "metrics").([]any)
	if len(specs) == 0 {
		return "<none>"
	}
	statuses, _ := Path(o, "status", "currentMetrics").([]any)
	list := make([]string, 0, maxMetrics)
	for i, spec := range specs[:min(len(specs), maxMetrics)] {
		var status map[string]any
		if i < len(statuses) {
			status = asMap(statuses[i])
		}
		list = append(list, hpaMetric(asMap(spec), status))
	}
	s := strings.Join(list, ", ")
	if len(specs) > maxMetrics {
		s += " + " + strconv.Itoa(len(specs)-maxMetrics) + " more..."
	}
	return s
}

// metricSources are the field of a metric spec or status holding each
// type's source.
var metricSources = map[string]string{
	"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource", "ContainerResource": "containerResource",
}

// hpaMetric is one metric of formatHPAMetrics: current/target, "(avg)"
// after an external or object metric's average value, the resource's name
// before a resource's, "<unknown>" for a current value the status lacks.
func hpaMetric(spec, status map[string]any) string {
	typ := str(spec["type"])
	field, ok := metricSources[typ]
	if !ok {
		return "<unknown type>"
	}
	src, cur := asMap(spec[field]), asMap(status[field])
	target, current := asMap(src["target"]), asMap(cur["current"])
	now := func(key string) string {
		if cur == nil {
			return "<unknown>"
		}
		return quantity(current[key])
	}
	switch typ {
	case "Pods":
		return now("averageValue") + "/" + quantity(target["averageValue"])
	case "External", "Object":
		if target["averageValue"] == nil {
			return now("value") + "/" + quantity(target["value"])
		}
		if current["averageValue"] == nil {
			cur = nil
		}
		return now("averageValue") + "/" + quantity(target["averageValue"]) + " (avg)"
	}
	name := str(src["name"]) + ": "
	if target["averageValue"] != nil {
		return name + now("averageValue") + "/" + quantity(target["averageValue"])
	}
	c, t := "<unknown>", "<auto>"
	if u := current["averageUtilization"]; u != nil {
		c = percent(u)
	}
	if u := target["averageUtilization"]; u != nil {
		t = percent(u)
	}
	return name + c + "/" + t
}

// quantity is a Quantity's text as stored, "<nil>" when absent, as kube
// prints a nil *Quantity.
func quantity(v any) string {
	switch q := v.(type) {
	case nil:
		return "<nil>"
	case string:
		return q
	}
	return fmt.Sprint(v)
}

func isTrue(path ...string) func(api.Object) any {
	return func(o api.Object) any { return Path(o, path...) == true }
}

// limited is the number at path in a PriorityLevelConfiguration's
// spec.limited, "<none>" when absent.
func limited(path ...string) func(api.Object) any {
	path = append([]string{"spec", "limited"}, path...)
	return func(o api.Object) any {
		if v := Path(o, path...); v != nil {
			return integer(v)
		}
		return "<none>"
	}
}

// quotaUsage is kube's printResourceQuota's Request (limits false) or
// Limit column: "name: used/hard" of each hard resource, sorted by name,
// those named limits.* in Limit.
func quotaUsage(o api.Object, limits bool) string {
	hard, _ := Path(o, "status", "hard").(map[string]any)
	used, _ := Path(o, "status", "used").(map[string]any)
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(hard)) {
		prefix, _, dotted := strings.Cut(name, ".")
		if (dotted && prefix == "limits") != limits {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		u := "0"
		if q, ok := used[name]; ok {
			u = quantity(q)
		}
		b.WriteString(name + ": " + u + "/" + quantity(hard[name]))
	}
	return b.String()
}

// claimState is kube's resourceClaimState: deleted, then pending, or
// allocated and reserved.
func claimState(o api.Object) any {
	var states []string
	deleted := o.Metadata()["deletionTimestamp"] != nil
	if deleted {
		states = append(states, "deleted")
	}
	switch {
	case Path(o, "status", "allocation") != nil:
		states = append(states, "allocated")
		if r, _ := Path(o, "status", "reservedFor").([]any); len(r) > 0 {
			states = append(states, "reserved")
		}
	case !deleted:
		states = append(states, "pending")
	}
	return strings.Join(states, ",")
}

// csrCondition is kube's extractCSRStatus: Denied, else Approved, else
// Pending, by the conditions present whatever their status, then Failed
// and Issued.
func csrCondition(o api.Object) any {
	has := map[string]bool{}
	conds, _ := Path(o, "status", "conditions").([]any)
	for _, c := range conds {
		has[str(asMap(c)["type"])] = true
	}
	status := "Pending"
	if has["Denied"] {
		status = "Denied"
	} else if has["Approved"] {
		status = "Approved"
	}
	if has["Failed"] {
		status += ",Failed"
	}
	if str(Path(o, "status", "certificate")) != "" {
		status += ",Issued"
	}
	return status
}

// apiServiceAvailable is the kube-aggregator's Available cell: the
// Available condition's status, with its reason unless True, else
// Unknown.
func apiServiceAvailable(o api.Object) any {
	conds, _ := Path(o, "status", "conditions").([]any)
	for _, c := range conds {
		cm := asMap(c)
		if str(cm["type"]) != "Available" {
			continue
		}
		status := str(cm["status"])
		if r := str(cm["reason"]); status != "True" && r != "" {
			return status + " (" + r + ")"
		}
		return status
	}
	return "Unknown"
}

// ownNamed is a resource whose columns place its name themselves, first,
// as kube's printers of a few kinds print it unlike the others.
func ownNamed(group, version, plural string, name func(api.Object) any, nameFormat string, cols ...Column) *Resource {
	def := NameDefinition
	def.Format = nameFormat
	return &Resource{
		Group: group, Version: version, Plural: plural,
		NameColumn: true,
		Columns:    append([]Column{{TableColumnDefinition: def, Cell: name}}, cols...),
	}
}

// ingressClasses are networking.k8s.io/v1 ingressclasses, printed as
// kube's printIngressClass, whose name cell marks the default class.
func ingressClasses() *Resource {
	name := func(o api.Object) any {
		if Path(o, "metadata", "annotations", "ingressclass.kubernetes.io/is-default-class") == "true" {
			return o.Name() + " (default)"
		}
		return o.Name()
	}
	return ownNamed("networking.k8s.io", "v1", "ingressclasses", name, "name",
		column("Controller", "string", "", "Controller that is responsible for handling this class", stringCell("spec", "controller")),
		column("Parameters", "string", "", "A reference to a resource with additional parameters", func(o api.Object) any {
			p := asMap(Path(o, "spec", "parameters"))
			if p == nil {
				return "<none>"
			}
			kind := str(p["kind"])
			if g, ok := p["apiGroup"].(string); ok {
				kind += "." + g
			}
			return kind + "/" + str(p["name"])
		}),
		ageColumn(),
	)
}

// storageVersionMigrations are storagemigration.k8s.io/v1
// storageversionmigrations, printed as kube's printStorageVersionMigration:
// a name column without the name format, no age.
func storageVersionMigrations() *Resource {
	return ownNamed("storagemigration.k8s.io", "v1", "storageversionmigrations", func(o api.Object) any { return o.Name() }, "",
		column("Resource", "string", "", "GroupResource to migrate", func(o api.Object) any {
			gr := str(Path(o, "spec", "resource", "resource"))
			if g := str(Path(o, "spec", "resource", "group")); g != "" {
				gr += "." + g
			}
			return gr
		}),
		column("Status", "string", "", "Status of the migration", func(o api.Object) any {
			status := "Unknown"
			conds, _ := Path(o, "status", "conditions").([]any)
			for _, c := range conds {
				cm := asMap(c)
				if t := str(cm["type"]); str(cm["status"]) == "True" && (t == "Running" || t == "Failed" || t == "Succeeded") {
					status = t
				}
			}
			return status
		}),
	)
}

// boundOnly is a claim's cell that kube prints once it is bound to a
// volume, "" before.
func boundOnly(cell func(api.Object) any) func(api.Object) any {
	return func(o api.Object) any {
		if str(Path(o, "spec", "volumeName")) == "" {
			return ""
		}
		return cell(o)
	}
}

// accessModes are the access modes in o's spec or status abbreviated, in
// kube's order, each once (GetAccessModesAsString).
func accessModes(o api.Object, in string) string {
	have := strings2(Path(o, in, "accessModes"))
	var out []string
	for _, m := range []struct{ mode, short string }{
		{"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"},
	} {
		if slices.Contains(have, m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

// storage is the storage quantity of the resource list at path, "0" (the
// zero Quantity, as kube prints it) when absent.
func storage(path ...string) func(api.Object) any {
	path = append(slices.Clone(path), "storage")
	return func(o api.Object) any {
		if q := str(Path(o, path...)); q != "" {
			return q
		}
		return "0"
	}
}

// storageClass is a volume's or claim's class: the beta annotation's,
// else spec.storageClassName (GetPersistentVolume(Claim)Class).
func storageClass(o api.Object) any {
	if class, ok := Path(o, "metadata", "annotations", "volume.beta.kubernetes.io/storage-class").(string); ok {
		return class
	}
	return str(Path(o, "spec", "storageClassName"))
}

// terminatingOr is "Terminating" for an object being deleted, else the
// string at path.
func terminatingOr(path ...string) func(api.Object) any {
	return func(o api.Object) any {
		if o.Metadata()["deletionTimestamp"] != nil {
			return "Terminating"
		}
		return str(Path(o, path...))
	}
}

// maxListed is how many items kube's printers list before "+ N more...".
const maxListed = 3

// ingressHosts is kube's formatHosts: the first three hosts of the rules,
// "*" when none has one, and, if rules follow the third, how many rules
// there are beyond three.
func ingressHosts(o api.Object) any {
	rules, _ := Path(o, "spec", "rules").([]any)
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == maxListed {
			more = true
			break
		}
		if h := str(asMap(r)["host"]); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	s := strings.Join(hosts, ",")
	if more {
		s += " + " + strconv.Itoa(len(rules)-maxListed) + " more..."
	}
	return s
}

// loadBalancerIngress are the IPs, else hostnames, of
// status.loadBalancer.ingress, sorted and unique.
func loadBalancerIngress(o api.Object) []string {
	ingress, _ := Path(o, "status", "loadBalancer", "ingress").([]any)
	var lb []string
	for _, in := range ingress {
		m := asMap(in)
		if ip := str(m["ip"]); ip != "" {
			lb = append(lb, ip)
		} else if h := str(m["hostname"]); h != "" {
			lb = append(lb, h)
		}
	}
	slices.Sort(lb)
	return slices.Compact(lb)
}

// listWithMore is kube's listWithMoreString: the first three of list, how
// many more, "<unset>" for none.
func listWithMore(list []string) string {
	if len(list) == 0 {
		return "<unset>"
	}
	s := strings.Join(list[:min(len(list), maxListed)], ",")
	if len(list) > maxListed {
		s += " + " + strconv.Itoa(len(list)-maxListed) + " more..."
	}
	return s
}

// slicePorts are an EndpointSlice's ports: the number, else the name, else
// "*" (formatDiscoveryPorts).
func slicePorts(o api.Object) any {
	ports, _ := o["ports"].([]any)
	list := make([]string, len(ports))
	for i, p := range ports {
		m := asMap(p)
		switch {
		case m["port"] != nil:
			list[i] = strconv.FormatInt(integer(m["port"]), 10)
		case m["name"] != nil:
			list[i] = str(m["name"])
		default:
			list[i] = "*"
		}
	}
	return listWithMore(list)
}

// sliceEndpoints are the addresses of an EndpointSlice's endpoints
// (formatDiscoveryEndpoints).
func sliceEndpoints(o api.Object) any {
	eps, _ := o["endpoints"].([]any)
	var list []string
	for _, e := range eps {
		list = append(list, strings2(asMap(e)["addresses"])...)
	}
	return listWithMore(list)
}

// revisionController is a ControllerRevision's controller owner as
// kind.group/name lowercased ("<none>" without one), as kube's
// printControllerRevision formats it.
func revisionController(o api.Object) any {
	refs, _ := o.Metadata()["ownerReferences"].([]any)
	for _, r := range refs {
		ref := asMap(r)
		if ref["controller"] != true {
			continue
		}
		group, _ := splitGroupVersion(str(ref["apiVersion"]))
		kind := str(ref["kind"])
		if kind == "" && group == "" {
			return str(ref["name"])
		}
		if group != "" {
			kind += "." + group
		}
		return strings.ToLower(kind) + "/" + str(ref["name"])
	}
	return "<none>"
}

// ipAddressParent is an IPAddress's parent as resource.group[/namespace]/
// name lowercased, "<none>" without one (printIPAddress).
func ipAddressParent(o api.Object) any {
	ref := asMap(Path(o, "spec", "parentRef"))
	if ref == nil {
		return "<none>"
	}
	gr := str(ref["resource"])
	if g := str(ref["group"]); g != "" {
		gr += "." + g
	}
	s := strings.ToLower(gr)
	if ns := str(ref["namespace"]); ns != "" {
		s += "/" + ns
	}
	return s + "/" + str(ref["name"])
}

// intOrString prints a PodDisruptionBudget's spec field, a number or a
// percentage, "N/A" when unset.
func intOrString(field string) func(api.Object) any {
	return func(o api.Object) any {
		switch v := Path(o, "spec", field).(type) {
		case string:
			return v
		case nil:
			return "N/A"
		default:
			return strconv.FormatInt(integer(v), 10)
		}
	}
}

// orDefault is the string at path, else what kube prints when it is unset.
func orDefault(unset string, path ...string) func(api.Object) any {
	return func(o api.Object) any {
		if s := str(Path(o, path...)); s != "" {
			return s
		}
		return unset
	}
}

func orUnset(path ...string) func(api.Object) any {
	return func(o api.Object) any {
		if s, ok := Path(o, path...).(string); ok {
			return s
		}
		return "<unset>"
	}
}

// endpoints is kube's formatEndpoints of all ports: ip:port for each
// address and port of each subset (the bare IP for a subset without
// ports), the first three, then how many more.
func endpoints(o api.Object) any {
	subsets, _ := o["subsets"].([]any)
	if len(subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	for _, ss := range subsets {
		m := asMap(ss)
		addrs, _ := m["addresses"].([]any)
		ports, _ := m["ports"].([]any)
		if len(ports) == 0 {
			ports = []any{nil}
		}
		for _, p := range ports {
			count += len(addrs)
			for _, a := range addrs {
				if len(list) == maxListed {
					break
				}
				ip := str(asMap(a)["ip"])
				if p != nil {
					ip = net.JoinHostPort(ip, strconv.FormatInt(integer(asMap(p)["port"]), 10))
				}
				list = append(list, ip)
			}
		}
	}
	s := strings.Join(list, ",")
	if count > maxListed {
		s += " + " + strconv.Itoa(count-maxListed) + " more..."
	}
	return s
}

// jobStatus is kube's printJob status: the first of its conditions that
// holds, in kube's order, else Running.
func jobStatus(o api.Object) any {
	conds, _ := Path(o, "status", "conditions").([]any)
	for _, t := range []string{"Complete", "Failed", "", "Suspended", "FailureTarget", "SuccessCriteriaMet"} {
		if t == "" {
			if o.Metadata()["deletionTimestamp"] != nil {
				return "Terminating"
			}
		} else if conditionTrue(conds, t) {
			return t
		}
	}
	return "Running"
}

func jobCompletions(o api.Object) any {
	succeeded := strconv.FormatInt(integer(Path(o, "status", "succeeded")), 10)
	if c := Path(o, "spec", "completions"); c != nil {
		return succeeded + "/" + strconv.FormatInt(integer(c), 10)
	}
	if p := integer(Path(o, "spec", "parallelism")); p > 1 {
		return succeeded + "/1 of " + strconv.FormatInt(p, 10)
	}
	return succeeded + "/1"
}

func jobDuration(o api.Object) any {
	start, err := time.Parse(time.RFC3339, str(Path(o, "status", "startTime")))
	if err != nil {
		return ""
	}
	end, err := time.Parse(time.RFC3339, str(Path(o, "status", "completionTime")))
	if err != nil {
		return HumanDuration(time.Since(start))
	}
	return HumanDuration(end.Sub(start))
}

// nodeStatus is Ready or NotReady from the node's last Ready condition
// (Unknown without one), then SchedulingDisabled when unschedulable.
func nodeStatus(o api.Object) any {
	status := "Unknown"
	conds, _ := Path(o, "status", "conditions").([]any)
	for _, c := range conds {
		if cm := asMap(c); str(cm["type"]) == "Ready" {
			status = "NotReady"
			if str(cm["status"]) == "True" {
				status = "Ready"
			}
		}
	}
	if Path(o, "spec", "unschedulable") == true {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles are the node-role.kubernetes.io/<role> labels' roles and the
// kubernetes.io/role label's value, sorted and unique.
func nodeRoles(o api.Object) any {
	var roles []string
	for k, v := range o.Labels() {
		if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && role != "" {
			roles = append(roles, role)
		} else if k == "kubernetes.io/role" && v != "" {
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	slices.Sort(roles)
	return strings.Join(slices.Compact(roles), ",")
}

// nodeAddress is the node's first address of type t.
func nodeAddress(t string) func(api.Object) any {
	return func(o api.Object) any {
		addrs, _ := Path(o, "status", "addresses").([]any)
		for _, a := range addrs {
			if am := asMap(a); str(am["type"]) == t {
				return str(am["address"])
			}
		}
		return "<none>"
	}
}

func orUnknown(field string) func(api.Object) any {
	return func(o api.Object) any {
		if s := str(Path(o, "status", "nodeInfo", field)); s != "" {
			return s
		}
		return "<unknown>"
	}
}

// doc is the description of a field of a kube type ("core.v1.PodSpec").
func doc(typ, field string) string {
	s, _ := Path(kubespec.Schema("io.k8s.api."+typ), "properties", field, "description").(string)
	return s
}

func wide(c Column) Column { c.Priority = 1; return c }

// integer reads a JSON number as an int64, 0 if absent or not one.
func integer(v any) int64 {
	n, _ := int32Value(v)
	return n
}

func intCell(path ...string) func(api.Object) any {
	return func(o api.Object) any { return integer(Path(o, path...)) }
}

// ratio is "ready/desired", as kube prints deployments and statefulsets.
func ratio(ready, desired any) string {
	return strconv.FormatInt(integer(ready), 10) + "/" + strconv.FormatInt(integer(desired), 10)
}

// podTemplate is where most kinds hold their pod template's spec.
var podTemplate = []string{"spec", "template", "spec"}

// containerNames and containerImages are the wide columns of the
// containers of the pod template spec at tmpl.
func containerNames(tmpl ...string) Column {
	return column("Containers", "string", "", "Names of each container in the template.", templateContainers(tmpl, "name"))
}

func containerImages(tmpl ...string) Column {
	return column("Images", "string", "", "Images referenced by each container in the template.", templateContainers(tmpl, "image"))
}

// templateContainers joins a field of the pod template's containers with
// commas, as kube's layoutContainerCells.
func templateContainers(tmpl []string, field string) func(api.Object) any {
	containers := append(slices.Clone(tmpl), "containers")
	return func(o api.Object) any {
		cs, _ := Path(o, containers...).([]any)
		var b strings.Builder
		for i, c := range cs {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := Path(asMap(c), field).(string)
			b.WriteString(s)
		}
		return b.String()
	}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// mapSelector is a label map at path as kube's labels.FormatLabels prints
// it: "k=v" sorted by key, "<none>" when empty.
func mapSelector(path ...string) func(api.Object) any {
	return func(o api.Object) any {
		m, _ := Path(o, path...).(map[string]any)
		if len(m) == 0 {
			return "<none>"
		}
		parts := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s, _ := m[k].(string)
			parts = append(parts, k+"="+s)
		}
		return strings.Join(parts, ",")
	}
}

// structuredSelector prints the label selector at path (spec.selector if
// none) as kube's LabelSelectorAsSelector(...).String(), with invalid in
// place of one that does not convert and empty of one that prints as "".
func structuredSelector(invalid, empty string, path ...string) func(api.Object) any {
	if path == nil {
		path = []string{"spec", "selector"}
	}
	return func(o api.Object) any {
		s, ok := labelSelectorString(Path(o, path...))
		switch {
		case !ok:
			return invalid
		case s == "":
			return empty
		}
		return s
	}
}

// labelSelector reads a metav1.LabelSelector from its JSON form, nil when
// absent.
func labelSelector(v any) *labelsel.LabelSelector {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	ls := &labelsel.LabelSelector{}
	if ml, ok := m["matchLabels"].(map[string]any); ok {
		ls.MatchLabels = make(map[string]string, len(ml))
		for k, v := range ml {
			ls.MatchLabels[k], _ = v.(string)
		}
	}
	exprs, _ := m["matchExpressions"].([]any)
	for _, e := range exprs {
		em := asMap(e)
		r := labelsel.LabelSelectorRequirement{Key: str(em["key"]), Operator: labelsel.LabelSelectorOperator(str(em["operator"]))}
		vals, _ := em["values"].([]any)
		for _, v := range vals {
			r.Values = append(r.Values, str(v))
		}
		ls.MatchExpressions = append(ls.MatchExpressions, r)
	}
	return ls
}

func str(v any) string { s, _ := v.(string); return s }

func deploymentColumns() []Column {
	return []Column{
		column("Ready", "string", "", "Number of the pod with ready state", func(o api.Object) any {
			return ratio(Path(o, "status", "readyReplicas"), Path(o, "spec", "replicas"))
		}),
		column("Up-to-date", "string", "", doc("apps.v1.DeploymentStatus", "updatedReplicas"), intCell("status", "updatedReplicas")),
		column("Available", "string", "", doc("apps.v1.DeploymentStatus", "availableReplicas"), intCell("status", "availableReplicas")),
		ageColumn(),
		wide(containerNames(podTemplate...)), wide(containerImages(podTemplate...)),
		wide(column("Selector", "string", "", doc("apps.v1.DeploymentSpec", "selector"), structuredSelector("<invalid>", ""))),
	}
}

// replicaSetColumns are kube's columns of replicasets and replication
// controllers, whose selectors differ.
func replicaSetColumns(spec, status string, sel func(api.Object) any) []Column {
	return []Column{
		column("Desired", "integer", "", doc(spec, "replicas"), intCell("spec", "replicas")),
		column("Current", "integer", "", doc(status, "replicas"), intCell("status", "replicas")),
		column("Ready", "integer", "", doc(status, "readyReplicas"), intCell("status", "readyReplicas")),
		ageColumn(),
		wide(containerNames(podTemplate...)), wide(containerImages(podTemplate...)),
		wide(column("Selector", "string", "", doc(spec, "selector"), sel)),
	}
}

func serviceColumns() []Column {
	return []Column{
		column("Type", "string", "", doc("core.v1.ServiceSpec", "type"), stringCell("spec", "type")),
		column("Cluster-IP", "string", "", doc("core.v1.ServiceSpec", "clusterIP"), func(o api.Object) any {
			if ips, _ := Path(o, "spec", "clusterIPs").([]any); len(ips) > 0 {
				return str(ips[0])
			}
			return "<none>"
		}),
		column("External-IP", "string", "", doc("core.v1.ServiceSpec", "externalIPs"), serviceExternalIP),
		column("Port(s)", "string", "", doc("core.v1.ServiceSpec", "ports"), servicePorts),
		ageColumn(),
		wide(column("Selector", "string", "", doc("core.v1.ServiceSpec", "selector"), mapSelector("spec", "selector"))),
	}
}

// serviceExternalIP is kube's getServiceExternalIP, wide (the server's
// tables are): the external IPs, a load balancer's ingress points first.
func serviceExternalIP(o api.Object) any {
	external := strings.Join(strings2(Path(o, "spec", "externalIPs")), ",")
	switch str(Path(o, "spec", "type")) {
	case "ClusterIP", "NodePort":
		if external != "" {
			return external
		}
		return "<none>"
	case "LoadBalancer":
		all := loadBalancerIngress(o)
		if external != "" {
			all = append(all, external)
		}
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case "ExternalName":
		return str(Path(o, "spec", "externalName"))
	}
	return "<unknown>"
}

func strings2(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = str(s)
	}
	return out
}

// servicePorts is kube's makePortString: port[:nodePort]/protocol.
func servicePorts(o api.Object) any {
	ports, _ := Path(o, "spec", "ports").([]any)
	if len(ports) == 0 {
		return "<none>"
	}
	var b strings.Builder
	for i, p := range ports {
		m := asMap(p)
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(integer(m["port"]), 10))
		if np := integer(m["nodePort"]); np > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.FormatInt(np, 10))
		}
		b.WriteByte('/')
		b.WriteString(str(m["protocol"]))
	}
	return b.String()
}

func podColumns() []Column {
	return []Column{
		column("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", func(o api.Object) any { return summarizePod(o).ready }),
		column("Status", "string", "", "The aggregate status of the containers in this pod.", func(o api.Object) any { return summarizePod(o).reason }),
		column("Restarts", "string", "", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", func(o api.Object) any { return summarizePod(o).restarts }),
		ageColumn(),
		wide(column("IP", "string", "", doc("core.v1.PodStatus", "podIP"), func(o api.Object) any {
			ips, _ := Path(o, "status", "podIPs").([]any)
			if len(ips) > 0 {
				if ip := str(asMap(ips[0])["ip"]); ip != "" {
					return ip
				}
			}
			return "<none>"
		})),
		wide(column("Node", "string", "", doc("core.v1.PodSpec", "nodeName"), orNone("spec", "nodeName"))),
		wide(column("Nominated Node", "string", "", doc("core.v1.PodStatus", "nominatedNodeName"), orNone("status", "nominatedNodeName"))),
		wide(column("Readiness Gates", "string", "", doc("core.v1.PodSpec", "readinessGates"), readinessGates)),
	}
}

func orNone(path ...string) func(api.Object) any {
	return func(o api.Object) any {
		if s := str(Path(o, path...)); s != "" {
			return s
		}
		return "<none>"
	}
}

// readinessGates is "true/gates" of the pod's readiness gates.
func readinessGates(o api.Object) any {
	gates, _ := Path(o, "spec", "readinessGates").([]any)
	if len(gates) == 0 {
		return "<none>"
	}
	conds, _ := Path(o, "status", "conditions").([]any)
	n := 0
	for _, g := range gates {
		t := str(asMap(g)["conditionType"])
		for _, c := range conds {
			if cm := asMap(c); str(cm["type"]) == t {
				if str(cm["status"]) == "True" {
					n++
				}
				break
			}
		}
	}
	return strconv.Itoa(n) + "/" + strconv.Itoa(len(gates))
}

// podSummary are the cells kube's printPod computes together.
type podSummary struct{ ready, reason, restarts string }

// summarizePod is kube's printPod's READY, STATUS and RESTARTS: ready and
// total containers (restartable init containers count), the reason from
// the phase, the init containers' states, then the containers' (the
// first one's that has one wins), and the restarts with the age of the
// last one.
func summarizePod(o api.Object) podSummary {
	status := asMap(o["status"])
	spec := asMap(o["spec"])
	phase := str(status["phase"])
	reason := phase
	if r := str(status["reason"]); r != "" {
		reason = r
	}
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if cm := asMap(c); str(cm["type"]) == "PodScheduled" && str(cm["reason"]) == "SchedulingGated" {
			reason = "SchedulingGated"
		}
	}
	containers, _ := spec["containers"].([]any)
	initSpecs, _ := spec["initContainers"].([]any)
	total := len(containers)
	sidecar := map[string]bool{}
	for _, c := range initSpecs {
		if cm := asMap(c); str(cm["restartPolicy"]) == "Always" {
			sidecar[str(cm["name"])] = true
			total++
		}
	}

	restarts, sidecarRestarts, ready := int64(0), int64(0), 0
	var last, sidecarLast time.Time
	initializing := false
	initStatuses, _ := status["initContainerStatuses"].([]any)
	for i, c := range initStatuses {
		cs := asMap(c)
		n := integer(cs["restartCount"])
		restarts += n
		finished := lastTerminated(cs)
		last = later(last, finished)
		isSidecar := sidecar[str(cs["name"])]
		if isSidecar {
			sidecarRestarts += n
			sidecarLast = later(sidecarLast, finished)
		}
		state := asMap(cs["state"])
		term, waiting := asMap(state["terminated"]), asMap(state["waiting"])
		switch {
		case term != nil && integer(term["exitCode"]) == 0:
			continue
		case isSidecar && cs["started"] == true:
			if cs["ready"] == true {
				ready++
			}
			continue
		case term != nil:
			if r := str(term["reason"]); r != "" {
				reason = "Init:" + r
			} else if sig := integer(term["signal"]); sig != 0 {
				reason = "Init:Signal:" + strconv.FormatInt(sig, 10)
			} else {
				reason = "Init:ExitCode:" + strconv.FormatInt(integer(term["exitCode"]), 10)
			}
		case waiting != nil && str(waiting["reason"]) != "" && str(waiting["reason"]) != "PodInitializing":
			reason = "Init:" + str(waiting["reason"])
		default:
			reason = "Init:" + strconv.Itoa(i) + "/" + strconv.Itoa(len(initSpecs))
		}
		initializing = true
		break
	}

	if !initializing || conditionTrue(conds, "Initialized") {
		restarts, last = sidecarRestarts, sidecarLast
		hasRunning, errorReason := false, ""
		statuses, _ := status["containerStatuses"].([]any)
		for i := len(statuses) - 1; i >= 0; i-- {
			cs := asMap(statuses[i])
			restarts += integer(cs["restartCount"])
			last = later(last, lastTerminated(cs))
			state := asMap(cs["state"])
			term, waiting := asMap(state["terminated"]), asMap(state["waiting"])
			switch {
			case waiting != nil && str(waiting["reason"]) != "":
				reason = str(waiting["reason"])
			case term != nil:
				if r := str(term["reason"]); r != "" {
					reason = r
				} else if sig := integer(term["signal"]); sig != 0 {
					reason = "Signal:" + strconv.FormatInt(sig, 10)
				} else {
					reason = "ExitCode:" + strconv.FormatInt(integer(term["exitCode"]), 10)
				}
				if integer(term["exitCode"]) != 0 {
					errorReason = reason
				}
			case cs["ready"] == true && state["running"] != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" {
			switch {
			case hasRunning && anyConditionTrue(conds, "Ready"):
				reason = "Running"
			case errorReason != "":
				reason = errorReason
			case hasRunning:
				reason = "NotReady"
			}
		}
	}

	if o.Metadata()["deletionTimestamp"] != nil {
		if str(status["reason"]) == "NodeLost" {
			reason = "Unknown"
		} else if phase != "Failed" && phase != "Succeeded" {
			reason = "Terminating"
		}
	}
	r := strconv.FormatInt(restarts, 10)
	if restarts != 0 && !last.IsZero() {
		r += " (" + HumanDuration(time.Since(last)) + " ago)"
	}
	return podSummary{ready: strconv.Itoa(ready) + "/" + strconv.Itoa(total), reason: reason, restarts: r}
}

// lastTerminated is when a container's last termination finished, zero if
// it has none.
func lastTerminated(cs map[string]any) time.Time {
	t, _ := time.Parse(time.RFC3339, str(Path(cs, "lastState", "terminated", "finishedAt")))
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// anyConditionTrue says whether a condition of type t is True.
func anyConditionTrue(conds []any, t string) bool {
	return slices.ContainsFunc(conds, func(c any) bool {
		cm := asMap(c)
		return str(cm["type"]) == t && str(cm["status"]) == "True"
	})
}

// conditionTrue says whether the first condition of type t is True.
func conditionTrue(conds []any, t string) bool {
	for _, c := range conds {
		if cm := asMap(c); str(cm["type"]) == t {
			return str(cm["status"]) == "True"
		}
	}
	return false
}
