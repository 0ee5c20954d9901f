package defaulting

import (
	"math"
	"time"
)

// The kinds of every group but core, from each group's defaults.go and
// zz_generated.defaults.go in k8s.io/kubernetes pkg/apis.

// kinds maps each defaulted kind to its root node.
var kinds = func() map[gvk]*node {
	byGroup := []struct {
		group, version string
		kinds          map[string]*node
	}{
		{"", "v1", coreV1},
		{"apps", "v1", appsV1},
		{"batch", "v1", batchV1},
		{"autoscaling", "v1", map[string]*node{"HorizontalPodAutoscaler": {set: defaultHPAMinReplicas}}},
		{"autoscaling", "v2", map[string]*node{"HorizontalPodAutoscaler": {set: defaultHPAv2}}},
		{"admissionregistration.k8s.io", "v1", admissionregistrationV1},
		{"authentication.k8s.io", "v1", map[string]*node{"TokenRequest": {fields: []field{val("spec", &node{fields: []field{
			defPtr("expirationSeconds", number(3600)),
		}})}}}},
		{"certificates.k8s.io", "v1", map[string]*node{"PodCertificateRequest": {fields: []field{val("spec", &node{fields: []field{
			defPtr("maxExpirationSeconds", number(86400)),
		}})}}}},
		{"discovery.k8s.io", "v1", map[string]*node{"EndpointSlice": {fields: []field{listOf("ports", &node{fields: []field{
			defPtr("name", ""), defPtr("protocol", "TCP"),
		}})}}}},
		{"flowcontrol.apiserver.k8s.io", "v1", flowcontrolV1},
		{"networking.k8s.io", "v1", networkingV1},
		{"rbac.authorization.k8s.io", "v1", rbacV1},
		{"resource.k8s.io", "v1", resourceV1},
		{"scheduling.k8s.io", "v1", map[string]*node{"PriorityClass": {fields: []field{defPtr("preemptionPolicy", "PreemptLowerPriority")}}}},
		{"storage.k8s.io", "v1", storageV1},
	}
	all := map[gvk]*node{}
	for _, g := range byGroup {
		for k, n := range g.kinds {
			all[gvk{g.group, g.version, k}] = n
		}
	}
	return all
}()

var (
	rollingUpdate = "RollingUpdate"

	appsV1 = map[string]*node{
		"Deployment": {
			set: func(m map[string]any) {
				spec := child(m, "spec")
				setNil(spec, "replicas", number(1))
				if s := child(spec, "strategy"); s != nil {
					setZero(s, "type", rollingUpdate)
					if str(s, "type") == rollingUpdate {
						ru := child(s, "rollingUpdate")
						setNil(ru, "maxUnavailable", "25%")
						setNil(ru, "maxSurge", "25%")
					}
				}
				setNil(spec, "revisionHistoryLimit", number(10))
				setNil(spec, "progressDeadlineSeconds", number(600))
			},
			fields: []field{val("spec", podTemplateOwner)},
		},
		"DaemonSet": {
			set: func(m map[string]any) {
				spec := child(m, "spec")
				if s := child(spec, "updateStrategy"); s != nil {
					setZero(s, "type", rollingUpdate)
					if str(s, "type") == rollingUpdate {
						ru := child(s, "rollingUpdate")
						setNil(ru, "maxUnavailable", number(1))
						setNil(ru, "maxSurge", number(0))
					}
				}
				setNil(spec, "revisionHistoryLimit", number(10))
			},
			fields: []field{val("spec", podTemplateOwner)},
		},
		"StatefulSet": {
			set: defaultStatefulSet,
			fields: []field{val("spec", &node{fields: []field{
				val("template", podTemplateSpec),
				listOf("volumeClaimTemplates", pvc),
			}})},
		},
		"ReplicaSet": {
			set:    func(m map[string]any) { setNil(child(m, "spec"), "replicas", number(1)) },
			fields: []field{val("spec", podTemplateOwner)},
		},
	}

	// podTemplateOwner is a spec whose only defaulted field is its pod template.
	podTemplateOwner = &node{fields: []field{val("template", podTemplateSpec)}}
)

// defaultStatefulSet is SetDefaults_StatefulSet, MaxUnavailableStatefulSet
// being on in 1.37.
func defaultStatefulSet(m map[string]any) {
	spec := child(m, "spec")
	if spec == nil {
		return
	}
	setZero(spec, "podManagementPolicy", "OrderedReady")
	if s := child(spec, "updateStrategy"); s != nil {
		if isZero(s["type"]) {
			s["type"] = rollingUpdate
			setNil(s, "rollingUpdate", map[string]any{})
		}
		if ru, ok := s["rollingUpdate"].(map[string]any); ok && str(s, "type") == rollingUpdate {
			setNil(ru, "partition", number(0))
			setNil(ru, "maxUnavailable", number(1))
		}
	}
	if p := child(spec, "persistentVolumeClaimRetentionPolicy"); p != nil {
		setZero(p, "whenDeleted", "Retain")
		setZero(p, "whenScaled", "Retain")
	}
	setNil(spec, "replicas", number(1))
	setNil(spec, "revisionHistoryLimit", number(10))
}

var (
	// jobSpec is what a Job's spec and a CronJob's job template share;
	// SetDefaults_Job itself runs on Jobs only.
	jobSpec = &node{fields: []field{
		ptr("podFailurePolicy", &node{fields: []field{listOf("rules", &node{fields: []field{
			listOf("onPodConditions", &node{fields: []field{def("status", "True")}}),
		}})}}),
		val("template", podTemplateSpec),
	}}

	batchV1 = map[string]*node{
		"Job": {set: defaultJob, fields: []field{val("spec", jobSpec)}},
		"CronJob": {
			set: func(m map[string]any) {
				spec := child(m, "spec")
				setZero(spec, "concurrencyPolicy", "Allow")
				setNil(spec, "suspend", false)
				setNil(spec, "successfulJobsHistoryLimit", number(3))
				setNil(spec, "failedJobsHistoryLimit", number(1))
			},
			fields: []field{val("spec", &node{fields: []field{
				val("jobTemplate", &node{fields: []field{val("spec", jobSpec)}}),
			}})},
		},
	}
)

// defaultJob is SetDefaults_Job.
func defaultJob(m map[string]any) {
	spec := child(m, "spec")
	if spec == nil {
		return
	}
	if spec["completions"] == nil && spec["parallelism"] == nil {
		spec["completions"] = number(1)
	}
	setNil(spec, "parallelism", number(1))
	if spec["backoffLimitPerIndex"] != nil {
		setNil(spec, "backoffLimit", number(math.MaxInt32))
	}
	setNil(spec, "backoffLimit", number(6))
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	if labels, _ := meta["labels"].(map[string]any); len(labels) > 0 {
		defaultLabels(m, labels)
	}
	setNil(spec, "completionMode", "NonIndexed")
	setNil(spec, "suspend", false)
	if spec["podFailurePolicy"] != nil {
		setNil(spec, "podReplacementPolicy", "Failed")
	}
	setNil(spec, "podReplacementPolicy", "TerminatingOrFailed")
	setNil(spec, "manualSelector", false)
}

func defaultHPAMinReplicas(m map[string]any) { setNil(child(m, "spec"), "minReplicas", number(1)) }

// defaultHPAv2 is autoscaling/v2 SetDefaults_HorizontalPodAutoscaler: one
// metric of 80% CPU utilization, and behavior rules filled from kube's.
func defaultHPAv2(m map[string]any) {
	defaultHPAMinReplicas(m)
	spec := child(m, "spec")
	if spec == nil {
		return
	}
	if metrics, _ := spec["metrics"].([]any); len(metrics) == 0 {
		spec["metrics"] = []any{map[string]any{
			"type": "Resource",
			"resource": map[string]any{"name": "cpu", "target": map[string]any{
				"type": "Utilization", "averageUtilization": number(80),
			}},
		}}
	}
	b, ok := spec["behavior"].(map[string]any)
	if !ok {
		return
	}
	policy := func(typ string, value int64) map[string]any {
		return map[string]any{"type": typ, "value": number(value), "periodSeconds": number(15)}
	}
	b["scaleUp"] = scalingRules(b["scaleUp"], map[string]any{
		"stabilizationWindowSeconds": number(0), "selectPolicy": "Max",
		"policies": []any{policy("Pods", 4), policy("Percent", 100)},
	})
	b["scaleDown"] = scalingRules(b["scaleDown"], map[string]any{
		"selectPolicy": "Max", "policies": []any{policy("Percent", 100)},
	})
}

// scalingRules is copyHPAScalingRules: the fields rules sets over the defaults.
func scalingRules(rules any, defaults map[string]any) map[string]any {
	r, _ := rules.(map[string]any)
	for _, k := range []string{"selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"} {
		if r[k] != nil {
			defaults[k] = r[k]
		}
	}
	return defaults
}

var (
	ruleScope   = &node{fields: []field{defPtr("scope", "*")}}
	webhookHook = func(mutating bool) *node {
		fields := []field{
			defPtr("failurePolicy", "Fail"), defPtr("matchPolicy", "Equivalent"), defPtr("timeoutSeconds", number(10)),
		}
		if mutating {
			fields = append(fields, defPtr("reinvocationPolicy", "Never"))
		}
		return &node{
			set: emptySelectors,
			fields: append(fields,
				val("clientConfig", &node{fields: []field{ptr("service", &node{fields: []field{defPtr("port", number(443))}})}}),
				listOf("rules", ruleScope)),
		}
	}
	matchResources = &node{
		set:    emptySelectors,
		fields: []field{defPtr("matchPolicy", "Equivalent"), listOf("resourceRules", ruleScope), listOf("excludeResourceRules", ruleScope)},
	}
	policy = &node{fields: []field{val("spec", &node{fields: []field{
		defPtr("failurePolicy", "Fail"), ptr("matchConstraints", matchResources),
	}})}}
	policyBinding = &node{fields: []field{val("spec", &node{fields: []field{ptr("matchResources", matchResources)}})}}

	admissionregistrationV1 = map[string]*node{
		"ValidatingWebhookConfiguration":   {fields: []field{listOf("webhooks", webhookHook(false))}},
		"MutatingWebhookConfiguration":     {fields: []field{listOf("webhooks", webhookHook(true))}},
		"ValidatingAdmissionPolicy":        policy,
		"ValidatingAdmissionPolicyBinding": policyBinding,
		"MutatingAdmissionPolicy":          policy,
		"MutatingAdmissionPolicyBinding":   policyBinding,
	}
)

// emptySelectors defaults the namespace and object selectors to empty ones,
// each its own map.
func emptySelectors(m map[string]any) {
	for _, k := range []string{"namespaceSelector", "objectSelector"} {
		setNil(m, k, map[string]any{})
	}
}

var (
	flowcontrolV1 = map[string]*node{
		"FlowSchema": {fields: []field{val("spec", &node{fields: []field{def("matchingPrecedence", number(1000))}})}},
		"PriorityLevelConfiguration": {fields: []field{val("spec", &node{fields: []field{
			ptr("limited", &node{fields: []field{
				defPtr("nominalConcurrencyShares", number(30)), defPtr("lendablePercent", number(0)),
				val("limitResponse", &node{fields: []field{ptr("queuing", &node{fields: []field{
					def("handSize", number(8)), def("queues", number(64)), def("queueLengthLimit", number(50)),
				}})}}),
			}}),
			ptr("exempt", &node{fields: []field{defPtr("nominalConcurrencyShares", number(0)), defPtr("lendablePercent", number(0))}}),
		}})}},
	}

	policyPorts  = &node{fields: []field{listOf("ports", &node{fields: []field{defPtr("protocol", "TCP")}})}}
	networkingV1 = map[string]*node{
		"IngressClass": {fields: []field{val("spec", &node{fields: []field{
			ptr("parameters", &node{fields: []field{defPtr("scope", "Cluster")}}),
		}})}},
		"NetworkPolicy": {
			set: func(m map[string]any) {
				spec := child(m, "spec")
				if types, _ := spec["policyTypes"].([]any); spec != nil && len(types) == 0 {
					types = []any{"Ingress"}
					if egress, _ := spec["egress"].([]any); len(egress) > 0 {
						types = append(types, "Egress")
					}
					spec["policyTypes"] = types
				}
			},
			fields: []field{val("spec", &node{fields: []field{listOf("ingress", policyPorts), listOf("egress", policyPorts)}})},
		},
	}

	rbacGroup = "rbac.authorization.k8s.io"
	binding   = &node{fields: []field{
		val("roleRef", &node{fields: []field{def("apiGroup", rbacGroup)}}),
		listOf("subjects", &node{set: func(m map[string]any) {
			if k := str(m, "kind"); k == "User" || k == "Group" {
				setZero(m, "apiGroup", rbacGroup)
			}
		}}),
	}}
	rbacV1 = map[string]*node{"RoleBinding": binding, "ClusterRoleBinding": binding}
)

var (
	toleration    = &node{fields: []field{def("operator", "Equal")}}
	deviceRequest = &node{
		set: func(m map[string]any) {
			setZero(m, "allocationMode", "ExactCount")
			if str(m, "allocationMode") == "ExactCount" {
				setZero(m, "count", number(1))
			}
		},
		fields: []field{listOf("tolerations", toleration)},
	}
	// deviceTaint is SetDefaults_DeviceTaint: the time it was added, to the second.
	deviceTaint = &node{set: func(m map[string]any) {
		setNil(m, "timeAdded", time.Now().UTC().Truncate(time.Second).Format(time.RFC3339))
	}}
	claimSpec = &node{fields: []field{val("devices", &node{fields: []field{listOf("requests", &node{fields: []field{
		ptr("exactly", deviceRequest), listOf("firstAvailable", deviceRequest),
	}})}})}}

	resourceV1 = map[string]*node{
		"DeviceTaintRule": {fields: []field{val("spec", &node{fields: []field{val("taint", deviceTaint)}})}},
		"ResourceClaim": {fields: []field{
			val("spec", claimSpec),
			val("status", &node{fields: []field{ptr("allocation", &node{fields: []field{val("devices", &node{fields: []field{
				listOf("results", &node{fields: []field{listOf("tolerations", toleration)}}),
			}})}})}}),
		}},
		"ResourceClaimTemplate": {fields: []field{val("spec", &node{fields: []field{val("spec", claimSpec)}})}},
		"ResourceSlice": {fields: []field{val("spec", &node{fields: []field{
			listOf("devices", &node{fields: []field{listOf("taints", deviceTaint)}}),
		}})}},
	}
)

var storageV1 = map[string]*node{
	"StorageClass": {fields: []field{defPtr("reclaimPolicy", "Delete"), defPtr("volumeBindingMode", "Immediate")}},
	// SELinuxMountReadWriteOncePod (GA) and VolumeLimitScaling are on in 1.37.
	"CSIDriver": {fields: []field{val("spec", &node{
		set: func(m map[string]any) {
			if modes, _ := m["volumeLifecycleModes"].([]any); len(modes) == 0 {
				m["volumeLifecycleModes"] = []any{"Persistent"}
			}
		},
		fields: []field{
			defPtr("attachRequired", true), defPtr("podInfoOnMount", false), defPtr("storageCapacity", false),
			defPtr("fsGroupPolicy", "ReadWriteOnceWithFSType"), defPtr("requiresRepublish", false),
			defPtr("seLinuxMount", false), defPtr("preventPodSchedulingIfMissing", false),
		},
	})}},
	"VolumeAttachment": {fields: []field{val("spec", &node{fields: []field{val("source", &node{fields: []field{
		ptr("inlineVolumeSpec", pvSpec),
	}})}})}},
}
