package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/validation"
)

// txn is what one write allocated (freed if the write fails) and what it
// will free once stored.
type txn struct {
	a                *Allocator
	ips, freeIPs     []string
	ports, freePorts []int
}

// finish frees what the write no longer needs: its new allocations if it
// failed, what the old object held and the new one does not if stored.
func (t *txn) finish(stored bool) {
	ips, ports := t.ips, t.ports
	if stored {
		ips, ports = t.freeIPs, t.freePorts
	}
	for _, ip := range ips {
		t.a.releaseIP(ip)
	}
	for _, p := range ports {
		t.a.releasePort(p)
	}
}

// Begin allocates what the write of Service svc needs (old is the stored
// one on update, nil on create), filling in clusterIP, clusterIPs,
// ipFamilies, ipFamilyPolicy, the ports' nodePorts and
// healthCheckNodePort as kube's beginCreate and beginUpdate do, before the
// Service is validated. The write must call finish with whether it stored
// the Service. A dry run allocates nothing and finish does nothing.
func (a *Allocator) Begin(ctx context.Context, svc, old api.Object) (finish func(stored bool), err error) {
	spec := resource.MapAt(svc, "spec")
	var oldSpec map[string]any
	if old != nil {
		oldSpec, _ = old["spec"].(map[string]any)
		dropTypeDependentFields(svc, spec, oldSpec)
		patchAllocatedValues(spec, oldSpec)
	}
	normalizeClusterIPs(spec, oldSpec)
	if err := a.initIPFamilies(svc, old); err != nil {
		return nil, err
	}
	t := &txn{a: a}
	ok := false
	defer func() {
		if !ok {
			t.finish(false)
		}
	}()
	if err := a.clusterIPs(ctx, t, svc, spec, oldSpec); err != nil {
		return nil, err
	}
	if err := a.nodePorts(ctx, t, svc, spec, oldSpec); err != nil {
		return nil, err
	}
	ok = true
	return t.finish, nil
}

// Release frees what the deleted Service svc held (kube's afterDelete).
func (a *Allocator) Release(svc api.Object) {
	spec, _ := svc["spec"].(map[string]any)
	if holdsAddress(spec) {
		for _, ip := range api.Strings(spec["clusterIPs"]) {
			a.releaseIP(ip)
		}
	}
	for _, p := range nodePortsOf(spec) {
		a.releasePort(p)
	}
	if needsHealthCheck(spec) {
		if hc := intOf(spec["healthCheckNodePort"]); hc > 0 {
			a.releasePort(hc)
		}
	}
}

// clusterIPs is kube's allocClusterIPs on create and updateClusterIPs on
// update.
func (a *Allocator) clusterIPs(ctx context.Context, t *txn, svc api.Object, spec, oldSpec map[string]any) error {
	if oldSpec == nil || str(oldSpec, "type") == "ExternalName" && str(spec, "type") != "ExternalName" {
		return a.allocClusterIPs(ctx, t, svc, spec, 0)
	}
	if headless(oldSpec) {
		return nil
	}
	oldIPs, oldFamilies := api.Strings(oldSpec["clusterIPs"]), api.Strings(oldSpec["ipFamilies"])
	families := api.Strings(spec["ipFamilies"])
	switch {
	case str(spec, "type") == "ExternalName":
		t.freeIPs = append(t.freeIPs, oldIPs...)
	case len(oldFamilies) == 1 && len(families) == 2: // upgraded to dual stack
		return a.allocClusterIPs(ctx, t, svc, spec, 1)
	case len(oldFamilies) == 2 && len(families) == 1 && len(oldIPs) == 2: // downgraded
		t.freeIPs = append(t.freeIPs, oldIPs[1])
	}
	return nil
}

// allocClusterIPs gives svc an address of each of its families from the
// from-th on, the one it asks for (clusterIPs[i]) or a free one.
func (a *Allocator) allocClusterIPs(ctx context.Context, t *txn, svc api.Object, spec map[string]any, from int) error {
	if str(spec, "type") == "ExternalName" || headless(spec) {
		return nil
	}
	families, ips := api.Strings(spec["ipFamilies"]), api.Strings(spec["clusterIPs"])
	for len(ips) < len(families) {
		ips = append(ips, "")
	}
	for i := from; i < len(families); i++ {
		if ips[i] != "" {
			ip, err := netip.ParseAddr(ips[i])
			if err == nil {
				err = a.allocateIP(ctx, svc, ip)
			}
			if err != nil {
				return invalid(svc, "spec.clusterIPs", spec["clusterIPs"], fmt.Sprintf("failed to allocate IP %s: %v", ips[i], err))
			}
		} else {
			r, _ := a.rangeFor(families[i]) // initIPFamilies checked it
			ip, err := a.allocateNextIP(ctx, svc, r)
			if errors.Is(err, errFull) {
				return apierror.Internal(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name(), err))
			}
			if err != nil {
				return invalid(svc, "spec.clusterIPs", spec["clusterIPs"], fmt.Sprintf("failed to allocate IP: %v", err))
			}
			ips[i] = ip.String()
		}
		if !registry.IsDryRun(ctx) {
			t.ips = append(t.ips, ips[i])
		}
	}
	spec["clusterIPs"] = api.StringList(ips)
	spec["clusterIP"] = ips[0]
	return nil
}

// nodePorts is kube's txnAllocNodePorts on create and txnUpdateNodePorts on
// update.
func (a *Allocator) nodePorts(ctx context.Context, t *txn, svc api.Object, spec, oldSpec map[string]any) error {
	typ := str(spec, "type")
	if oldSpec != nil && needsNodePorts(str(oldSpec, "type")) && (typ == "ExternalName" || typ == "ClusterIP") {
		t.freePorts = append(t.freePorts, nodePortsOf(oldSpec)...)
	}
	if needsNodePorts(typ) {
		if err := a.allocNodePorts(ctx, t, svc, spec, nodePortsOf(oldSpec), oldSpec == nil); err != nil {
			return err
		}
	}
	needs, needed := needsHealthCheck(spec), oldSpec != nil && needsHealthCheck(oldSpec)
	switch {
	case needs && !needed:
		hc := intOf(spec["healthCheckNodePort"])
		var err error
		if hc != 0 {
			if err = a.allocatePort(ctx, svc, hc); err != nil {
				err = fmt.Errorf("failed to allocate requested HealthCheck NodePort %d: %w", hc, err)
			}
		} else if hc, err = a.allocateNextPort(ctx, svc); err != nil {
			err = fmt.Errorf("failed to allocate a HealthCheck NodePort %d: %w", hc, err)
		}
		if err != nil {
			return apierror.Internal(err)
		}
		spec["healthCheckNodePort"] = hc
		t.took(ctx, hc)
	case needed && !needs:
		t.freePorts = append(t.freePorts, intOf(oldSpec["healthCheckNodePort"]))
	}
	return nil
}

// allocNodePorts gives each port of a NodePort or LoadBalancer Service its
// node port, as kube's initNodePorts (create) and updateNodePorts: the one
// it asks for, one a port of the same number has (TCP and UDP of one port
// share it), or a free one; on create, a node port asked for by ports of
// two numbers is taken for the second, as kube's; on update, the node
// ports the old Service held are kept and those it no longer uses freed.
func (a *Allocator) allocNodePorts(ctx context.Context, t *txn, svc api.Object, spec map[string]any, held []int, create bool) error {
	ports, _ := spec["ports"].([]any)
	byPort := map[int]int{}
	mine := map[int]bool{}
	for _, p := range held {
		mine[p] = true
	}
	allocate := shouldAllocateNodePorts(spec)
	for i, p := range ports {
		port, _ := p.(map[string]any)
		if port == nil {
			continue
		}
		np, number := intOf(port["nodePort"]), intOf(port["port"])
		if np == 0 {
			np = byPort[number]
		}
		if np == 0 && allocate {
			np = requestedNodePort(ports[i:], number)
		}
		switch {
		case np == 0 && !allocate:
			continue
		case np == 0:
			next, err := a.allocateNextPort(ctx, svc)
			if err != nil {
				return apierror.Internal(fmt.Errorf("failed to allocate a nodePort: %w", err))
			}
			np = next
			t.took(ctx, np)
			mine[np] = true
		case !mine[np]:
			if err := a.allocatePort(ctx, svc, np); err != nil {
				return invalid(svc, fmt.Sprintf("spec.ports[%d].nodePort", i), int64(np), err.Error())
			}
			t.took(ctx, np)
			mine[np] = true
		case create && byPort[number] != np:
			return invalid(svc, fmt.Sprintf("spec.ports[%d].nodePort", i), int64(np), errPortAllocated.Error())
		}
		port["nodePort"] = np
		byPort[number] = np
	}
	used := map[int]bool{}
	for _, p := range nodePortsOf(spec) {
		used[p] = true
	}
	for _, p := range held {
		if !used[p] {
			t.freePorts = append(t.freePorts, p)
		}
	}
	return nil
}

// took records port as taken by this write (not by a dry run's).
func (t *txn) took(ctx context.Context, port int) {
	if !registry.IsDryRun(ctx) {
		t.ports = append(t.ports, port)
	}
}

// requestedNodePort is the node port a port of the given number asks for
// among ports (kube's findRequestedNodePort), 0 if none.
func requestedNodePort(ports []any, number int) int {
	for _, p := range ports {
		port, _ := p.(map[string]any)
		if intOf(port["port"]) == number && intOf(port["nodePort"]) != 0 {
			return intOf(port["nodePort"])
		}
	}
	return 0
}

// initIPFamilies is kube's initIPFamilyFields: ipFamilyPolicy defaulted
// (the old one on update; RequireDualStack for a headless Service without
// selector; else SingleStack), the clusterIP fields checked, ipFamilies
// inferred from the addresses asked for, else the cluster's default
// family, and the second family added when dual stack is preferred or
// required on a dual-stack cluster.
func (a *Allocator) initIPFamilies(svc, old api.Object) error {
	spec := resource.MapAt(svc, "spec")
	if str(spec, "type") == "ExternalName" {
		return nil
	}
	var oldSpec map[string]any
	if old != nil {
		oldSpec, _ = old["spec"].(map[string]any)
	}
	if spec["ipFamilyPolicy"] == nil {
		switch {
		case oldSpec != nil && oldSpec["ipFamilyPolicy"] != nil:
			spec["ipFamilyPolicy"] = oldSpec["ipFamilyPolicy"]
		case headless(spec) && len(mapOf(spec, "selector")) == 0:
			spec["ipFamilyPolicy"] = "RequireDualStack"
		default:
			spec["ipFamilyPolicy"] = "SingleStack"
		}
	}
	if causes := validation.ServiceClusterIPs(svc, old); len(causes) > 0 {
		return apierror.Invalid("", "Service", svc.Name(), causes)
	}
	policy := str(spec, "ipFamilyPolicy")
	ips, families := api.Strings(spec["clusterIPs"]), api.Strings(spec["ipFamilies"])
	var causes []api.StatusCause
	bad := func(field string, value any, msg string) {
		causes = append(causes, validation.InvalidCause(field, value, msg))
	}
	if oldSpec != nil {
		if policy == "SingleStack" {
			if reflect.DeepEqual(spec["clusterIPs"], oldSpec["clusterIPs"]) && len(ips) > 1 {
				ips = ips[:1]
				spec["clusterIPs"] = api.StringList(ips)
			}
			if reflect.DeepEqual(spec["ipFamilies"], oldSpec["ipFamilies"]) && len(families) > 1 {
				families = families[:1]
				spec["ipFamilies"] = api.StringList(families)
			}
		} else {
			if len(ips) < len(api.Strings(oldSpec["clusterIPs"])) {
				bad("spec.ipFamilyPolicy", policy, "must be 'SingleStack' to release the secondary cluster IP")
			}
			if len(families) < len(api.Strings(oldSpec["ipFamilies"])) {
				bad("spec.ipFamilyPolicy", policy, "must be 'SingleStack' to release the secondary IP family")
			}
		}
	}
	if policy == "SingleStack" {
		if len(ips) == 2 {
			bad("spec.ipFamilyPolicy", policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified")
		}
		if len(families) == 2 {
			bad("spec.ipFamilyPolicy", policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")
		}
	}
	for i, s := range ips {
		if s == "None" {
			break
		}
		if i < len(families) {
			continue
		}
		ip, _ := netip.ParseAddr(s) // ServiceClusterIPs checked it
		fam := familyOf(ip)
		if _, ok := a.rangeFor(fam); !ok {
			bad(fmt.Sprintf("spec.clusterIPs[%d]", i), spec["clusterIPs"], fam+" is not configured on this cluster")
		} else {
			families = append(families, fam)
		}
	}
	if len(causes) > 0 {
		return apierror.Invalid("", "Service", svc.Name(), causes)
	}
	defer func() {
		if len(families) > 0 {
			spec["ipFamilies"] = api.StringList(families)
		}
	}()
	if headless(spec) && len(mapOf(spec, "selector")) == 0 {
		if len(families) == 0 {
			families = []string{a.ranges[0].family()}
		}
		if len(families) < 2 && policy != "SingleStack" {
			families = append(families, otherFamily(families[0]))
		}
		return nil
	}
	if policy == "RequireDualStack" && len(a.ranges) < 2 {
		bad("spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services")
	}
	for i, f := range families {
		if _, ok := a.rangeFor(f); !ok {
			bad(fmt.Sprintf("spec.ipFamilies[%d]", i), validation.Named(f), "not configured on this cluster")
		}
	}
	if len(causes) > 0 {
		families = nil
		return apierror.Invalid("", "Service", svc.Name(), causes)
	}
	if len(families) == 0 {
		families = []string{a.ranges[0].family()}
	}
	if policy != "SingleStack" && len(families) == 1 && len(a.ranges) == 2 {
		families = append(families, otherFamily(families[0]))
	}
	return nil
}

// dropTypeDependentFields is kube's (its Service strategy's
// PrepareForUpdate): a type change clears what the new type does not use
// and the client left as it was (Begin frees it), and a Service that is no
// longer a LoadBalancer loses its load balancer status.
func dropTypeDependentFields(svc api.Object, spec, oldSpec map[string]any) {
	typ, oldTyp := str(spec, "type"), str(oldSpec, "type")
	if oldTyp != "ExternalName" && typ == "ExternalName" {
		if spec["clusterIP"] == oldSpec["clusterIP"] && slices.Equal(api.Strings(spec["clusterIPs"]), api.Strings(oldSpec["clusterIPs"])) {
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
		}
		if slices.Equal(api.Strings(spec["ipFamilies"]), api.Strings(oldSpec["ipFamilies"])) {
			delete(spec, "ipFamilies")
		}
		if spec["ipFamilyPolicy"] == oldSpec["ipFamilyPolicy"] {
			delete(spec, "ipFamilyPolicy")
		}
	}
	if shouldAllocateNodePorts(oldSpec) && !shouldAllocateNodePorts(spec) && subset(nodePortsOf(spec), nodePortsOf(oldSpec)) {
		for _, p := range list(spec, "ports") {
			delete(p, "nodePort")
		}
	}
	if needsHealthCheck(oldSpec) && !needsHealthCheck(spec) && intOf(spec["healthCheckNodePort"]) == intOf(oldSpec["healthCheckNodePort"]) {
		delete(spec, "healthCheckNodePort")
	}
	if oldTyp == "LoadBalancer" && typ != "LoadBalancer" {
		if a, b := spec["allocateLoadBalancerNodePorts"], oldSpec["allocateLoadBalancerNodePorts"]; a != nil && a == b {
			delete(spec, "allocateLoadBalancerNodePorts")
		}
		if spec["loadBalancerClass"] == oldSpec["loadBalancerClass"] {
			delete(spec, "loadBalancerClass")
		}
	}
	if externallyAccessible(oldSpec) && !externallyAccessible(spec) && spec["externalTrafficPolicy"] == oldSpec["externalTrafficPolicy"] {
		delete(spec, "externalTrafficPolicy")
	}
	if typ != "LoadBalancer" {
		status := maps.Clone(mapOf(svc, "status")) // the stored object's, kept by the update
		if status == nil {
			status = map[string]any{}
		}
		status["loadBalancer"] = map[string]any{}
		svc["status"] = status
	}
}

// externallyAccessible is kube's ExternallyAccessible.
func externallyAccessible(spec map[string]any) bool {
	typ := str(spec, "type")
	return typ == "LoadBalancer" || typ == "NodePort" || typ == "ClusterIP" && len(api.Strings(spec["externalIPs"])) > 0
}

// subset reports whether every element of a is in b.
func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// patchAllocatedValues is kube's: an update that leaves out what was
// allocated (a PUT of a manifest without clusterIP) keeps it.
func patchAllocatedValues(spec, oldSpec map[string]any) {
	typ, oldTyp := str(spec, "type"), str(oldSpec, "type")
	if typ != "ExternalName" && oldTyp != "ExternalName" {
		if str(spec, "clusterIP") == "" && oldSpec["clusterIP"] != nil {
			spec["clusterIP"] = oldSpec["clusterIP"]
		}
		if len(api.Strings(spec["clusterIPs"])) == 0 && len(api.Strings(oldSpec["clusterIPs"])) > 0 {
			spec["clusterIPs"] = oldSpec["clusterIPs"]
		}
	}
	if shouldAllocateNodePorts(spec) && shouldAllocateNodePorts(oldSpec) {
		used := map[int]bool{}
		for _, p := range nodePortsOf(oldSpec) {
			used[p] = false
		}
		for _, p := range nodePortsOf(spec) {
			if _, ok := used[p]; ok {
				used[p] = true
			}
		}
		byName := map[string]int{}
		for _, p := range list(oldSpec, "ports") {
			byName[str(p, "name")] = intOf(p["nodePort"])
		}
		for _, p := range list(spec, "ports") {
			if intOf(p["nodePort"]) == 0 {
				if old := byName[str(p, "name")]; old != 0 && !used[old] {
					p["nodePort"] = old
				}
			}
		}
	}
	if needsHealthCheck(spec) && needsHealthCheck(oldSpec) && intOf(spec["healthCheckNodePort"]) == 0 {
		spec["healthCheckNodePort"] = oldSpec["healthCheckNodePort"]
	}
}

// normalizeClusterIPs is kube's: keeps clusterIP and clusterIPs in step for
// a client that sets one of them only.
func normalizeClusterIPs(spec, oldSpec map[string]any) {
	ip, ips := str(spec, "clusterIP"), api.Strings(spec["clusterIPs"])
	if oldSpec == nil {
		if ip != "" && len(ips) == 0 {
			spec["clusterIPs"] = []any{ip}
		}
		return
	}
	oldIP, oldIPs := str(oldSpec, "clusterIP"), api.Strings(oldSpec["clusterIPs"])
	if len(oldIPs) > 0 && len(ips) == 0 && oldIP == ip {
		spec["clusterIPs"] = oldSpec["clusterIPs"]
	}
	if oldIP != ip {
		same := reflect.DeepEqual(api.Strings(spec["clusterIPs"]), oldIPs)
		switch {
		case oldIP != "" && ip == "":
			if same {
				delete(spec, "clusterIPs")
			}
		case same:
			spec["clusterIPs"] = []any{ip}
		}
	}
}

func needsNodePorts(typ string) bool { return typ == "NodePort" || typ == "LoadBalancer" }

// shouldAllocateNodePorts is kube's: NodePort, or LoadBalancer unless
// allocateLoadBalancerNodePorts is false.
func shouldAllocateNodePorts(spec map[string]any) bool {
	switch str(spec, "type") {
	case "NodePort":
		return true
	case "LoadBalancer":
		return spec["allocateLoadBalancerNodePorts"] != false
	}
	return false
}

// needsHealthCheck is kube's NeedsHealthCheck: a LoadBalancer whose
// externalTrafficPolicy is Local.
func needsHealthCheck(spec map[string]any) bool {
	return str(spec, "type") == "LoadBalancer" && str(spec, "externalTrafficPolicy") == "Local"
}

// holdsAddress reports whether a Service of spec holds its cluster IPs
// (kube's IsServiceIPSet): not ExternalName, not headless.
func holdsAddress(spec map[string]any) bool {
	return str(spec, "type") != "ExternalName" && !headless(spec)
}

func headless(spec map[string]any) bool {
	ips := api.Strings(spec["clusterIPs"])
	return len(ips) > 0 && ips[0] == "None" || len(ips) == 0 && str(spec, "clusterIP") == "None"
}

func nodePortsOf(spec map[string]any) []int {
	var out []int
	for _, p := range list(spec, "ports") {
		if np := intOf(p["nodePort"]); np != 0 {
			out = append(out, np)
		}
	}
	return out
}

func familyOf(ip netip.Addr) string {
	if ip.Unmap().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func otherFamily(f string) string {
	if f == "IPv4" {
		return "IPv6"
	}
	return "IPv4"
}

func invalid(svc api.Object, field string, value any, msg string) error {
	return apierror.Invalid("", "Service", svc.Name(), []api.StatusCause{validation.InvalidCause(field, value, msg)})
}
