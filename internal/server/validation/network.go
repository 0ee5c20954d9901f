package validation

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

// ingressClassAnnotation is the annotation that named an Ingress's class
// before spec.ingressClassName.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// What kube refuses in an Exact or Prefix path of an Ingress.
var (
	badPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	badPathSuffixes  = []string{"/..", "/."}
)

// ingressTolerance is what kube's Ingress update lets pass that the
// stored Ingress held: invalid TLS secret names, and invalid rules of
// wildcard hosts (AllowInvalidSecretName, AllowInvalidWildcardHostRule).
type ingressTolerance struct{ secretNames, wildcardRules bool }

// ingress is kube's ValidateIngressSpec: rules (hosts, paths and their
// types, backends), the default backend, TLS hosts and secret names, the
// class name, with what t tolerates. Service names are DNS labels (1.37's
// RelaxedServiceNameValidation is locked on).
func ingress(o api.Object, t ingressTolerance) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	rules := list(spec, "rules")
	backend, hasDefault := spec["defaultBackend"].(map[string]any)
	if len(rules) == 0 && !hasDefault {
		c.invalid(p, jsonValue{spec["rules"]}, "either `defaultBackend` or `rules` must be specified")
	}
	if hasDefault {
		c.ingressBackend(backend, p.child("defaultBackend"))
	}
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		rp := p.child("rules").index(i)
		host := str(rule, "host")
		if host != "" {
			if ipAddress(host) {
				c.invalid(rp.child("host"), host, "must be a DNS name, not an IP address")
			}
			c.host(rp.child("host"), host)
		}
		if !t.wildcardRules || !strings.Contains(host, "*") {
			c.ingressRuleValue(rule, rp)
		}
	}
	for i, v := range list(spec, "tls") {
		tls, _ := v.(map[string]any)
		tp := p.child("tls").index(i)
		for j, h := range list(tls, "hosts") {
			host, _ := h.(string)
			c.host(tp.child("hosts").index(j), host)
		}
		if name := str(tls, "secretName"); !t.secretNames {
			for _, msg := range secretNameErrors(name) {
				c.invalid(tp.child("secretName"), name, msg)
			}
		}
	}
	if class, ok := spec["ingressClassName"].(string); ok {
		for _, msg := range kubefmt.Util.DNS1123Subdomain(class) {
			c.invalid(p.child("ingressClassName"), class, msg)
		}
	}
	return c
}

// ingressRuleValue is kube's validateIngressRuleValue: an HTTP rule's
// paths.
func (c *causes) ingressRuleValue(rule map[string]any, p path) {
	http, ok := rule["http"].(map[string]any)
	if !ok {
		return
	}
	paths := list(http, "paths")
	if len(paths) == 0 {
		c.required(p.child("http", "paths"), "")
	}
	for j, v := range paths {
		pth, _ := v.(map[string]any)
		c.ingressPath(pth, p.child("http", "paths").index(j))
	}
}

// secretNameErrors is kube's validateTLSSecretName.
func secretNameErrors(name string) []string {
	if name == "" {
		return nil
	}
	return kubefmt.Util.DNS1123Subdomain(name)
}

// ingressCreate is kube's ValidateIngressCreate: ingress, and the class
// annotation, when set beside spec.ingressClassName, names the same class.
func ingressCreate(_ context.Context, o api.Object) []api.StatusCause {
	c := causes(ingress(o, ingressTolerance{}))
	class, hasClass := object(o, "spec")["ingressClassName"].(string)
	annotation, annotated := stringMap(object(o, "metadata"), "annotations")[ingressClassAnnotation]
	if annotated && hasClass && annotation != class {
		c.invalid(path("annotations").child(ingressClassAnnotation), annotation, "must match `ingressClassName` when both are specified")
	}
	return c
}

// ingressUpdate is kube's ValidateIngressUpdate: ingress, with what the
// stored Ingress old held tolerated.
func ingressUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var t ingressTolerance
	spec := object(old, "spec")
	for _, v := range list(spec, "tls") {
		tls, _ := v.(map[string]any)
		t.secretNames = t.secretNames || len(secretNameErrors(str(tls, "secretName"))) > 0
	}
	for _, r := range list(spec, "rules") {
		rule, _ := r.(map[string]any)
		var rc causes
		rc.ingressRuleValue(rule, "")
		t.wildcardRules = t.wildcardRules || strings.Contains(str(rule, "host"), "*") && len(rc) > 0
	}
	return ingress(o, t)
}

// host is a DNS subdomain, or one with a leading wildcard ("*.example.com").
func (c *causes) host(p path, host string) {
	check := kubefmt.Util.DNS1123Subdomain
	if strings.Contains(host, "*") {
		check = kubefmt.Util.WildcardDNS1123Subdomain
	}
	for _, msg := range check(host) {
		c.invalid(p, host, msg)
	}
}

// ipAddress is netutils.ParseIPSloppy(s) != nil.
func ipAddress(s string) bool { return net.ParseIP(s) != nil || sloppyIP(s) }

// ingressPath is kube's validateHTTPIngressPath.
func (c *causes) ingressPath(pth map[string]any, p path) {
	pathType, ok := pth["pathType"].(string)
	if !ok {
		c.required(p.child("pathType"), "pathType must be specified")
		return
	}
	value := str(pth, "path")
	switch pathType {
	case "Exact", "Prefix":
		if !strings.HasPrefix(value, "/") {
			c.invalid(p.child("path"), value, "must be an absolute path")
		}
		for _, seq := range badPathSequences {
			if strings.Contains(value, seq) {
				c.invalid(p.child("path"), value, "must not contain '"+seq+"'")
			}
		}
		for _, suffix := range badPathSuffixes {
			if strings.HasSuffix(value, suffix) {
				c.invalid(p.child("path"), value, "cannot end with '"+suffix+"'")
			}
		}
	case "ImplementationSpecific":
		if value != "" && !strings.HasPrefix(value, "/") {
			c.invalid(p.child("path"), value, "must be an absolute path")
		}
	default:
		c.notSupported(p.child("pathType"), pathType, "Exact", "ImplementationSpecific", "Prefix")
	}
	c.ingressBackend(object(pth, "backend"), p.child("backend"))
}

// ingressBackend is kube's validateIngressBackend: a service (name, and a
// port by name or number) or a resource, not both.
func (c *causes) ingressBackend(b map[string]any, p path) {
	resource, hasResource := b["resource"].(map[string]any)
	service, hasService := b["service"].(map[string]any)
	switch {
	case hasResource && hasService:
		c.invalid(p, "", "cannot set both resource and service backends")
	case hasResource:
		c.typedLocalReference(resource, p.child("resource"))
	case hasService:
		if name := str(service, "name"); name == "" {
			c.required(p.child("service", "name"), "")
		} else {
			for _, msg := range kubefmt.Util.DNS1123Label(name) {
				c.invalid(p.child("service", "name"), name, msg)
			}
		}
		port := object(service, "port")
		name := str(port, "name")
		number, _ := integer(port["number"])
		switch {
		case name != "" && number != 0:
			c.invalid(p, "", "cannot set both port name & port number")
		case name != "":
			for _, msg := range portNameErrors(name) {
				c.invalid(p.child("service", "port", "name"), name, msg)
			}
		case number != 0:
			c.portNumber(p.child("service", "port", "number"), number)
		default:
			c.required(p, "port name or number is required")
		}
	default:
		c.invalid(p, "", "resource or service backend is required")
	}
}

// typedLocalReference is kube's validateIngressTypedLocalObjectReference.
func (c *causes) typedLocalReference(ref map[string]any, p path) {
	if group, ok := ref["apiGroup"].(string); ok {
		for _, msg := range kubefmt.Util.DNS1123Subdomain(group) {
			c.invalid(p.child("apiGroup"), group, msg)
		}
	}
	for _, f := range []string{"kind", "name"} {
		v := str(ref, f)
		if v == "" {
			c.required(p.child(f), "")
			continue
		}
		for _, msg := range kubefmt.PathSegmentName(v) {
			c.invalid(p.child(f), v, msg)
		}
	}
}

// The values kube's networking validation accepts, in its messages' order.
var (
	policyTypes             = []string{"Ingress", "Egress"}
	networkPolicyProtocols  = []string{"TCP", "UDP", "SCTP"}
	networkPolicyDirections = [][2]string{{"ingress", "from"}, {"egress", "to"}}
)

// policyTolerance is what kube's NetworkPolicy update lets pass that the
// stored policy held (ValidationOptionsForNetworking): its CIDRs, and
// invalid label values in selectors when its pod selector was invalid.
type policyTolerance struct {
	cidrs         []string
	invalidValues bool
}

// tolerance is what an update of the stored policy old tolerates.
func tolerance(old api.Object) policyTolerance {
	var t policyTolerance
	spec := object(old, "spec")
	var oc causes
	oc.labelSelector(labelSelector(object(spec, "podSelector")), "")
	t.invalidValues = len(oc) > 0
	for _, d := range networkPolicyDirections {
		for _, r := range list(spec, d[0]) {
			rule, _ := r.(map[string]any)
			for _, v := range list(rule, d[1]) {
				peer, _ := v.(map[string]any)
				if block, ok := peer["ipBlock"].(map[string]any); ok {
					t.cidrs = append(append(t.cidrs, str(block, "cidr")), api.Strings(block["except"])...)
				}
			}
		}
	}
	return t
}

func networkPolicyCreate(_ context.Context, o api.Object) []api.StatusCause {
	return networkPolicy(o, policyTolerance{})
}

func networkPolicyUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	return networkPolicy(o, tolerance(old))
}

// networkPolicy is kube's ValidateNetworkPolicySpec: the pod selector,
// each rule's ports and peers, policyTypes, with what t tolerates.
func networkPolicy(o api.Object, t policyTolerance) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	c.labelSelectorAllowing(labelSelector(object(spec, "podSelector")), p.child("podSelector"), t.invalidValues)
	for _, d := range networkPolicyDirections {
		for i, r := range list(spec, d[0]) {
			rule, _ := r.(map[string]any)
			rp := p.child(d[0]).index(i)
			for j, v := range list(rule, "ports") {
				port, _ := v.(map[string]any)
				c.networkPolicyPort(port, rp.child("ports").index(j))
			}
			for j, v := range list(rule, d[1]) {
				peer, _ := v.(map[string]any)
				c.networkPolicyPeer(peer, rp.child(d[1]).index(j), t)
			}
		}
	}
	types := list(spec, "policyTypes")
	if len(types) > len(policyTypes) {
		c.invalid(p.child("policyTypes"), jsonValue{types}, "may not specify more than two policyTypes")
		return c
	}
	for i, t := range types {
		if t != "Ingress" && t != "Egress" {
			s, _ := t.(string)
			c.notSupported(p.child("policyTypes").index(i), s, policyTypes...)
		}
	}
	return c
}

// networkPolicyPort is kube's ValidateNetworkPolicyPort.
func (c *causes) networkPolicyPort(port map[string]any, p path) {
	if protocol, ok := port["protocol"].(string); ok && protocol != "TCP" && protocol != "UDP" && protocol != "SCTP" {
		c.notSupported(p.child("protocol"), protocol, networkPolicyProtocols...)
	}
	end, hasEnd := integer(port["endPort"])
	switch number := port["port"].(type) {
	case nil:
		if hasEnd {
			c.invalid(p.child("endPort"), end, "may not be specified when `port` is not specified")
		}
	case string:
		if hasEnd {
			c.invalid(p.child("endPort"), end, "may not be specified when `port` is non-numeric")
		}
		for _, msg := range portNameErrors(number) {
			c.invalid(p.child("port"), number, msg)
		}
	default:
		n, _ := integer(number)
		c.portNumber(p.child("port"), n)
		if hasEnd {
			if end < n {
				c.invalid(p.child("endPort"), end, "must be greater than or equal to `port`")
			}
			c.portNumber(p.child("endPort"), end)
		}
	}
}

// networkPolicyPeer is kube's ValidateNetworkPolicyPeer.
func (c *causes) networkPolicyPeer(peer map[string]any, p path, t policyTolerance) {
	peers := 0
	for _, f := range []string{"podSelector", "namespaceSelector"} {
		if s, ok := peer[f].(map[string]any); ok {
			peers++
			c.labelSelectorAllowing(labelSelector(s), p.child(f), t.invalidValues)
		}
	}
	block, hasBlock := peer["ipBlock"].(map[string]any)
	if hasBlock {
		peers++
		c.ipBlock(block, p.child("ipBlock"), t.cidrs)
	}
	switch {
	case peers == 0:
		c.required(p, "must specify a peer")
	case peers > 1 && hasBlock:
		c.forbidden(p, "may not specify both ipBlock and another peer")
	}
}

// ipBlock is kube's ValidateIPBlock: a CIDR, and exceptions strictly
// within it; those of stored are not checked again.
func (c *causes) ipBlock(block map[string]any, p path, stored []string) {
	cidr := str(block, "cidr")
	if cidr == "" {
		c.required(p.child("cidr"), "")
		return
	}
	if !slices.Contains(stored, cidr) {
		c.cidr(p.child("cidr"), cidr)
	}
	outer, ok := sloppyCIDR(cidr)
	if !ok {
		return
	}
	outerBits, _ := outer.Mask.Size()
	for i, v := range list(block, "except") {
		except, _ := v.(string)
		ep := p.child("except").index(i)
		if !slices.Contains(stored, except) {
			c.cidr(ep, except)
		}
		inner, ok := sloppyCIDR(except)
		if !ok {
			continue
		}
		if innerBits, _ := inner.Mask.Size(); !outer.Contains(inner.IP) || outerBits >= innerBits {
			c.invalid(ep, except, "must be a strict subset of `cidr`")
		}
	}
}

// cidr is apimachinery's IsValidCIDRForLegacyField with strict validation
// (1.37's StrictIPCIDRValidation is on).
func (c *causes) cidr(p path, s string) {
	if _, ok := sloppyCIDR(s); !ok {
		c.invalid(p, s, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")
		return
	}
	prefix, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		c.invalid(p, s, "must not have leading 0s in IP or prefix length")
	case prefix.Addr().Is4In6():
		c.invalid(p, s, "must not have an IPv4-mapped IPv6 address")
	case prefix.Addr() != prefix.Masked().Addr():
		c.invalid(p, s, "must not have bits set beyond the prefix length")
	}
}

// sloppyCIDR is k8s.io/utils/net's ParseCIDRSloppy: net.ParseCIDR that
// also reads IPv4 octets with leading zeros (as decimal).
func sloppyCIDR(s string) (*net.IPNet, bool) {
	ip, bits, _ := strings.Cut(s, "/")
	if sloppyIP(ip) {
		octets := strings.Split(ip, ".")
		for i, o := range octets {
			n, _ := strconv.Atoi(o)
			octets[i] = strconv.Itoa(n)
		}
		s = strings.Join(octets, ".") + "/" + bits
	}
	_, n, err := net.ParseCIDR(s)
	return n, err == nil
}
