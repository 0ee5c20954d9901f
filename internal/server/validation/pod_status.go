package validation

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/quantity"
)

// podStatusUpdate is kube's ValidatePodStatusUpdate with the 1.37 default
// gates (ContainerRestartRules, RestartAllContainersOnContainerExits and
// ClearingNominatedNodeNameAfterBinding on), less the checks of the alpha
// node-allocatable resource claim statuses and volume health.
// The spec is the stored one (a status write keeps it).
func podStatusUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	status, oldStatus := object(o, "status"), object(old, "status")
	p := path("status")
	for i, raw := range list(status, "conditions") {
		cond, _ := raw.(map[string]any)
		if n, _ := integer(cond["observedGeneration"]); n < 0 {
			c.invalid(p.child("conditions").index(i).child("observedGeneration"), n, "must be a non-negative integer")
		}
		if t := str(cond, "type"); !slices.Contains(systemPodConditions, t) {
			c.qualifiedName(p.child("conditions").index(i).child("Type"), t) // sic: kube's path
		}
	}
	if nominated := str(status, "nominatedNodeName"); nominated != "" && nominated != str(oldStatus, "nominatedNodeName") {
		for _, msg := range kubefmt.Util.DNS1123Subdomain(nominated) {
			c.invalid(p.child("nominatedNodeName"), nominated, msg)
		}
		if str(object(old, "spec"), "nodeName") != "" {
			c.forbidden(p.child("nominatedNodeName"), "may not be set on pods that are already bound to a node")
		}
	}
	if n, _ := integer(status["observedGeneration"]); n < 0 {
		c.invalid(p.child("observedGeneration"), n, "must be a non-negative integer")
	}
	if qos := str(status, "qosClass"); qos != str(oldStatus, "qosClass") {
		c.invalid(p.child("qosClass"), qos, immutable)
	}
	spec := object(old, "spec")
	if !allContainersCouldRestart(spec) {
		c.stateTransitions(p.child("containerStatuses"), list(status, "containerStatuses"), list(oldStatus, "containerStatuses"), spec, "containers")
		c.stateTransitions(p.child("initContainerStatuses"), list(status, "initContainerStatuses"), list(oldStatus, "initContainerStatuses"), spec, "initContainers")
	}
	c.ephemeralStateTransitions(p.child("ephemeralContainerStatuses"), list(status, "ephemeralContainerStatuses"), list(oldStatus, "ephemeralContainerStatuses"))
	c.resourceClaimStatuses(p.child("resourceClaimStatuses"), list(status, "resourceClaimStatuses"), list(spec, "resourceClaims"))
	c.podIPs(status, oldStatus)
	c.hostIPs(status, oldStatus)
	windows := str(object(spec, "os"), "name") == "windows"
	for _, f := range []string{"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"} {
		c.containerUsers(p.child(f), list(status, f), windows)
	}
	extended, hasExtended := status["extendedResourceClaimStatus"].(map[string]any)
	if hasExtended {
		c.extendedResourceClaimStatus(p.child("extendedResourceClaimStatus"), extended, spec)
	}
	c.allocatedResourcesStatus(p.child("containerStatuses"), list(status, "containerStatuses"), list(spec, "containers"), extended)
	c.allocatedResourcesStatus(p.child("initContainerStatuses"), list(status, "initContainerStatuses"), list(spec, "initContainers"), extended)
	for i, raw := range list(status, "ephemeralContainerStatuses") {
		if len(list(asObject(raw), "allocatedResourcesStatus")) > 0 {
			c.forbidden(p.child("ephemeralContainerStatuses").index(i).child("allocatedResourcesStatus"), "must not be specified in container status")
		}
	}
	return c
}

// extendedResourceClaimStatus is kube's
// validatePodExtendedResourceClaimStatus (DRAExtendedResource is GA): the
// claim is named, and maps at least one request, each once, each of a
// container of the spec to a resource it requests.
func (c *causes) extendedResourceClaimStatus(p path, extended, spec map[string]any) {
	mappings := list(extended, "requestMappings")
	mp := p.child("requestMappings")
	if len(mappings) == 0 {
		c.required(mp, "at least one request mapping is required")
	}
	seen := map[[3]string]bool{}
	for i, raw := range mappings {
		m := asObject(raw)
		ctrName, resName, request := str(m, "containerName"), str(m, "resourceName"), str(m, "requestName")
		// kube's map of containers by name: a container's name over an
		// init container's.
		ctr, found := namedContainer(list(spec, "containers"), ctrName)
		if !found {
			ctr, found = namedContainer(list(spec, "initContainers"), ctrName)
		}
		switch {
		case !found:
			c.invalid(mp.index(i).child("containerName"), ctrName, "must match the name of an entry in spec.initContainers.name or spec.containers.name")
		case object(object(ctr, "resources"), "requests")[resName] == nil:
			c.invalid(mp.index(i).child("resourceName"), resName, "must match the extended resource name of an entry in spec.initContainers.resources.requests or spec.containers.resources.requests")
		}
		for _, msg := range kubefmt.Util.DNS1123Label(request) {
			c.invalid(p.child("requestName"), request, msg) // sic: kube's path
		}
		if k := [3]string{ctrName, resName, request}; seen[k] {
			c.duplicate(mp.index(i).child("containerName"), ctrName)
			c.duplicate(mp.index(i).child("resourceName"), resName)
			c.duplicate(mp.index(i).child("requestName"), request)
		} else {
			seen[k] = true
		}
	}
	claim := str(extended, "resourceClaimName")
	if claim == "" {
		c.required(p.child("resourceClaimName"), "")
		return
	}
	for _, msg := range kubefmt.Util.DNS1123Subdomain(claim) {
		c.invalid(p.child("resourceClaimName"), claim, msg)
	}
}

// allocatedResourcesStatus is kube's
// validateContainerStatusAllocatedResourcesStatus (ResourceHealthStatus
// is beta, on): each names a resource its container (when there is one)
// requests, or one of its claims ("claim:<claim>[/<request>]", or one the
// pod's extended resource claim maps to it), and reports the health of
// distinct resource IDs.
func (c *causes) allocatedResourcesStatus(p path, statuses, containers []any, extended map[string]any) {
	for i, raw := range statuses {
		s := asObject(raw)
		ctr, found := namedContainer(containers, str(s, "name"))
		for j, raw := range list(s, "allocatedResourcesStatus") {
			rs := asObject(raw)
			ap := p.index(i).child("allocatedResourcesStatus").index(j)
			name := str(rs, "name")
			if found {
				if claimRef, ok := strings.CutPrefix(name, "claim:"); ok && !containerHasClaim(ctr, claimRef) && !mappedByExtendedClaim(claimRef, ctr, extended) {
					c.invalid(ap.child("name"), name, "must match one of the container's resource claims as 'claim:<claimName>/<requestName>' when container.resources.claims[*].request is set or 'claim:<claimName>' when it is empty")
				} else if !ok && object(object(ctr, "resources"), "requests")[name] == nil {
					c.invalid(ap.child("name"), name, "must match one of the container's resource requests")
				}
			}
			ids := map[string]bool{}
			for k, raw := range list(rs, "resources") {
				r, rp := asObject(raw), ap.child("resources").index(k)
				if health := str(r, "health"); !slices.Contains(resourceHealths, health) {
					c.notSupported(rp.child("health"), health, resourceHealths...)
				}
				if msg, ok := r["message"].(string); ok && msg == "" {
					c.required(rp.child("message"), "must be non-empty if specified")
				} else if len(msg) > 1024 { // ResourceHealthMessageMaxLength
					c.tooLong(rp.child("message"), 1024)
				}
				id := str(r, "resourceID")
				if ids[id] {
					c.duplicate(rp.child("resourceID"), id)
				}
				ids[id] = true
			}
		}
	}
}

var resourceHealths = []string{"Healthy", "Unhealthy", "Unknown"}

// namedContainer is the container of containers called name.
func namedContainer(containers []any, name string) (map[string]any, bool) {
	for _, raw := range containers {
		if ctr := asObject(raw); str(ctr, "name") == name {
			return ctr, true
		}
	}
	return nil, false
}

// containerHasClaim says whether claimRef ("<claim>" or
// "<claim>/<request>") is one of ctr's resource claims.
func containerHasClaim(ctr map[string]any, claimRef string) bool {
	return slices.ContainsFunc(list(object(ctr, "resources"), "claims"), func(v any) bool {
		claim := asObject(v)
		ref := str(claim, "name")
		if request := str(claim, "request"); request != "" {
			ref += "/" + request
		}
		return ref == claimRef
	})
}

// mappedByExtendedClaim is kube's matchesExtendedResourceClaimStatus: the
// pod's extended resource claim is claimRef's claim and maps its request
// to a resource ctr requests a non-zero amount of.
func mappedByExtendedClaim(claimRef string, ctr, extended map[string]any) bool {
	claim, request, _ := strings.Cut(claimRef, "/")
	if extended == nil || claim == "" || request == "" || claim != str(extended, "resourceClaimName") {
		return false
	}
	requests := object(object(ctr, "resources"), "requests")
	return slices.ContainsFunc(list(extended, "requestMappings"), func(v any) bool {
		m := asObject(v)
		if str(m, "containerName") != str(ctr, "name") || str(m, "requestName") != request {
			return false
		}
		q, ok := requests[str(m, "resourceName")].(string)
		if !ok {
			return false
		}
		v2, err := quantity.Parse(q)
		return err == nil && !v2.IsZero()
	})
}

// resourceClaimStatuses is kube's validatePodResourceClaimStatuses: each
// names, once, a claim of the pod's spec, and a claim that is a DNS
// subdomain.
func (c *causes) resourceClaimStatuses(p path, statuses, claims []any) {
	seen := map[string]bool{}
	for i, raw := range statuses {
		s := asObject(raw)
		name := str(s, "name")
		if !slices.ContainsFunc(claims, func(v any) bool { return str(asObject(v), "name") == name }) {
			c.invalid(p.index(i).child("name"), name, "must match the name of an entry in `spec.resourceClaims`")
		}
		if seen[name] {
			c.duplicate(p.index(i).child("name"), name)
		}
		seen[name] = true
		if claim, ok := s["resourceClaimName"].(string); ok {
			for _, msg := range kubefmt.Util.DNS1123Subdomain(claim) {
				c.invalid(p.index(i).child("resourceClaimName"), claim, msg)
			}
		}
	}
}

// containerUsers is kube's validateContainerStatusUsers: a Linux user
// (none on a Windows pod) whose uid is a uint32 and whose groups are
// valid group IDs.
func (c *causes) containerUsers(p path, statuses []any, windows bool) {
	for i, raw := range statuses {
		linux, ok := object(asObject(raw), "user")["linux"].(map[string]any)
		if !ok {
			continue
		}
		lp := p.index(i).child("user", "linux")
		if windows {
			c.forbidden(lp, "cannot be set for a windows pod")
			continue
		}
		if uid, _ := integer(linux["uid"]); uid < 0 || uid > math.MaxUint32 {
			c.invalid(lp.child("uid"), uid, fmt.Sprintf("must be between 0 and %d, inclusive", int64(math.MaxUint32)))
		}
		c.groupID(lp.child("gid"), linux["gid"])
		for g, gid := range list(linux, "supplementalGroups") {
			c.groupID(lp.child("supplementalGroups").index(g), gid)
		}
	}
}

// groupID is apimachinery's IsValidGroupID.
func (c *causes) groupID(p path, v any) {
	if gid, _ := integer(v); gid < 0 || gid > math.MaxInt32 {
		c.invalid(p, gid, fmt.Sprintf("must be between 0 and %d, inclusive", math.MaxInt32))
	}
}

// systemPodConditions are the condition types kube does not check as
// qualified names.
var systemPodConditions = []string{"PodScheduled", "Ready", "Initialized"}

const notTerminatedAgain = "may not be transitioned to non-terminated state"

// stateTransitions is kube's ValidateContainerStateTransition (and its
// init containers' twin) with ContainerRestartRules on: a terminated
// container's status may leave the terminated state only when its
// container, found in spec's list named containers, would restart.
func (c *causes) stateTransitions(p path, statuses, oldStatuses []any, spec map[string]any, containers string) {
	for i, raw := range oldStatuses {
		was, _ := raw.(map[string]any)
		terminated, ok := terminatedState(was)
		if !ok {
			continue
		}
		name := str(was, "name")
		for _, s := range statuses {
			now, _ := s.(map[string]any)
			if str(now, "name") != name {
				continue
			}
			if _, still := terminatedState(now); !still && !containerRestarts(spec, containers, name, terminated) {
				c.forbidden(p.index(i).child("state"), notTerminatedAgain)
			}
			break
		}
	}
}

// ephemeralStateTransitions is kube's
// ValidateEphemeralContainerStateTransition: an ephemeral container never
// leaves the terminated state, once for each status that says it did.
func (c *causes) ephemeralStateTransitions(p path, statuses, oldStatuses []any) {
	for i, raw := range oldStatuses {
		was, _ := raw.(map[string]any)
		if _, ok := terminatedState(was); !ok {
			continue
		}
		for _, s := range statuses {
			now, _ := s.(map[string]any)
			if _, still := terminatedState(now); str(now, "name") == str(was, "name") && !still {
				c.forbidden(p.index(i).child("state"), notTerminatedAgain)
			}
		}
	}
}

// terminatedState is a container status's state.terminated, and whether
// it is set.
func terminatedState(status map[string]any) (map[string]any, bool) {
	t, ok := object(status, "state")["terminated"].(map[string]any)
	return t, ok
}

// containerRestarts is kube's ContainerShouldRestart for the container
// of spec's list named containers called name (false when there is none),
// after it terminated as terminated says.
func containerRestarts(spec map[string]any, containers, name string, terminated map[string]any) bool {
	exit, _ := integer(terminated["exitCode"])
	i := slices.IndexFunc(list(spec, containers), func(v any) bool {
		ctr, _ := v.(map[string]any)
		return str(ctr, "name") == name
	})
	if i < 0 {
		return false
	}
	ctr, _ := list(spec, containers)[i].(map[string]any)
	if policy, set := ctr["restartPolicy"].(string); set {
		if action, ok := matchingRestartRule(ctr, exit); ok && (action == "Restart" || action == "RestartAllContainers") {
			return true
		}
		if restarts, ok := restartsUnder(policy, exit); ok {
			return restarts
		}
	}
	restarts, ok := restartsUnder(str(spec, "restartPolicy"), exit)
	return restarts || !ok // kube's default policy is Always
}

// restartsUnder says whether policy restarts a container that exited with
// exit, and whether policy is one kube knows.
func restartsUnder(policy string, exit int64) (restarts, known bool) {
	switch policy {
	case "Always":
		return true, true
	case "OnFailure":
		return exit != 0, true
	case "Never":
		return false, true
	}
	return false, false
}

// matchingRestartRule is kube's FindMatchingContainerRestartRule: the
// action of ctr's first restart rule whose exit codes match exit.
func matchingRestartRule(ctr map[string]any, exit int64) (string, bool) {
	for _, raw := range list(ctr, "restartPolicyRules") {
		rule, _ := raw.(map[string]any)
		codes, ok := rule["exitCodes"].(map[string]any)
		if !ok {
			continue
		}
		matched := slices.ContainsFunc(list(codes, "values"), func(v any) bool {
			n, _ := integer(v)
			return n == exit
		})
		if op := str(codes, "operator"); op == "In" && matched || op == "NotIn" && !matched {
			return str(rule, "action"), true
		}
	}
	return "", false
}

// allContainersCouldRestart is kube's AllContainersCouldRestart: a
// container of spec has a rule that restarts them all.
func allContainersCouldRestart(spec map[string]any) bool {
	for _, containers := range []string{"initContainers", "containers"} {
		for _, raw := range list(spec, containers) {
			ctr, _ := raw.(map[string]any)
			for _, rule := range list(ctr, "restartPolicyRules") {
				r, _ := rule.(map[string]any)
				if str(r, "action") == "RestartAllContainers" {
					return true
				}
			}
		}
	}
	return false
}

// podIPs is kube's validatePodIPs but for its check that podIP is
// podIPs[0].ip, which defaulting (SetDefaults_PodStatus) has made true.
func (c *causes) podIPs(status, oldStatus map[string]any) {
	c.statusIPs("status.podIPs", ipsOf(list(status, "podIPs")), ipsOf(list(oldStatus, "podIPs")))
}

// hostIPs is kube's validateHostIPs.
func (c *causes) hostIPs(status, oldStatus map[string]any) {
	ips := ipsOf(list(status, "hostIPs"))
	if len(ips) == 0 {
		return
	}
	p := path("status.hostIPs")
	if str(status, "hostIP") != ips[0] {
		c.invalid(p.index(0).child("ip"), ips[0], "must be equal to `hostIP`")
	}
	c.statusIPs(p, ips, ipsOf(list(oldStatus, "hostIPs")))
}

// statusIPs are the checks a Pod's podIPs and hostIPs share: each a valid
// address (IsValidIPForLegacyField, strict, but for one old already
// holds), and at most one of each family.
func (c *causes) statusIPs(p path, ips, old []string) {
	for i, ip := range ips {
		c.legacyIP(p.index(i), ip, old)
	}
	if len(ips) < 2 {
		return
	}
	var v4, v6 bool
	for i, ip := range ips {
		addr, ok := sloppyAddr(ip)
		if !ok {
			// kube's IsDualStackIPStrings fails on the first it cannot parse.
			c.add(causeTypeInternal, p, fmt.Sprintf("Internal error: failed to check for dual stack with error:invalid IP[%d]: %s", i, ip))
			v4, v6 = false, false
			break
		}
		v4, v6 = v4 || addr.Is4(), v6 || addr.Is6()
	}
	if !v4 || !v6 || len(ips) > 2 {
		c.invalid(p, internalIPs(ips), "may specify no more than one IP for each IP family")
	}
}

// causeTypeInternal is field.ErrorTypeInternal.
const causeTypeInternal api.CauseType = "InternalError"

// ipsOf is the ip of each item of a list of PodIPs or HostIPs.
func ipsOf(items []any) []string {
	ips := make([]string, len(items))
	for i, raw := range items {
		item, _ := raw.(map[string]any)
		ips[i] = str(item, "ip")
	}
	return ips
}

// internalIPs is a list of PodIPs or HostIPs as kube's error renders it:
// its internal type, which has no JSON tags.
func internalIPs(ips []string) any {
	out := make([]struct{ IP string }, len(ips))
	for i, ip := range ips {
		out[i].IP = ip
	}
	return out
}
