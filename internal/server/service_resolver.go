package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// serviceResolver resolves webhooks' service references from the stored
// Services and EndpointSlices, as kube-apiserver's endpoint resolver
// (--enable-aggregator-routing, k8s.io/apiserver/pkg/util/proxy
// ResolveEndpoint): nothing routes a Service's clusterIP to its endpoints
// here, so kube's default, the clusterIP, would reach nothing. It reads the
// watch caches, as kube its informers: a Service or slice written a moment
// ago may not be seen yet.
//
// A Service that is not stored, or has no EndpointSlice, resolves to ""
// (its DNS name is called), where kube fails the call (`service "NAME" not
// found`, `no endpoints available for service "NAME"`): listwatch may run
// beside a cluster whose DNS serves the name.
type serviceResolver struct{ s *Server }

var _ webhookclient.Resolver = serviceResolver{}

// serviceSpec is what resolution reads of a Service.
type serviceSpec struct {
	Spec struct {
		Type         string        `json:"type"`
		ExternalName string        `json:"externalName"`
		IPFamilies   []string      `json:"ipFamilies"`
		Ports        []servicePort `json:"ports"`
	} `json:"spec"`
}

type servicePort struct {
	Name string `json:"name"`
	Port int32  `json:"port"`
}

// endpointSlice is what resolution reads of an EndpointSlice.
type endpointSlice struct {
	AddressType string          `json:"addressType"`
	Endpoints   []sliceEndpoint `json:"endpoints"`
	Ports       []slicePort     `json:"ports"`
}

type sliceEndpoint struct {
	Addresses  []string `json:"addresses"`
	Conditions struct {
		Ready *bool `json:"ready"`
	} `json:"conditions"`
}

type slicePort struct {
	Name *string `json:"name"`
	Port *int32  `json:"port"`
}

// serviceNameLabel ties an EndpointSlice to its Service (kube's
// discovery/v1 LabelServiceName).
const serviceNameLabel = "kubernetes.io/service-name"

// ResolveService returns a ready endpoint of the Service's port, chosen at
// random as kube's RandomEndpoint; an ExternalName Service resolves to its
// external name, as kube's default (clusterIP) resolver does.
func (r serviceResolver) ResolveService(ctx context.Context, namespace, name string, port int32) (string, error) {
	var svc serviceSpec
	found, err := r.get(ctx, "", "services", namespace, name, &svc)
	if !found || err != nil {
		return "", err
	}
	switch svc.Spec.Type {
	case "ExternalName":
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	case "", "ClusterIP", "NodePort", "LoadBalancer":
	default:
		return "", fmt.Errorf("unsupported service type %q", svc.Spec.Type)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p servicePort) bool { return p.Port == port })
	if i < 0 {
		return "", fmt.Errorf("no service port %d found for service %q", port, name)
	}
	endpoints, err := r.slices(ctx, namespace, name)
	if len(endpoints) == 0 || err != nil {
		return "", err
	}
	family := ""
	if len(svc.Spec.IPFamilies) > 0 {
		family = svc.Spec.IPFamilies[0]
	}
	if addr := randomEndpoint(endpoints, svc.Spec.Ports[i].Name, family); addr != "" {
		return addr, nil
	}
	return "", fmt.Errorf("no endpoints available for service %q", name)
}

// randomEndpoint is kube's RandomEndpoint: the slices of the preferred
// address family first, each in random order, the first ready endpoint
// (from a random one on) of the first slice serving the port named
// portName; "" when none.
func randomEndpoint(eps []endpointSlice, portName, family string) string {
	rand.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
	slices.SortStableFunc(eps, func(a, b endpointSlice) int {
		switch {
		case a.AddressType == b.AddressType:
			return 0
		case a.AddressType == family:
			return -1
		case b.AddressType == family:
			return 1
		}
		return 0
	})
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != portName || p.Port == nil || len(s.Endpoints) == 0 {
				continue
			}
			offset := rand.IntN(len(s.Endpoints))
			for i := range s.Endpoints {
				ep := s.Endpoints[(i+offset)%len(s.Endpoints)]
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
					continue
				}
				return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port)))
			}
		}
	}
	return ""
}

// get decodes the cached object of a resource into out; found is false
// when there is none.
func (r serviceResolver) get(ctx context.Context, group, plural, namespace, name string, out any) (found bool, err error) {
	res, ok := r.s.catalog.Get(group, "v1", plural)
	if !ok {
		return false, nil
	}
	c, err := r.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return false, err
	}
	o := c.Get(res.Key(namespace, name))
	if o == nil {
		return false, nil
	}
	return true, json.Unmarshal(o.JSON, out)
}

// slices are the cached EndpointSlices of a Service.
func (r serviceResolver) slices(ctx context.Context, namespace, service string) ([]endpointSlice, error) {
	res, ok := r.s.catalog.Get("discovery.k8s.io", "v1", "endpointslices")
	if !ok {
		return nil, nil
	}
	c, err := r.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	sel, err := selector.FromLabelSelector(&selector.LabelSelector{MatchLabels: map[string]string{serviceNameLabel: service}})
	if err != nil {
		return nil, err
	}
	objs, _ := c.List(watchcache.Filter{Namespace: namespace, Labels: sel})
	out := make([]endpointSlice, len(objs))
	for i, o := range objs {
		if err := json.Unmarshal(o.JSON, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
