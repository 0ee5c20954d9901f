package defaulting

// core/v1: k8s.io/kubernetes pkg/apis/core/v1/defaults.go and
// zz_generated.defaults.go.

var (
	fieldRef = &node{fields: []field{def("apiVersion", "v1")}} // ObjectFieldSelector
	httpGet  = &node{fields: []field{def("path", "/"), def("scheme", "HTTP")}}

	probe = &node{
		fields: []field{
			def("timeoutSeconds", number(1)), def("periodSeconds", number(10)),
			def("successThreshold", number(1)), def("failureThreshold", number(3)),
			ptr("httpGet", httpGet),
			ptr("grpc", &node{fields: []field{defPtr("service", "")}}),
		},
	}
	lifecycleHandler = &node{fields: []field{ptr("httpGet", httpGet)}}

	// container is Container and EphemeralContainer, whose common fields are inline.
	container = &node{
		set: func(m map[string]any) {
			if isZero(m["imagePullPolicy"]) {
				m["imagePullPolicy"] = pullPolicy(str(m, "image"))
			}
			setZero(m, "terminationMessagePath", "/dev/termination-log")
			setZero(m, "terminationMessagePolicy", "File")
		},
		fields: []field{
			listOf("ports", &node{fields: []field{def("protocol", "TCP")}}),
			listOf("env", &node{fields: []field{ptr("valueFrom", &node{fields: []field{
				ptr("fieldRef", fieldRef),
				ptr("fileKeyRef", &node{fields: []field{defPtr("optional", false)}}),
			}})}}),
			val("resources", resources),
			ptr("livenessProbe", probe), ptr("readinessProbe", probe), ptr("startupProbe", probe),
			ptr("lifecycle", &node{fields: []field{ptr("postStart", lifecycleHandler), ptr("preStop", lifecycleHandler)}}),
		},
	}

	defaultMode644 = &node{fields: []field{defPtr("defaultMode", number(0o644))}}
	downwardAPI    = &node{fields: []field{listOf("items", &node{fields: []field{ptr("fieldRef", fieldRef)}})}}

	// The volume sources with defaults, shared by Volume and PersistentVolumeSpec.
	hostPath  = &node{fields: []field{defPtr("type", "")}}
	iscsi     = &node{fields: []field{def("iscsiInterface", "default")}}
	rbd       = &node{fields: []field{def("pool", "rbd"), def("user", "admin"), def("keyring", "/etc/ceph/keyring")}}
	azureDisk = &node{fields: []field{
		defPtr("cachingMode", "ReadWrite"), defPtr("fsType", "ext4"), defPtr("readOnly", false), defPtr("kind", "Shared"),
	}}
	scaleIO = &node{fields: []field{def("storageMode", "ThinProvisioned"), def("fsType", "xfs")}}

	pvcSpec = &node{fields: []field{defPtr("volumeMode", "Filesystem"), val("resources", resources)}}
	pvc     = &node{
		set: func(m map[string]any) { setZero(child(m, "status"), "phase", "Pending") },
		fields: []field{val("spec", pvcSpec), val("status", &node{fields: []field{
			val("capacity", resourceList), val("allocatedResources", resourceList),
		}})},
	}

	volume = &node{
		set: defaultVolume,
		fields: []field{
			ptr("hostPath", hostPath),
			ptr("secret", defaultMode644),
			ptr("iscsi", iscsi),
			ptr("rbd", rbd),
			ptr("downwardAPI", &node{fields: append([]field{defPtr("defaultMode", number(0o644))}, downwardAPI.fields...)}),
			ptr("configMap", defaultMode644),
			ptr("azureDisk", azureDisk),
			ptr("projected", &node{fields: []field{
				defPtr("defaultMode", number(0o644)),
				listOf("sources", &node{fields: []field{
					ptr("downwardAPI", downwardAPI),
					ptr("serviceAccountToken", &node{fields: []field{defPtr("expirationSeconds", number(3600))}}),
				}}),
			}}),
			ptr("scaleIO", scaleIO),
			ptr("ephemeral", &node{fields: []field{ptr("volumeClaimTemplate", &node{fields: []field{val("spec", pvcSpec)}})}}),
		},
	}

	podSpec = &node{
		set: defaultPodSpec,
		fields: []field{
			listOf("volumes", volume),
			listOf("initContainers", container),
			listOf("containers", container),
			listOf("ephemeralContainers", container),
			val("overhead", resourceList),
			ptr("resources", resources),
		},
	}
	podTemplateSpec = &node{fields: []field{val("spec", podSpec)}}
	containerStatus = &node{fields: []field{val("allocatedResources", resourceList), ptr("resources", resources)}}

	pvSpec = &node{fields: []field{
		val("capacity", resourceList),
		ptr("hostPath", hostPath), ptr("rbd", rbd), ptr("iscsi", iscsi), ptr("azureDisk", azureDisk), ptr("scaleIO", scaleIO),
	}}
)

var coreV1 = map[string]*node{
	"Pod": {
		set: defaultPod,
		fields: []field{val("spec", podSpec), val("status", &node{set: defaultPodStatus, fields: []field{
			listOf("initContainerStatuses", containerStatus), listOf("containerStatuses", containerStatus),
			listOf("ephemeralContainerStatuses", containerStatus),
			val("allocatedResources", resourceList), ptr("resources", resources),
		}})},
	},
	"PodTemplate": {fields: []field{val("template", podTemplateSpec)}},
	"ReplicationController": {
		set: defaultReplicationController,
		fields: []field{val("spec", &node{fields: []field{
			defPtr("replicas", number(1)),
			ptr("template", podTemplateSpec),
		}})},
	},
	"Service": {set: defaultService},
	"Endpoints": {fields: []field{listOf("subsets", &node{fields: []field{
		listOf("ports", &node{fields: []field{def("protocol", "TCP")}}),
	}})}},
	"Secret": {fields: []field{def("type", "Opaque")}},
	"PersistentVolume": {
		set: func(m map[string]any) {
			setZero(child(m, "status"), "phase", "Pending")
			spec := child(m, "spec")
			setZero(spec, "persistentVolumeReclaimPolicy", "Retain")
			setNil(spec, "volumeMode", "Filesystem")
		},
		fields: []field{val("spec", pvSpec)},
	},
	"PersistentVolumeClaim": pvc,
	"Namespace": {
		set: func(m map[string]any) {
			// SetDefaults_Namespace: a generateName namespace has no name yet.
			meta, _ := m["metadata"].(map[string]any)
			if name := str(meta, "name"); name != "" {
				if labels := child(meta, "labels"); labels != nil {
					labels["kubernetes.io/metadata.name"] = name
				}
			}
		},
		fields: []field{val("status", &node{fields: []field{def("phase", "Active")}})},
	},
	"Node": {fields: []field{val("status", &node{
		set: func(m map[string]any) {
			if capacity, _ := m["capacity"].(map[string]any); len(capacity) > 0 && m["allocatable"] == nil {
				m["allocatable"] = copyMap(capacity)
			}
		},
		fields: []field{val("capacity", resourceList), val("allocatable", resourceList)},
	})}},
	"LimitRange": {fields: []field{val("spec", &node{fields: []field{
		listOf("limits", &node{set: defaultLimitRangeItem, fields: []field{
			val("max", resourceList), val("min", resourceList), val("default", resourceList),
			val("defaultRequest", resourceList), val("maxLimitRequestRatio", resourceList),
		}}),
	}})}},
	"ResourceQuota": {fields: []field{
		val("spec", &node{fields: []field{val("hard", resourceList)}}),
		val("status", &node{fields: []field{val("hard", resourceList), val("used", resourceList)}}),
	}},
}

// defaultVolume is SetDefaults_Volume: a volume of no source is an emptyDir;
// an image volume's pull policy follows its reference, as a container's
// (ImageVolume is GA in 1.37).
func defaultVolume(m map[string]any) {
	some := false
	for _, k := range volumeSources {
		if m[k] != nil {
			some = true
			break
		}
	}
	if !some {
		m["emptyDir"] = map[string]any{}
	}
	if img, ok := m["image"].(map[string]any); ok {
		if isZero(img["pullPolicy"]) {
			img["pullPolicy"] = pullPolicy(str(img, "reference"))
		}
	}
}

// volumeSources are the JSON names of v1.VolumeSource's fields, all pointers.
var volumeSources = []string{
	"hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs",
	"iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
	"downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
	"photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
}

// defaultPodSpec is SetDefaults_PodSpec.
func defaultPodSpec(m map[string]any) {
	// serviceAccount is the deprecated alias of serviceAccountName, which wins.
	if name := str(m, "serviceAccountName"); name != "" {
		m["serviceAccount"] = name
	} else if name := str(m, "serviceAccount"); name != "" {
		m["serviceAccountName"] = name
	}
	setZero(m, "dnsPolicy", "ClusterFirst")
	setZero(m, "restartPolicy", "Always")
	setNil(m, "securityContext", map[string]any{})
	setNil(m, "terminationGracePeriodSeconds", number(30))
	setZero(m, "schedulerName", "default-scheduler")
}

// defaultPod is SetDefaults_Pod, run before its PodSpec's defaults. With
// PodLevelResourcesFixDefaulting (on in 1.37) the pod-level requests are
// defaulted by the create strategy instead, so not here; H2CContainerProbe
// is off.
func defaultPod(m map[string]any) {
	spec := child(m, "spec")
	if spec == nil {
		return
	}
	if g, ok := float(spec["terminationGracePeriodSeconds"]); ok && g < 0 {
		spec["terminationGracePeriodSeconds"] = number(1)
	}
	// Requests default to limits, on a Pod's containers only (not a template's).
	for _, key := range []string{"containers", "initContainers"} {
		for _, c := range items(spec, key) {
			res, _ := c["resources"].(map[string]any)
			limits, ok := res["limits"].(map[string]any)
			if !ok || len(limits) == 0 {
				continue
			}
			requests := child(res, "requests")
			if requests == nil {
				continue
			}
			for k, v := range limits {
				if _, ok := requests[k]; !ok {
					requests[k] = v
				}
			}
		}
	}
	setNil(spec, "enableServiceLinks", true)
	if spec["hostNetwork"] == true {
		for _, key := range []string{"containers", "initContainers"} {
			for _, c := range items(spec, key) {
				for _, p := range items(c, "ports") {
					if isZero(p["hostPort"]) && p["containerPort"] != nil {
						p["hostPort"] = p["containerPort"]
					}
				}
			}
		}
	}
}

// defaultPodStatus is SetDefaults_PodStatus: podIP and podIPs agree, podIP
// winning.
func defaultPodStatus(m map[string]any) {
	ip := str(m, "podIP")
	ips, _ := m["podIPs"].([]any)
	var first string
	if len(ips) > 0 {
		if p, ok := ips[0].(map[string]any); ok {
			first = str(p, "ip")
		}
	}
	switch {
	case ip != "" && (len(ips) == 0 || first != ip):
		m["podIPs"] = []any{map[string]any{"ip": ip}}
	case ip == "" && len(ips) > 0 && first != "":
		m["podIP"] = first
	}
}

// defaultReplicationController is SetDefaults_ReplicationController: the
// selector and the labels default to the template's labels.
func defaultReplicationController(m map[string]any) {
	spec, _ := m["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if len(labels) == 0 {
		return // an empty selector or labels kube sets are not encoded
	}
	if sel, _ := spec["selector"].(map[string]any); len(sel) == 0 {
		spec["selector"] = copyMap(labels)
	}
	defaultLabels(m, labels)
}

// defaultLabels sets the object's labels to a copy of labels when it has none.
func defaultLabels(m map[string]any, labels map[string]any) {
	meta := child(m, "metadata")
	if l, _ := meta["labels"].(map[string]any); meta != nil && len(l) == 0 {
		meta["labels"] = copyMap(labels)
	}
}

// defaultService is SetDefaults_Service.
func defaultService(m map[string]any) {
	spec := child(m, "spec")
	if spec == nil {
		return
	}
	setZero(spec, "sessionAffinity", "None")
	switch str(spec, "sessionAffinity") {
	case "None":
		delete(spec, "sessionAffinityConfig")
	case "ClientIP":
		cfg, _ := spec["sessionAffinityConfig"].(map[string]any)
		ip, _ := cfg["clientIP"].(map[string]any)
		if ip["timeoutSeconds"] == nil {
			spec["sessionAffinityConfig"] = map[string]any{"clientIP": map[string]any{"timeoutSeconds": number(10800)}}
		}
	}
	setZero(spec, "type", "ClusterIP")
	for _, p := range items(spec, "ports") {
		setZero(p, "protocol", "TCP")
		// A zero IntOrString, int 0 or "", takes the port's number.
		if isZero(p["targetPort"]) {
			p["targetPort"] = p["port"]
			if p["targetPort"] == nil {
				p["targetPort"] = number(0)
			}
		}
	}
	typ := str(spec, "type")
	external, _ := spec["externalIPs"].([]any)
	if typ == "LoadBalancer" || typ == "NodePort" || typ == "ClusterIP" && len(external) > 0 {
		setZero(spec, "externalTrafficPolicy", "Cluster")
	}
	if typ == "NodePort" || typ == "LoadBalancer" || typ == "ClusterIP" {
		setNil(spec, "internalTrafficPolicy", "Cluster")
	}
	if typ == "LoadBalancer" {
		setNil(spec, "allocateLoadBalancerNodePorts", true)
		status, _ := m["status"].(map[string]any)
		lb, _ := status["loadBalancer"].(map[string]any)
		for _, ing := range items(lb, "ingress") {
			if str(ing, "ip") != "" {
				setNil(ing, "ipMode", "VIP")
			}
		}
	}
}

// defaultLimitRangeItem is SetDefaults_LimitRangeItem: for containers, the
// default limit falls back to max, the default request to the default limit,
// then to min. kube's empty maps are not kept: its encoder omits them.
func defaultLimitRangeItem(m map[string]any) {
	if str(m, "type") != "Container" {
		return
	}
	fill(m, "defaultRequest", fill(m, "default", m["max"]))
	fill(m, "defaultRequest", m["min"])
}

// fill adds to the map m[key] the entries of from it lacks, and returns it.
func fill(m map[string]any, key string, from any) map[string]any {
	src, _ := from.(map[string]any)
	dst, _ := m[key].(map[string]any)
	for k, v := range src {
		if dst == nil {
			if m[key] != nil {
				return nil // not an object: left to validation
			}
			dst = map[string]any{}
			m[key] = dst
		}
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
	return dst
}
