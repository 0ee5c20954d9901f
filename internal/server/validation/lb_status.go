package validation

import (
	"context"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

// serviceStatusUpdate is kube's ValidateServiceStatusUpdate: load balancer
// ingress points only on a LoadBalancer Service (the stored spec, as a
// status write keeps it), each well formed.
func serviceStatusUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	p := path("status.loadBalancer.ingress")
	ingress := list(object(object(o, "status"), "loadBalancer"), "ingress")
	if str(object(old, "spec"), "type") != "LoadBalancer" && len(ingress) != 0 {
		c.forbidden(p, "may only be used when `spec.type` is 'LoadBalancer'")
		return c
	}
	c.loadBalancerIngress(p, ingress, old, true)
	return c
}

// ingressStatusUpdate is kube's ValidateIngressStatusUpdate.
func ingressStatusUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	c.loadBalancerIngress("status.loadBalancer.ingress", list(object(object(o, "status"), "loadBalancer"), "ingress"), old, false)
	return c
}

// loadBalancerIngress checks the ingress points of a Service's or an
// Ingress's load balancer status, old being the stored object: an IP
// (legacy but for one old holds), a DNS name that is not an IP, and for
// a Service (ipMode) an ipMode exactly when there is an IP.
func (c *causes) loadBalancerIngress(p path, ingress []any, old api.Object, ipMode bool) {
	var oldIPs []string
	for _, raw := range list(object(object(old, "status"), "loadBalancer"), "ingress") {
		if ip := str(asObject(raw), "ip"); ip != "" {
			oldIPs = append(oldIPs, ip)
		}
	}
	for i, raw := range ingress {
		ing, _ := raw.(map[string]any)
		ip, at := str(ing, "ip"), p.index(i)
		if ip != "" {
			c.legacyIP(at.child("ip"), ip, oldIPs)
		}
		if ipMode {
			mode, set := ing["ipMode"].(string)
			switch {
			case !set && ip != "":
				c.required(at.child("ipMode"), "must be specified when `ip` is set")
			case set && ip == "":
				c.forbidden(at.child("ipMode"), "may not be specified when `ip` is not set")
			case set && mode != "VIP" && mode != "Proxy":
				c.notSupported(at.child("ipMode"), mode, "Proxy", "VIP")
			}
		}
		if host := str(ing, "hostname"); host != "" {
			for _, msg := range kubefmt.Util.DNS1123Subdomain(host) {
				c.invalid(at.child("hostname"), host, msg)
			}
			if _, isIP := sloppyAddr(host); isIP {
				c.invalid(at.child("hostname"), host, "must be a DNS name, not an IP address")
			}
		}
	}
}

// legacyIP is kube's IsValidIPForLegacyField with strict validation: s is
// a valid IP unless old, the stored values, holds it.
func (c *causes) legacyIP(p path, s string, old []string) {
	if !slices.Contains(old, s) {
		c.ip(p, s)
	}
}
