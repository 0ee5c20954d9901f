package validation

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// InvalidCause is field.Invalid(field, value, detail) as a cause, for the
// checks kube makes outside its validation package (the Service
// allocator's).
func InvalidCause(field string, value any, detail string) api.StatusCause {
	var c causes
	c.invalid(path(field), value, detail)
	return c[0]
}

// Named is a string value of a named Go type (an IPFamily), which kube's
// field errors print as JSON.
func Named(s string) any { return jsonValue{s} }

// ServiceClusterIPs is kube's ValidateServiceClusterIPsRelatedFields, which
// its Service allocator calls before allocating and its validation after:
// clusterIP and clusterIPs in step, each address valid (strictly, as the
// StrictIPCIDRValidation gate of 1.37 has it; an address old had passes),
// "None" alone, at most one address per family, families IPv4 or IPv6 and
// distinct, the addresses of the families named.
func ServiceClusterIPs(svc, old api.Object) []api.StatusCause {
	spec := object(svc, "spec")
	if str(spec, "type") == "ExternalName" {
		return nil
	}
	var c causes
	p := path("spec")
	ipsPath := p.child("clusterIPs")
	ips := api.Strings(spec["clusterIPs"])
	if ip := str(spec, "clusterIP"); ip != "" {
		if len(ips) == 0 {
			c.required(ipsPath, "")
		} else if ips[0] != ip {
			c.invalid(ipsPath, ips, "first value must match `clusterIP`")
		}
	} else if len(ips) != 0 {
		c.invalid(ipsPath, ips, "must be empty when `clusterIP` is not specified")
	}
	families := api.Strings(spec["ipFamilies"])
	for i, f := range families {
		if f != "IPv4" && f != "IPv6" {
			c.notSupported(p.child("ipFamilies").index(i), f, "IPv4", "IPv6")
		}
		if slices.Contains(families[:i], f) {
			c.duplicate(p.child("ipFamilies").index(i), jsonValue{f})
		}
	}
	if policy, ok := spec["ipFamilyPolicy"].(string); ok && !slices.Contains(ipFamilyPolicies, policy) {
		c.notSupported(p.child("ipFamilyPolicy"), policy, ipFamilyPolicies...)
	}
	var oldIPs []string
	if old != nil {
		oldIPs = api.Strings(object(old, "spec")["clusterIPs"])
	}
	invalidIPs := false
	for i, ip := range ips {
		if i == 0 && ip == "None" {
			if len(ips) > 1 {
				invalidIPs = true
				c.invalid(ipsPath, ips, "'None' must be the first and only value")
			}
			continue
		}
		if slices.Contains(oldIPs, ip) {
			continue
		}
		n := len(c)
		c.ip(ipsPath.index(i), ip)
		invalidIPs = invalidIPs || len(c) > n
	}
	if len(ips) > 2 {
		c.invalid(ipsPath, ips, "may only hold up to 2 values")
	}
	if invalidIPs {
		return c
	}
	if len(ips) > 1 {
		a, _ := netip.ParseAddr(ips[0])
		b, _ := netip.ParseAddr(ips[1])
		if len(ips) > 2 || a.Is4() == b.Is4() {
			c.invalid(ipsPath, ips, "may specify no more than one IP for each IP family")
		}
	}
	if !(len(ips) > 0 && ips[0] == "None") {
		for i, s := range ips {
			if i >= len(families) {
				break
			}
			ip, _ := netip.ParseAddr(s)
			switch {
			case families[i] == "IPv4" && ip.Is6():
				c.invalid(ipsPath.index(i), s, "expected an IPv4 value as indicated by `ipFamilies["+strconv.Itoa(i)+"]`")
			case families[i] == "IPv6" && !ip.Is6():
				c.invalid(ipsPath.index(i), s, "expected an IPv6 value as indicated by `ipFamilies["+strconv.Itoa(i)+"]`")
			}
		}
	}
	return c
}

var ipFamilyPolicies = []string{"PreferDualStack", "RequireDualStack", "SingleStack"}

// ip is apimachinery's parseIP with strict validation.
func (c *causes) ip(p path, s string) {
	for _, msg := range ipErrors(s) {
		c.invalid(p, s, msg)
	}
}

// ipErrors is what apimachinery's parseIP with strict validation finds
// wrong with s.
func ipErrors(s string) []string {
	addr, err := parseAddr(s)
	switch {
	case err != nil && sloppyIP(s):
		return []string{"must not have leading 0s"}
	case err != nil:
		return []string{"must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}
	case addr.Is4In6():
		return []string{"must not be an IPv4-mapped IPv6 address"}
	}
	return nil
}

// externalIP is kube's check of a Service's external IP: a valid address
// (IsValidIPForLegacyField, strict, but for one the stored Service, old,
// already holds), then ValidateEndpointIP's ranges, which hold for every
// address.
func (c *causes) externalIP(p path, s string, old []string) {
	if !slices.Contains(old, s) && ipErrors(s) != nil {
		c.ip(p, s)
		return
	}
	addr, ok := sloppyAddr(s)
	if !ok {
		c.invalid(p, s, "must be a valid IP address")
		return
	}
	if addr.IsUnspecified() {
		c.invalid(p, s, "may not be unspecified ("+s+")")
	}
	if addr.IsLoopback() {
		c.invalid(p, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)")
	}
	if addr.IsLinkLocalUnicast() {
		c.invalid(p, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")
	}
	if addr.IsLinkLocalMulticast() {
		c.invalid(p, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
	}
}

// sloppyAddr is s as kube's ParseIPSloppy reads it (leading zeros of an
// IPv4 address are decimal), an IPv4-mapped address as IPv4.
func sloppyAddr(s string) (netip.Addr, bool) {
	if addr, err := parseAddr(s); err == nil {
		return addr.Unmap(), true
	}
	if !sloppyIP(s) {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, field := range strings.Split(s, ".") {
		n, _ := strconv.Atoi(field)
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

// IPAddressName is kube's ValidateIPAddressName: an IPAddress is named by
// its address, valid and canonical (apimachinery's IsValidIP).
func IPAddressName(name string) []string {
	if errs := ipErrors(name); errs != nil {
		return errs
	}
	if canonical := netip.MustParseAddr(name).String(); canonical != name {
		return []string{"must be in canonical form (" + strconv.Quote(canonical) + ")"}
	}
	return nil
}

// parseAddr is netip.ParseAddr less the zones (fe80::1%eth0) that kube's
// net.ParseIP refuses.
func parseAddr(s string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(s)
	if err == nil && addr.Zone() != "" {
		return netip.Addr{}, errZone
	}
	return addr, err
}

var errZone = errors.New("IP address with a zone")

// sloppyIP reports whether s is an IPv4 address with leading zeros, which
// kube's ParseIPSloppy accepts and netip refuses.
func sloppyIP(s string) bool {
	parts := 0
	for field := range strings.SplitSeq(s, ".") {
		if field == "" || len(field) > 3 {
			return false
		}
		n := 0
		for _, r := range field {
			if r < '0' || r > '9' {
				return false
			}
			n = n*10 + int(r-'0')
		}
		if n > 255 {
			return false
		}
		parts++
	}
	return parts == 4
}

// ServiceCreate is the part of kube's ValidateServiceCreate that an
// update relaxes: the external IPs' and source ranges' forms.
func ServiceCreate(svc api.Object) []api.StatusCause {
	return serviceAddresses(object(svc, "spec"), nil)
}

// serviceAddresses checks the external IPs and load balancer source
// ranges of spec as kube's validateService: each a strict address or
// CIDR, but for those oldSpec, the stored Service's, already holds
// (validated by older rules), and each address out of ValidateEndpointIP's
// ranges.
func serviceAddresses(spec, oldSpec map[string]any) causes {
	var c causes
	oldIPs := api.Strings(oldSpec["externalIPs"])
	for i, ip := range api.Strings(spec["externalIPs"]) {
		c.externalIP(path("spec.externalIPs").index(i), ip, oldIPs)
	}
	trimmed := func(spec map[string]any) []string {
		ranges := api.Strings(spec["loadBalancerSourceRanges"])
		for i := range ranges {
			ranges[i] = strings.TrimSpace(ranges[i]) // kube allows the padding the annotation had
		}
		return ranges
	}
	oldRanges := trimmed(oldSpec)
	for i, cidr := range trimmed(spec) {
		if !slices.Contains(oldRanges, cidr) {
			c.cidr(path("spec.LoadBalancerSourceRanges").index(i), cidr)
		}
	}
	return c
}

// ServiceUpdate is the part of kube's ValidateServiceUpdate that ties a
// Service to the stored one: the addresses (clusterIPsUpdate), the
// external IPs and source ranges not stored already (serviceAddresses);
// the loadBalancerClass of a LoadBalancer staying one; the health check
// node port while one is needed (validateServiceExternalTrafficFieldsUpdate).
func ServiceUpdate(svc, old api.Object) []api.StatusCause {
	spec, oldSpec := object(svc, "spec"), object(old, "spec")
	c := append(clusterIPsUpdate(spec, oldSpec), serviceAddresses(spec, oldSpec)...)
	if str(spec, "type") == "LoadBalancer" && str(oldSpec, "type") == "LoadBalancer" && !equal(spec["loadBalancerClass"], oldSpec["loadBalancerClass"]) {
		class := jsonValue{nil} // kube's *string, null when unset
		if s, ok := spec["loadBalancerClass"].(string); ok {
			class = jsonValue{s}
		}
		c.invalid(path("spec.loadBalancerClass"), class, "may not change once set")
	}
	needs := func(spec map[string]any) bool {
		return str(spec, "type") == "LoadBalancer" && str(spec, "externalTrafficPolicy") == "Local"
	}
	if needs(spec) && needs(oldSpec) && !equal(spec["healthCheckNodePort"], oldSpec["healthCheckNodePort"]) {
		c.forbidden(path("spec.healthCheckNodePort"), "field is immutable")
	}
	return c
}

// clusterIPsUpdate is kube's validateUpgradeDowngradeClusterIPs and
// validateUpgradeDowngradeIPFamilies: the addresses may not change once
// set, but for a type change to or from ExternalName, a change to or from
// headless, and a dual-stack upgrade or downgrade.
func clusterIPsUpdate(spec, oldSpec map[string]any) causes {
	if str(spec, "type") == "ExternalName" || str(oldSpec, "type") == "ExternalName" {
		return nil
	}
	var c causes
	p := path("spec")
	isHeadless, wasHeadless := headlessSpec(spec), headlessSpec(oldSpec)
	ips, oldIPs := api.Strings(spec["clusterIPs"]), api.Strings(oldSpec["clusterIPs"])
	if !isHeadless || !wasHeadless {
		switch {
		case len(oldIPs) == len(ips):
			for i := range oldIPs {
				if oldIPs[i] != ips[i] {
					c.invalid(p.child("clusterIPs").index(i), ips, "may not change once set")
				}
			}
		case len(oldIPs) > len(ips):
			if len(ips) == 0 {
				c.invalid(p.child("clusterIPs").index(0), ips, "primary clusterIP can not be unset")
			}
			if len(ips) > 0 && ips[0] != oldIPs[0] {
				c.invalid(p.child("clusterIPs").index(0), ips, "may not change once set")
			}
			if len(ips) == 1 && str(spec, "ipFamilyPolicy") != "SingleStack" {
				c.invalid(p.child("ipFamilyPolicy"), policyValue(spec), "must be set to 'SingleStack' when releasing the secondary clusterIP")
			}
		case len(oldIPs) > 0 && ips[0] != oldIPs[0]:
			c.invalid(p.child("clusterIPs").index(0), ips, "may not change once set")
		}
	}
	if isHeadless != wasHeadless || isHeadless {
		return c
	}
	families, oldFamilies := api.Strings(spec["ipFamilies"]), api.Strings(oldSpec["ipFamilies"])
	fp := p.child("ipFamilies").index(0)
	switch {
	case len(oldFamilies) == len(families):
		for i := range oldFamilies {
			if oldFamilies[i] != families[i] {
				c.invalid(fp, families, "may not change once set")
			}
		}
	case len(oldFamilies) > len(families):
		if len(ips) == 0 {
			c.invalid(fp, families, "primary ipFamily can not be unset")
		}
		if len(families) > 0 && families[0] != oldFamilies[0] {
			c.invalid(fp, ips, "may not change once set")
		}
		if len(families) == 1 && str(spec, "ipFamilyPolicy") != "SingleStack" {
			c.invalid(p.child("ipFamilyPolicy"), policyValue(spec), "must be set to 'SingleStack' when releasing the secondary ipFamily")
		}
	case len(oldFamilies) > 0 && len(families) > 0 && families[0] != oldFamilies[0]:
		c.invalid(fp, ips, "may not change once set")
	}
	return c
}

// policyValue is ipFamilyPolicy as kube's error prints its *string: null
// when unset.
func policyValue(spec map[string]any) any {
	if s, ok := spec["ipFamilyPolicy"].(string); ok {
		return jsonValue{s}
	}
	return jsonValue{nil}
}

func headlessSpec(spec map[string]any) bool {
	ips := api.Strings(spec["clusterIPs"])
	return len(ips) > 0 && ips[0] == "None"
}
