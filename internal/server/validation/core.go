package validation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/quantity"
)

// pod is the part of kube's ValidatePodCreate and ValidatePodUpdate that
// does not tie the new pod to the old: its spec.
func pod(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	c.podSpec(spec, "spec", true)
	c.imagesTrimmed(list(spec, "containers"), "spec.containers")
	c.imagesTrimmed(list(spec, "initContainers"), "spec.initContainers")
	return c
}

// podCreate is the create-only rule of kube's ValidatePodCreate on
// ephemeral containers: they come only through the ephemeralcontainers
// subresource.
func podCreate(_ context.Context, o api.Object) []api.StatusCause {
	var c causes
	if len(list(object(o, "spec"), "ephemeralContainers")) > 0 {
		c.forbidden("spec.ephemeralContainers", "cannot be set on create")
	}
	return c
}

// imagesTrimmed is kube's validateContainersOnlyForPod, which it runs on
// pods and on their updates (ValidateContainerUpdates), not on templates.
func (c *causes) imagesTrimmed(containers []any, p path) {
	for i, ctr := range containers {
		ctr, _ := ctr.(map[string]any)
		if image := str(ctr, "image"); strings.TrimSpace(image) != image {
			c.invalid(p.index(i).child("image"), image, "must not have leading or trailing whitespace")
		}
	}
}

// podTemplate is kube's ValidatePodTemplate: the template's pod spec.
func podTemplate(o api.Object) []api.StatusCause {
	var c causes
	c.podTemplateSpec(object(o, "template"), "template")
	return c
}

// replicationController is kube's ValidateReplicationControllerSpec: a
// selector (a map of labels) that is set and selects the template's
// labels, replicas set and not negative, a template whose pods restart
// Always.
func replicationController(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	c.nonNegative(p.child("minReadySeconds"), spec["minReadySeconds"])
	selector := stringMap(spec, "selector")
	if len(selector) == 0 {
		c.required(p.child("selector"), "")
	}
	if spec["replicas"] == nil {
		c.required(p.child("replicas"), "")
	} else {
		c.nonNegative(p.child("replicas"), spec["replicas"])
	}
	template, ok := spec["template"].(map[string]any)
	tp := p.child("template")
	if !ok {
		c.required(tp, "")
		return c
	}
	labels := stringMap(object(template, "metadata"), "labels")
	for k, v := range selector {
		if l, ok := labels[k]; !ok || l != v {
			c.invalid(tp.child("metadata", "labels"), jsonValue{labels}, "`selector` does not match template `labels`")
			break
		}
	}
	c.ownedTemplate(template, tp, "activeDeadlineSeconds in ReplicationController is not Supported")
	return c
}

// podTemplateSpec is kube's ValidatePodTemplateSpec: labels and spec.
func (c *causes) podTemplateSpec(t map[string]any, p path) {
	c.labels(stringMap(object(t, "metadata"), "labels"), p.child("labels"))
	c.podSpec(object(t, "spec"), p.child("spec"), false)
}

// labels is apimachinery's ValidateLabels.
func (c *causes) labels(labels map[string]string, p path) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		for _, msg := range kubefmt.LabelKey(k) {
			c.invalid(p, k, msg)
		}
		for _, msg := range kubefmt.LabelValue(labels[k]) {
			c.invalid(p, labels[k], msg)
		}
	}
}

// The values kube's core validation accepts for its enumerations, in the
// order its messages list them.
var (
	restartPolicies       = []string{"Always", "OnFailure", "Never"}
	dnsPolicies           = []string{"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}
	pullPolicies          = []string{"Always", "IfNotPresent", "Never"}
	portProtocols         = []string{"SCTP", "TCP", "UDP"}
	terminationMsgPolicys = []string{"File", "FallbackToLogsOnError"}
	serviceTypes          = []string{"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}
	sessionAffinities     = []string{"ClientIP", "None"}
	trafficPolicies       = []string{"Cluster", "Local"}
	trafficDistributions  = []string{"PreferClose", "PreferSameZone", "PreferSameNode"} // kube's order
	accessModes           = []string{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}
	volumeModes           = []string{"Block", "Filesystem"}
)

// maxAffinitySeconds is kube's MaxClientIPServiceAffinitySeconds, the
// longest a Service's ClientIP affinity lasts.
const maxAffinitySeconds = 86400

// podSpec is the part of kube's ValidatePodSpec that users meet first:
// volumes, containers and init containers, host ports, restartPolicy and
// dnsPolicy. isPod is the strategy's ResourceIsPod: a pod template's host
// ports are defaulted only when its pods are made.
func (c *causes) podSpec(spec map[string]any, p path, isPod bool) {
	if spec["terminationGracePeriodSeconds"] == nil {
		c.required(p.child("terminationGracePeriodSeconds"), "")
	}
	vols := c.volumes(list(spec, "volumes"), p.child("volumes"))
	containers := list(spec, "containers")
	if len(containers) == 0 {
		c.required(p.child("containers"), "")
	}
	names := map[string]bool{}
	hostPorts := map[string]bool{}
	for _, group := range []string{"containers", "initContainers"} {
		init := group == "initContainers"
		for i, v := range list(spec, group) {
			ctr, _ := v.(map[string]any)
			cp := p.child(group).index(i)
			c.container(ctr, vols, cp)
			c.resizePolicy(list(ctr, "resizePolicy"), cp.child("resizePolicy"), str(spec, "restartPolicy"))
			// Names are unique among containers and init containers.
			name := str(ctr, "name")
			if names[name] {
				c.duplicate(cp.child("name"), name)
			} else if name != "" || !init {
				names[name] = true
			}
			if !init {
				c.hostPorts(ctr, hostPorts, cp)
				continue
			}
			// Init containers run one by one: their host ports conflict
			// only within each.
			c.hostPorts(ctr, map[string]bool{}, cp)
			if str(ctr, "restartPolicy") != "Always" {
				for _, f := range []string{"lifecycle", "livenessProbe", "readinessProbe", "startupProbe"} {
					if ctr[f] != nil {
						c.forbidden(cp.child(f), "may not be set for init containers without restartPolicy=Always")
					}
				}
			}
		}
	}
	c.ephemeralContainers(spec, vols, p.child("ephemeralContainers"))
	if spec["hostNetwork"] == true {
		c.hostNetworkPorts(containers, p.child("containers"), isPod)
	}
	c.enum(p.child("restartPolicy"), str(spec, "restartPolicy"), restartPolicies...)
	c.enum(p.child("dnsPolicy"), str(spec, "dnsPolicy"), dnsPolicies...)
}

// notForEphemeral are the container fields kube's
// allowedEphemeralContainerFields leaves out.
var notForEphemeral = []string{"ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}

// ephemeralContainers is kube's validateEphemeralContainers: each is a
// container (with its image trimmed, as a pod's), named uniquely among
// all containers, targeting a container or an init container, with none
// of notForEphemeral's fields and no subPath.
func (c *causes) ephemeralContainers(spec map[string]any, vols map[string]bool, p path) {
	ephemeral := list(spec, "ephemeralContainers")
	if len(ephemeral) == 0 {
		return
	}
	others := map[string]bool{}
	for _, group := range []string{"containers", "initContainers"} {
		for _, v := range list(spec, group) {
			ctr, _ := v.(map[string]any)
			others[str(ctr, "name")] = true
		}
	}
	all := maps.Clone(others)
	for i, v := range ephemeral {
		ctr, _ := v.(map[string]any)
		ep := p.index(i)
		c.container(ctr, vols, ep)
		c.resizePolicy(list(ctr, "resizePolicy"), ep.child("resizePolicy"), str(spec, "restartPolicy"))
		if image := str(ctr, "image"); strings.TrimSpace(image) != image {
			c.invalid(ep.child("image"), image, "must not have leading or trailing whitespace")
		}
		if name := str(ctr, "name"); all[name] {
			c.duplicate(ep.child("name"), name)
		} else {
			all[name] = true
		}
		if target := str(ctr, "targetContainerName"); target != "" && !others[target] {
			c.notFound(ep.child("targetContainerName"), target)
		}
		for _, f := range notForEphemeral {
			if !empty(ctr[f]) {
				c.forbidden(ep.child(f), "cannot be set for an Ephemeral Container")
			}
		}
		for j, m := range list(ctr, "volumeMounts") {
			m, _ := m.(map[string]any)
			for _, f := range []string{"subPath", "subPathExpr"} {
				if str(m, f) != "" {
					c.forbidden(ep.child("volumeMounts").index(j).child(f), "cannot be set for an Ephemeral Container")
				}
			}
		}
	}
}

// resizePolicy is kube's validateResizePolicy: each of cpu and memory at
// most once, with a known restart policy, NotRequired in a pod that never
// restarts.
func (c *causes) resizePolicy(policies []any, p path, podRestart string) {
	seen := map[string]bool{}
	for i, v := range policies {
		rp, _ := v.(map[string]any)
		name, policy := str(rp, "resourceName"), str(rp, "restartPolicy")
		if seen[name] {
			c.duplicate(p.index(i), name)
		}
		seen[name] = true
		c.enum(p, name, "cpu", "memory")
		c.enum(p, policy, "NotRequired", "RestartContainer")
		if podRestart == "Never" && policy != "NotRequired" {
			c.invalid(p, policy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'")
		}
	}
}

// hostPorts is kube's AccumulateUniqueHostPorts for one container: each
// protocol, host IP and host port is used once among seen.
func (c *causes) hostPorts(ctr map[string]any, seen map[string]bool, p path) {
	for i, v := range list(ctr, "ports") {
		port, _ := v.(map[string]any)
		n, _ := integer(port["hostPort"])
		if n == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", str(port, "protocol"), str(port, "hostIP"), n)
		if seen[key] {
			c.duplicate(p.child("ports").index(i).child("hostPort"), key)
		}
		seen[key] = true
	}
}

// hostNetworkPorts is kube's validatePodHostNetworkDeps: on the host's
// network a container's host port is its container port (or, in a
// template, unset).
func (c *causes) hostNetworkPorts(containers []any, p path, isPod bool) {
	for i, v := range containers {
		ctr, _ := v.(map[string]any)
		for j, pv := range list(ctr, "ports") {
			port, _ := pv.(map[string]any)
			host, _ := integer(port["hostPort"])
			ctrPort, _ := integer(port["containerPort"])
			if (isPod || host != 0) && host != ctrPort {
				c.invalid(p.index(i).child("ports").index(j).child("hostPort"), host, "must match `containerPort` when `hostNetwork` is true")
			}
		}
	}
}

// labelName is a name kube requires to be set and a DNS-1123 label
// (ValidateDNS1123Label): a volume's, a container's.
func (c *causes) labelName(p path, name string) {
	if name == "" {
		c.required(p, "")
		return
	}
	for _, msg := range kubefmt.Util.DNS1123Label(name) {
		c.invalid(p, name, msg)
	}
}

// volumes is kube's ValidateVolumes for names and sources' count; it
// returns the names of the valid volumes, which mounts may name.
func (c *causes) volumes(vols []any, p path) map[string]bool {
	valid := map[string]bool{}
	seen := map[string]bool{}
	for i, v := range vols {
		vol, _ := v.(map[string]any)
		vp := p.index(i)
		before := len(*c)
		c.volumeSource(vol, vp)
		name := str(vol, "name")
		c.labelName(vp.child("name"), name)
		if seen[name] {
			c.duplicate(vp.child("name"), name)
		}
		if len(*c) == before {
			seen[name], valid[name] = true, true
		}
	}
	return valid
}

// volumeSources are the sources of a v1 Volume, in the order kube's
// validateVolumeSource counts them.
var volumeSources = []string{
	"emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs",
	"iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte",
	"downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk",
	"portworxVolume", "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
}

// volumeSourceFields are the names kube's messages give the sources, where
// they differ from the JSON names (kube's typos and Go-style spellings).
var volumeSourceFields = map[string]string{"cephfs": "cephFS", "downwardAPI": "downwarAPI"}

// volumeSource is kube's check that a volume has exactly one source (v1
// defaulting gives one without any an emptyDir).
func (c *causes) volumeSource(vol map[string]any, p path) {
	n := 0
	for _, s := range volumeSources {
		if vol[s] == nil {
			continue
		}
		if n++; n > 1 {
			name := s
			if f, ok := volumeSourceFields[s]; ok {
				name = f
			}
			c.forbidden(p.child(name), "may not specify more than 1 volume type")
		}
	}
	if n == 0 {
		c.required(p, "must specify a volume type")
	}
}

// container is kube's validateContainerCommon, less security contexts,
// lifecycle, probes, resize policies (podSpec checks them) and volume
// devices.
func (c *causes) container(ctr map[string]any, vols map[string]bool, p path) {
	c.labelName(p.child("name"), str(ctr, "name"))
	if str(ctr, "image") == "" {
		c.required(p.child("image"), "")
	}
	c.enum(p.child("terminationMessagePolicy"), str(ctr, "terminationMessagePolicy"), terminationMsgPolicys...)
	c.ports(list(ctr, "ports"), p.child("ports"))
	c.env(list(ctr, "env"), p.child("env"))
	c.mounts(list(ctr, "volumeMounts"), vols, p.child("volumeMounts"))
	c.enum(p.child("imagePullPolicy"), str(ctr, "imagePullPolicy"), pullPolicies...)
	c.resources(object(ctr, "resources"), p.child("resources"))
}

// ports is kube's validateContainerPorts.
func (c *causes) ports(ports []any, p path) {
	names := map[string]bool{}
	for i, v := range ports {
		port, _ := v.(map[string]any)
		pp := p.index(i)
		if name := str(port, "name"); name != "" {
			if msgs := portNameErrors(name); len(msgs) > 0 {
				for _, msg := range msgs {
					c.invalid(pp.child("name"), name, msg)
				}
			} else if names[name] {
				c.duplicate(pp.child("name"), name)
			} else {
				names[name] = true
			}
		}
		if n, _ := integer(port["containerPort"]); n == 0 {
			c.required(pp.child("containerPort"), "")
		} else {
			c.portNumber(pp.child("containerPort"), n)
		}
		if n, _ := integer(port["hostPort"]); n != 0 {
			c.portNumber(pp.child("hostPort"), n)
		}
		c.enum(pp.child("protocol"), str(port, "protocol"), portProtocols...)
	}
}

// portNumber is IsValidPortNum.
func (c *causes) portNumber(p path, n int64) {
	if n < 1 || n > 65535 {
		c.invalid(p, n, "must be between 1 and 65535, inclusive")
	}
}

// portNameErrors is apimachinery's IsValidPortName.
func portNameErrors(name string) []string {
	var msgs []string
	if len(name) > 15 {
		msgs = append(msgs, "must be no more than 15 characters")
	}
	letter, charset := false, true
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z':
			letter = true
		case '0' <= r && r <= '9' || r == '-':
		default:
			charset = false
		}
	}
	if !charset {
		msgs = append(msgs, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
	}
	if !letter {
		msgs = append(msgs, "must contain at least one letter (a-z)")
	}
	if strings.Contains(name, "--") {
		msgs = append(msgs, "must not contain consecutive hyphens")
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		msgs = append(msgs, "must not begin or end with a hyphen")
	}
	return msgs
}

// env is kube's ValidateEnv for names, with the relaxed rule kube 1.37
// always applies (the RelaxedEnvironmentVariableValidation gate is locked on).
func (c *causes) env(vars []any, p path) {
	for i, v := range vars {
		ev, _ := v.(map[string]any)
		name := str(ev, "name")
		if name == "" {
			c.required(p.index(i).child("name"), "")
			continue
		}
		if strings.ContainsFunc(name, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || r == '=' }) {
			c.invalid(p.index(i).child("name"), name, "a valid environment variable name must consist only of printable ASCII characters other than '='")
		}
	}
}

// mounts is kube's ValidateVolumeMounts for names and paths.
func (c *causes) mounts(mounts []any, vols map[string]bool, p path) {
	paths := map[string]bool{}
	for i, v := range mounts {
		m, _ := v.(map[string]any)
		mp := p.index(i)
		name, at := str(m, "name"), str(m, "mountPath")
		if name == "" {
			c.required(mp.child("name"), "")
		}
		if !vols[name] {
			c.notFound(mp.child("name"), name)
		}
		if at == "" {
			c.required(mp.child("mountPath"), "")
		}
		if paths[at] {
			c.invalid(mp.child("mountPath"), at, "must be unique")
		}
		paths[at] = true
	}
}

// resources is the part of kube's validateResourceRequirements that
// compares each request with its limit: at most the limit, and equal to it
// for resources that cannot be overcommitted (hugepages, extended ones).
func (c *causes) resources(res map[string]any, p path) {
	limits := stringMap(res, "limits")
	requests := stringMap(res, "requests")
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		req := requests[name]
		limit, ok := limits[name]
		if !ok {
			if !overcommitAllowed(name) {
				c.required(p.child("limits"), "Limit must be set for non overcommitable resources")
			}
			continue
		}
		cmp, err := quantity.Compare(req, limit)
		if err != nil {
			continue // the schema's quantity format rejected it already
		}
		if cmp != 0 && !overcommitAllowed(name) {
			c.invalid(p.child("requests"), req, fmt.Sprintf("must be equal to %s limit of %s", name, limit))
		} else if cmp > 0 {
			c.invalid(p.child("requests"), req, fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit))
		}
	}
}

// overcommitAllowed is kube's helper.IsOvercommitAllowed: native resources
// (no "/", or "kubernetes.io/" in the name) other than hugepages.
func overcommitAllowed(name string) bool {
	return nativeResource(name) && !strings.HasPrefix(name, "hugepages-")
}

// nativeResource is kube's helper.IsNativeResource: a resource of no
// domain or of kubernetes.io's.
func nativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

// service is the part of kube's ValidateServiceCreate users meet first:
// ports, type, selector, session affinity, external name, cluster IP
// fields, node ports, traffic policy.
func service(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	typ := str(spec, "type")
	ips, _ := spec["clusterIPs"].([]any)
	headless := len(ips) > 0 && ips[0] == "None"
	ports := list(spec, "ports")
	if len(ports) == 0 && !headless && typ != "ExternalName" {
		c.required(p.child("ports"), "")
	}
	switch typ {
	case "LoadBalancer", "NodePort":
		if headless {
			c.invalid(p.child("clusterIPs").index(0), "None", "may not be set to 'None' for "+typ+" services")
		}
	case "ExternalName":
		if len(ips) > 0 {
			c.forbidden(p.child("clusterIPs"), "may not be set for ExternalName services")
		}
		if len(list(spec, "ipFamilies")) > 0 {
			c.forbidden(p.child("ipFamilies"), "may not be set for ExternalName services")
		}
		if spec["ipFamilyPolicy"] != nil {
			c.forbidden(p.child("ipFamilyPolicy"), "may not be set for ExternalName services")
		}
		if cname := strings.TrimSuffix(str(spec, "externalName"), "."); cname == "" {
			c.required(p.child("externalName"), "")
		} else {
			for _, msg := range kubefmt.Util.DNS1123Subdomain(cname) {
				c.invalid(p.child("externalName"), cname, msg)
			}
		}
	}
	names := map[string]bool{}
	for i, v := range ports {
		port, _ := v.(map[string]any)
		c.servicePort(port, len(ports) > 1, names, p.child("ports").index(i))
	}
	if spec["selector"] != nil {
		c.labels(stringMap(spec, "selector"), p.child("selector"))
	}
	c.enum(p.child("sessionAffinity"), str(spec, "sessionAffinity"), sessionAffinities...)
	c = append(c, ServiceClusterIPs(o, nil)...)
	if typ == "" {
		c.required(p.child("type"), "")
	} else if !slices.Contains(serviceTypes, typ) {
		c.notSupported(p.child("type"), typ, serviceTypes...)
	}
	nodePorts, seen := map[string]bool{}, map[string]bool{}
	for i, v := range ports {
		port, _ := v.(map[string]any)
		pp := p.child("ports").index(i)
		protocol := str(port, "protocol")
		nodePort, _ := integer(port["nodePort"])
		if nodePort != 0 {
			if typ == "ClusterIP" {
				c.forbidden(pp.child("nodePort"), "may not be used when `type` is 'ClusterIP'")
			}
			if key := fmt.Sprint(protocol, nodePort); nodePorts[key] {
				c.duplicate(pp.child("nodePort"), nodePort)
			} else {
				nodePorts[key] = true
			}
		}
		number, _ := integer(port["port"])
		if key := fmt.Sprint(protocol, "/", number); seen[key] {
			// kube's value is its internal ServicePort of the protocol and
			// port, whose fields have no JSON names.
			c.duplicate(pp, jsonValue{struct {
				Name, Protocol string
				AppProtocol    *string
				Port           int64
				TargetPort     int
				NodePort       int
			}{Protocol: protocol, Port: number}})
		} else {
			seen[key] = true
		}
	}
	if len(list(spec, "loadBalancerSourceRanges")) > 0 && typ != "LoadBalancer" {
		c.forbidden(p.child("LoadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'") // kube's capital L
	}
	if spec["allocateLoadBalancerNodePorts"] != nil && typ != "LoadBalancer" {
		c.forbidden(p.child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'")
	}
	if class, ok := spec["loadBalancerClass"].(string); ok {
		if typ != "LoadBalancer" {
			c.forbidden(p.child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'")
		} else {
			for _, msg := range kubefmt.LabelKey(class) {
				c.invalid(p.child("loadBalancerClass"), class, msg)
			}
		}
	}
	c.serviceTraffic(spec, p)
	return c
}

// serviceTraffic is kube's validateServiceExternalTrafficPolicy,
// validateServiceInternalTrafficFieldsValue and
// validateServiceTrafficDistribution, and the session affinity timeout
// (what validateClientIPAffinityConfig checks that defaulting leaves).
func (c *causes) serviceTraffic(spec map[string]any, p path) {
	typ := str(spec, "type")
	// kube's ExternallyAccessible.
	accessible := typ == "LoadBalancer" || typ == "NodePort" || typ == "ClusterIP" && len(list(spec, "externalIPs")) > 0
	policy := str(spec, "externalTrafficPolicy")
	if !accessible {
		if policy != "" {
			c.invalid(p.child("externalTrafficPolicy"), jsonValue{policy}, "may only be set for externally-accessible services")
		}
	} else {
		c.enum(p.child("externalTrafficPolicy"), policy, trafficPolicies...)
	}
	hc, _ := integer(spec["healthCheckNodePort"])
	switch {
	case typ != "LoadBalancer" || policy != "Local": // kube's NeedsHealthCheck
		if hc != 0 {
			c.invalid(p.child("healthCheckNodePort"), hc, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'")
		}
	case hc == 0:
		c.required(p.child("healthCheckNodePort"), "")
	default:
		c.portNumber(p.child("healthCheckNodePort"), hc)
	}
	if internal, ok := spec["internalTrafficPolicy"].(string); ok {
		if !slices.Contains(trafficPolicies, internal) {
			c.notSupported(p.child("internalTrafficPolicy"), internal, trafficPolicies...)
		}
	} else if typ == "NodePort" || typ == "LoadBalancer" || typ == "ClusterIP" {
		c.required(p.child("internalTrafficPolicy"), "")
	}
	if d, ok := spec["trafficDistribution"].(string); ok && !slices.Contains(trafficDistributions, d) {
		c.notSupported(p.child("trafficDistribution"), d, trafficDistributions...)
	}
	if str(spec, "sessionAffinity") == "ClientIP" {
		timeout := p.child("sessionAffinityConfig", "clientIP", "timeoutSeconds")
		if n, ok := integer(object(object(spec, "sessionAffinityConfig"), "clientIP")["timeoutSeconds"]); ok && (n <= 0 || n > maxAffinitySeconds) {
			c.invalid(timeout, n, fmt.Sprintf("must be greater than 0 and less than %d", maxAffinitySeconds))
		}
	}
}

// servicePort is kube's validateServicePort.
func (c *causes) servicePort(port map[string]any, requireName bool, names map[string]bool, p path) {
	name := str(port, "name")
	if requireName && name == "" {
		c.required(p.child("name"), "")
	} else if name != "" {
		for _, msg := range kubefmt.Util.DNS1123Label(name) {
			c.invalid(p.child("name"), name, msg)
		}
		if names[name] {
			c.duplicate(p.child("name"), name)
		} else {
			names[name] = true
		}
	}
	number, _ := integer(port["port"])
	c.portNumber(p.child("port"), number)
	c.enum(p.child("protocol"), str(port, "protocol"), portProtocols...)
	if app, ok := port["appProtocol"].(string); ok {
		for _, msg := range kubefmt.LabelKey(app) {
			c.invalid(p.child("appProtocol"), app, msg)
		}
	}
	switch target := port["targetPort"].(type) {
	case string:
		for _, msg := range portNameErrors(target) {
			c.invalid(p.child("targetPort"), target, msg)
		}
	default:
		n, _ := integer(target)
		c.portNumber(p.child("targetPort"), n)
	}
}

// persistentVolumeClaim is the part of kube's
// ValidatePersistentVolumeClaimSpec users meet first: access modes, the
// storage request, the volume mode.
func persistentVolumeClaim(o api.Object) []api.StatusCause {
	var c causes
	c.claimSpec(object(o, "spec"), "spec")
	return c
}

// claimSpec is the part of kube's ValidatePersistentVolumeClaimSpec that
// persistentVolumeClaim replicates, for claims and StatefulSets' claim
// templates.
func (c *causes) claimSpec(spec map[string]any, p path) {
	modes := list(spec, "accessModes")
	if len(modes) == 0 {
		c.required(p.child("accessModes"), "at least 1 access mode is required")
	}
	onePod, other := false, false
	for _, v := range modes {
		mode, _ := v.(string)
		switch {
		case !slices.Contains(accessModes, mode):
			c.notSupported(p.child("accessModes"), mode, accessModes...)
		case mode == "ReadWriteOncePod":
			onePod = true
		default:
			other = true
		}
	}
	if onePod && other {
		c.forbidden(p.child("accessModes"), "may not use ReadWriteOncePod with other access modes")
	}
	storage, ok := stringMap(object(spec, "resources"), "requests")["storage"]
	sp := p.child("resources").key("storage")
	if !ok {
		c.required(sp, "")
	} else if cmp, err := quantity.Compare(storage, "0"); err == nil && cmp <= 0 {
		c.invalid(sp, storage, "must be greater than zero")
	}
	if mode, ok := spec["volumeMode"].(string); ok && !slices.Contains(volumeModes, mode) {
		c.notSupported(p.child("volumeMode"), mode, volumeModes...)
	}
}
