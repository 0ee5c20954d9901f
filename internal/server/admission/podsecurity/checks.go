package podsecurity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// result is one check's verdict on a pod: allowed if reason is empty.
type result struct{ reason, detail string }

var allowed = result{}

// checkFn checks a pod.
type checkFn func(*Pod) result

// check is one check of kube's policy package: its id, its level, and
// its behaviour from each version on (ascending). A restricted check's
// version may replace baseline checks (overrides) at that version.
type check struct {
	id       string
	level    Level
	versions []versioned
}

type versioned struct {
	minor     int
	fn        checkFn
	overrides []string
}

// checks are every check kube 1.37 applies, with the versions at which
// each changed (k8s.io/pod-security-admission/policy check_*.go).
var checks = []check{
	{"allowPrivilegeEscalation", LevelRestricted, []versioned{{8, allowPrivilegeEscalation, nil}, {25, exceptWindows(allowPrivilegeEscalation), nil}}},
	{"appArmorProfile", LevelBaseline, []versioned{{0, appArmorProfile, nil}}},
	{"capabilities_baseline", LevelBaseline, []versioned{{0, capabilitiesBaseline, nil}}},
	{"capabilities_restricted", LevelRestricted, []versioned{
		{22, capabilitiesRestricted, []string{"capabilities_baseline"}},
		{25, exceptWindows(capabilitiesRestricted), []string{"capabilities_baseline"}}}},
	{"hostNamespaces", LevelBaseline, []versioned{{0, hostNamespaces, nil}}},
	{"hostPathVolumes", LevelBaseline, []versioned{{0, hostPathVolumes, nil}}},
	{"hostPorts", LevelBaseline, []versioned{{0, hostPorts, nil}}},
	{"hostProbesAndHostLifecycle", LevelBaseline, []versioned{{34, hostProbesAndLifecycle, nil}}},
	{"privileged", LevelBaseline, []versioned{{0, privileged, nil}}},
	{"procMount", LevelBaseline, []versioned{{0, procMount, nil}, {35, exceptUserNamespace(procMount), nil}}},
	{"procMount_restricted", LevelRestricted, []versioned{{35, procMount, []string{"procMount"}}}},
	{"restrictedVolumes", LevelRestricted, []versioned{{0, restrictedVolumes, []string{"hostPathVolumes"}}}},
	{"runAsNonRoot", LevelRestricted, []versioned{{0, runAsNonRoot, nil}, {35, exceptUserNamespace(runAsNonRoot), nil}}},
	{"runAsUser", LevelRestricted, []versioned{{23, runAsUser, nil}, {35, exceptUserNamespace(runAsUser), nil}}},
	{"seLinuxOptions", LevelBaseline, []versioned{
		{0, seLinuxOptions("", "container_t", "container_init_t", "container_kvm_t"), nil},
		{31, seLinuxOptions("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"), nil}}},
	{"seccompProfile_baseline", LevelBaseline, []versioned{{0, seccompAnnotations, nil}, {19, seccompBaseline, nil}}},
	{"seccompProfile_restricted", LevelRestricted, []versioned{
		{19, seccompRestricted, []string{"seccompProfile_baseline"}},
		{25, exceptWindows(seccompRestricted), []string{"seccompProfile_baseline"}}}},
	{"sysctls", LevelBaseline, []versioned{
		{0, sysctls(sysctlsV1Dot0...), nil},
		{27, sysctls(slices.Concat(sysctlsV1Dot0, sysctlsV1Dot27)...), nil},
		{29, sysctls(slices.Concat(sysctlsV1Dot0, sysctlsV1Dot27, sysctlsV1Dot29)...), nil},
		{32, sysctls(slices.Concat(sysctlsV1Dot0, sysctlsV1Dot27, sysctlsV1Dot29, sysctlsV1Dot32)...), nil},
		{37, sysctls(slices.Concat(sysctlsV1Dot0, sysctlsV1Dot27, sysctlsV1Dot29, sysctlsV1Dot32, sysctlsV1Dot37)...), nil}}},
	{"windowsHostProcess", LevelBaseline, []versioned{{0, windowsHostProcess, nil}}},
}

// The safe sysctls, by the version that allowed them.
var (
	sysctlsV1Dot0 = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	sysctlsV1Dot27 = []string{"net.ipv4.ip_local_reserved_ports"}
	sysctlsV1Dot29 = []string{"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
	sysctlsV1Dot32 = []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
	sysctlsV1Dot37 = []string{"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}
)

// exceptWindows allows windows pods, whose API validation already
// refuses the fields the check reads (kube's 1.25 checks).
func exceptWindows(fn checkFn) checkFn {
	return func(p *Pod) result {
		if p.Spec.windows() {
			return allowed
		}
		return fn(p)
	}
}

// exceptUserNamespace allows pods in a user namespace (hostUsers=false,
// kube's 1.35 checks).
func exceptUserNamespace(fn checkFn) checkFn {
	return func(p *Pod) result {
		if p.Spec.userNamespace() {
			return allowed
		}
		return fn(p)
	}
}

// names collects container names and a sorted set of bad values.
type names struct {
	list   []string
	values map[string]bool
}

func (n *names) add(name string, values ...string) {
	n.list = append(n.list, name)
	n.value(values...)
}

func (n *names) value(values ...string) {
	if n.values == nil {
		n.values = map[string]bool{}
	}
	for _, v := range values {
		n.values[v] = true
	}
}

// containers is `container "a"` or `containers "a", "b"`.
func (n *names) containers() string {
	return plural("container", "containers", len(n.list)) + " " + joinQuote(n.list)
}

func (n *names) sorted() []string {
	out := make([]string, 0, len(n.values))
	for v := range n.values {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// setters is kube's "pod and containers "a", "b"" list of what set a
// forbidden value.
func setters(pod bool, bad *names) []string {
	var out []string
	if pod {
		out = append(out, "pod")
	}
	if len(bad.list) > 0 {
		out = append(out, bad.containers())
	}
	return out
}

func allowPrivilegeEscalation(p *Pod) result {
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			bad.add(c.Name)
		}
	})
	if len(bad.list) == 0 {
		return allowed
	}
	return result{"allowPrivilegeEscalation != false", bad.containers() + " must set securityContext.allowPrivilegeEscalation=false"}
}

func appArmorProfile(p *Pod) result {
	okType := func(t string) bool { return t == "RuntimeDefault" || t == "Localhost" }
	var bad names
	podBad := false
	if sc := p.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !okType(sc.AppArmorProfile.Type) {
		podBad = true
		bad.value(sc.AppArmorProfile.Type)
	}
	p.Spec.containers(func(c *Container) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !okType(sc.AppArmorProfile.Type) {
			bad.add(c.Name, sc.AppArmorProfile.Type)
		}
	})
	who := setters(podBad, &bad)
	values := bad.sorted()
	var annotations []string
	for k, v := range p.Metadata.Annotations {
		if strings.HasPrefix(k, "container.apparmor.security.beta.kubernetes.io/") &&
			v != "" && v != "runtime/default" && !strings.HasPrefix(v, "localhost/") {
			annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(annotations) > 0 {
		slices.Sort(annotations)
		values = append(values, annotations...)
		who = append(who, plural("annotation", "annotations", len(annotations)))
	}
	if len(who) == 0 {
		return allowed
	}
	return result{plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
		strings.Join(who, " and ") + " must not set AppArmor profile type to " + joinQuote(values)}
}

// defaultCapabilities are the capabilities baseline lets containers add.
var defaultCapabilities = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

func capabilitiesBaseline(p *Pod) result {
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return
		}
		var extra []string
		for _, cap := range c.SecurityContext.Capabilities.Add {
			if !slices.Contains(defaultCapabilities, cap) {
				extra = append(extra, cap)
			}
		}
		if len(extra) > 0 {
			bad.add(c.Name, extra...)
		}
	})
	if len(bad.list) == 0 {
		return allowed
	}
	return result{"non-default capabilities", bad.containers() + " must not include " + joinQuote(bad.sorted()) + " in securityContext.capabilities.add"}
}

func capabilitiesRestricted(p *Pod) result {
	var noDrop, adding names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			noDrop.add(c.Name)
			return
		}
		caps := c.SecurityContext.Capabilities
		if !slices.Contains(caps.Drop, "ALL") {
			noDrop.add(c.Name)
		}
		var extra []string
		for _, cap := range caps.Add {
			if cap != "NET_BIND_SERVICE" {
				extra = append(extra, cap)
			}
		}
		if len(extra) > 0 {
			adding.add(c.Name, extra...)
		}
	})
	var details []string
	if len(noDrop.list) > 0 {
		details = append(details, noDrop.containers()+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(adding.list) > 0 {
		details = append(details, adding.containers()+" must not include "+joinQuote(adding.sorted())+" in securityContext.capabilities.add")
	}
	if len(details) == 0 {
		return allowed
	}
	return result{"unrestricted capabilities", strings.Join(details, "; ")}
}

func hostNamespaces(p *Pod) result {
	var set []string
	for _, ns := range []struct {
		on   bool
		name string
	}{{p.Spec.HostNetwork, "hostNetwork=true"}, {p.Spec.HostPID, "hostPID=true"}, {p.Spec.HostIPC, "hostIPC=true"}} {
		if ns.on {
			set = append(set, ns.name)
		}
	}
	if len(set) == 0 {
		return allowed
	}
	return result{"host namespaces", strings.Join(set, ", ")}
}

func hostPathVolumes(p *Pod) result {
	var bad []string
	for _, v := range p.Spec.Volumes {
		if v.Source == "hostPath" {
			bad = append(bad, v.Name)
		}
	}
	if len(bad) == 0 {
		return allowed
	}
	return result{"hostPath volumes", plural("volume", "volumes", len(bad)) + " " + joinQuote(bad)}
}

func hostPorts(p *Pod) result {
	var bad names
	p.Spec.containers(func(c *Container) {
		var ports []string
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				ports = append(ports, strconv.Itoa(int(port.HostPort)))
			}
		}
		if len(ports) > 0 {
			bad.add(c.Name, ports...)
		}
	})
	if len(bad.list) == 0 {
		return allowed
	}
	ports := bad.sorted() // as strings, as kube sorts them
	return result{"hostPort", fmt.Sprintf("%s %s %s %s", bad.containers(), plural("uses", "use", len(bad.list)),
		plural("hostPort", "hostPorts", len(ports)), strings.Join(ports, ", "))}
}

func hostProbesAndLifecycle(p *Pod) result {
	var bad names
	hosts := func(h *handler) []string {
		var out []string
		if h != nil && h.HTTPGet != nil && h.HTTPGet.Host != "" {
			out = append(out, h.HTTPGet.Host)
		}
		if h != nil && h.TCPSocket != nil && h.TCPSocket.Host != "" {
			out = append(out, h.TCPSocket.Host)
		}
		return out
	}
	containers := map[string]bool{}
	p.Spec.containers(func(c *Container) {
		handlers := []*handler{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe}
		if c.Lifecycle != nil {
			handlers = append(handlers, c.Lifecycle.PostStart, c.Lifecycle.PreStop)
		}
		for _, h := range handlers {
			if hs := hosts(h); len(hs) > 0 {
				containers[c.Name] = true
				bad.value(hs...)
			}
		}
	})
	if len(containers) == 0 {
		return allowed
	}
	// kube lists these containers as a sorted set, not in pod order.
	named := names{values: containers}
	bad.list = named.sorted()
	forbidden := bad.sorted()
	return result{"probe or lifecycle host", fmt.Sprintf("%s %s %s %s", bad.containers(), plural("uses", "use", len(bad.list)),
		plural("probe or lifecycle host", "probe or lifecycle hosts", len(forbidden)), joinQuote(forbidden))}
}

func privileged(p *Pod) result {
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			bad.add(c.Name)
		}
	})
	if len(bad.list) == 0 {
		return allowed
	}
	return result{"privileged", bad.containers() + " must not set securityContext.privileged=true"}
}

func procMount(p *Pod) result {
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext != nil && c.SecurityContext.ProcMount != nil && *c.SecurityContext.ProcMount != "Default" {
			bad.add(c.Name, *c.SecurityContext.ProcMount)
		}
	})
	if len(bad.list) == 0 {
		return allowed
	}
	return result{"procMount", bad.containers() + " must not set securityContext.procMount to " + joinQuote(bad.sorted())}
}

// allowedVolumeSources are the volume sources restricted allows.
var allowedVolumeSources = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
	"persistentVolumeClaim", "projected", "secret"}

// restrictedVolumeSources are the other sources kube names; any other
// field is "unknown".
var restrictedVolumeSources = []string{"hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
	"iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume",
	"quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos"}

func restrictedVolumes(p *Pod) result {
	var bad names
	for _, v := range p.Spec.Volumes {
		switch {
		case slices.Contains(allowedVolumeSources, v.Source):
		case slices.Contains(restrictedVolumeSources, v.Source):
			bad.add(v.Name, v.Source)
		default:
			bad.add(v.Name, "unknown")
		}
	}
	if len(bad.list) == 0 {
		return allowed
	}
	types := bad.sorted()
	return result{"restricted volume types", fmt.Sprintf("%s %s %s %s %s", plural("volume", "volumes", len(bad.list)), joinQuote(bad.list),
		plural("uses", "use", len(bad.list)), plural("restricted volume type", "restricted volume types", len(types)), joinQuote(types))}
}

func runAsNonRoot(p *Pod) result {
	podBad, podSet := false, false
	if sc := p.Spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		podBad, podSet = !*sc.RunAsNonRoot, *sc.RunAsNonRoot
	}
	var explicit, implicit names
	p.Spec.containers(func(c *Container) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicit.add(c.Name)
			}
		case !podSet:
			implicit.add(c.Name)
		}
	})
	if who := setters(podBad, &explicit); len(who) > 0 {
		return result{"runAsNonRoot != true", strings.Join(who, " and ") + " must not set securityContext.runAsNonRoot=false"}
	}
	if len(implicit.list) > 0 {
		return result{"runAsNonRoot != true", "pod or " + implicit.containers() + " must set securityContext.runAsNonRoot=true"}
	}
	return allowed
}

func runAsUser(p *Pod) result {
	root := func(uid *int64) bool { return uid != nil && *uid == 0 }
	podBad := p.Spec.SecurityContext != nil && root(p.Spec.SecurityContext.RunAsUser)
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext != nil && root(c.SecurityContext.RunAsUser) {
			bad.add(c.Name)
		}
	})
	if who := setters(podBad, &bad); len(who) > 0 {
		return result{"runAsUser=0", strings.Join(who, " and ") + " must not set runAsUser=0"}
	}
	return allowed
}

func seLinuxOptions(allowedTypes ...string) checkFn {
	return func(p *Pod) result {
		var types names
		user, role := false, false
		valid := func(o *seLinux) bool {
			ok := true
			if !slices.Contains(allowedTypes, o.Type) {
				ok = false
				types.value(o.Type)
			}
			if o.User != "" {
				ok, user = false, true
			}
			if o.Role != "" {
				ok, role = false, true
			}
			return ok
		}
		podBad := p.Spec.SecurityContext != nil && p.Spec.SecurityContext.SELinuxOptions != nil && !valid(p.Spec.SecurityContext.SELinuxOptions)
		var bad names
		p.Spec.containers(func(c *Container) {
			if c.SecurityContext != nil && c.SecurityContext.SELinuxOptions != nil && !valid(c.SecurityContext.SELinuxOptions) {
				bad.add(c.Name)
			}
		})
		who := setters(podBad, &bad)
		if len(who) == 0 {
			return allowed
		}
		var what []string
		if bad := types.sorted(); len(bad) > 0 {
			what = append(what, plural("type", "types", len(bad))+" "+joinQuote(bad))
		}
		if user {
			what = append(what, "user may not be set")
		}
		if role {
			what = append(what, "role may not be set")
		}
		return result{"seLinuxOptions", strings.Join(who, " and ") + " set forbidden securityContext.seLinuxOptions: " + strings.Join(what, "; ")}
	}
}

// seccompAnnotations is the baseline check before 1.19, on the alpha
// seccomp annotations.
func seccompAnnotations(p *Pod) result {
	valid := func(v string) bool {
		return v == "runtime/default" || v == "docker/default" || strings.HasPrefix(v, "localhost/")
	}
	var bad names
	note := func(key string) {
		if v, ok := p.Metadata.Annotations[key]; ok && !valid(v) {
			bad.value(fmt.Sprintf("%s=%q", key, v))
		}
	}
	note("seccomp.security.alpha.kubernetes.io/pod")
	p.Spec.containers(func(c *Container) { note("container.seccomp.security.alpha.kubernetes.io/" + c.Name) })
	if len(bad.values) == 0 {
		return allowed
	}
	return result{"seccompProfile", "forbidden " + plural("annotation", "annotations", len(bad.values)) + " " + strings.Join(bad.sorted(), ", ")}
}

func validSeccomp(t string) bool { return t == "Localhost" || t == "RuntimeDefault" }

// seccompProfiles finds the pod and the containers that set a forbidden
// seccomp profile, whether the pod sets an allowed one, and the
// containers that set none.
func seccompProfiles(p *Pod) (who []string, bad, unset names) {
	podBad, podSet := false, false
	if sc := p.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if validSeccomp(sc.SeccompProfile.Type) {
			podSet = true
		} else {
			podBad = true
			bad.value(sc.SeccompProfile.Type)
		}
	}
	var containers names
	p.Spec.containers(func(c *Container) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.SeccompProfile != nil:
			if !validSeccomp(sc.SeccompProfile.Type) {
				containers.add(c.Name)
				bad.value(sc.SeccompProfile.Type)
			}
		case !podSet:
			unset.add(c.Name)
		}
	})
	return setters(podBad, &containers), bad, unset
}

func seccompBaseline(p *Pod) result { return seccomp(p, false) }

func seccompRestricted(p *Pod) result { return seccomp(p, true) }

// seccomp refuses forbidden seccomp profiles and, if required, containers
// that have none (neither their own nor the pod's).
func seccomp(p *Pod, required bool) result {
	who, bad, unset := seccompProfiles(p)
	if len(who) > 0 {
		return result{"seccompProfile", strings.Join(who, " and ") + " must not set securityContext.seccompProfile.type to " + joinQuote(bad.sorted())}
	}
	if required && len(unset.list) > 0 {
		return result{"seccompProfile", "pod or " + unset.containers() + ` must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`}
	}
	return allowed
}

func sysctls(safe ...string) checkFn {
	return func(p *Pod) result {
		var bad []string
		if sc := p.Spec.SecurityContext; sc != nil {
			for _, s := range sc.Sysctls {
				if !slices.Contains(safe, s.Name) {
					bad = append(bad, s.Name)
				}
			}
		}
		if len(bad) == 0 {
			return allowed
		}
		return result{"forbidden sysctls", strings.Join(bad, ", ")}
	}
}

func windowsHostProcess(p *Pod) result {
	hostProcess := func(o *securityOptions) bool {
		return o.WindowsOptions != nil && o.WindowsOptions.HostProcess != nil && *o.WindowsOptions.HostProcess
	}
	var bad names
	p.Spec.containers(func(c *Container) {
		if c.SecurityContext != nil && hostProcess(&c.SecurityContext.securityOptions) {
			bad.add(c.Name)
		}
	})
	podBad := p.Spec.SecurityContext != nil && hostProcess(&p.Spec.SecurityContext.securityOptions)
	who := setters(podBad, &bad)
	if len(who) == 0 {
		return allowed
	}
	return result{"hostProcess", strings.Join(who, " and ") + " must not set securityContext.windowsOptions.hostProcess=true"}
}
