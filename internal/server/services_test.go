package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/servicealloc"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

const services = "/api/v1/namespaces/default/services"

// newServiceServer starts a server on store giving Services addresses and
// node ports from cfg.
func newServiceServer(t *testing.T, store storage.Interface, cfg servicealloc.Config) *httptest.Server {
	t.Helper()
	s, err := New(t.Context(), Config{Storage: store, Services: cfg, NamespaceDeletionGracePeriod: testNamespaceGrace})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

// clusterIPService is a ClusterIP Service's manifest asking for ip ("" for
// any).
func clusterIPService(name, ip string) string {
	spec := `"ports":[{"port":80}],"selector":{"app":"a"}`
	if ip != "" {
		spec += fmt.Sprintf(`,"clusterIP":%q`, ip)
	}
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{%s}}`, name, spec)
}

// TestServiceClusterIPs checks what kube-apiserver's Service storage does
// with cluster IPs on the default range (10.0.0.0/24): every Service gets
// an address of its own, recorded as an IPAddress naming it, and its
// clusterIPs, ipFamilies and ipFamilyPolicy as kube fills them; an address
// asked for is refused with kube's message when taken or out of range;
// headless and ExternalName Services get none; an update may not change
// the address, and keeps it when left out; a delete, and a change to
// ExternalName, free it.
func TestServiceClusterIPs(t *testing.T) {
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{})
	seen := map[string]string{}
	for i := range 30 {
		name := fmt.Sprintf("s%d", i)
		r := exchange(t, ts, "POST", services, nil, clusterIPService(name, ""))
		if r.code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", name, r.code, r.obj)
		}
		ip, _ := at(r.obj, "spec.clusterIP").(string)
		addr, err := netip.ParseAddr(ip)
		if err != nil || !netip.MustParsePrefix("10.0.0.0/24").Contains(addr) || ip == "10.0.0.0" || ip == "10.0.0.255" {
			t.Fatalf("%s: clusterIP %q, want an address of 10.0.0.0/24 but its first and last", name, ip)
		}
		if other, ok := seen[ip]; ok {
			t.Fatalf("%s and %s share %s", name, other, ip)
		}
		seen[ip] = name
		for path, want := range map[string]any{"spec.clusterIPs.0": ip, "spec.ipFamilies.0": "IPv4", "spec.ipFamilyPolicy": "SingleStack"} {
			if got := at(r.obj, path); got != want {
				t.Errorf("%s: %s = %v, want %v", name, path, got, want)
			}
		}
		ipa := exchange(t, ts, "GET", "/apis/networking.k8s.io/v1/ipaddresses/"+ip, nil, "")
		labels, _ := at(ipa.obj, "metadata.labels").(map[string]any)
		if ipa.code != http.StatusOK || at(ipa.obj, "spec.parentRef.name") != name || at(ipa.obj, "spec.parentRef.namespace") != "default" ||
			at(ipa.obj, "spec.parentRef.resource") != "services" || labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" ||
			labels["ipaddress.kubernetes.io/ip-family"] != "IPv4" {
			t.Errorf("IPAddress %s: %d %v", ip, ipa.code, ipa.obj)
		}
	}
	var taken string
	for ip := range seen {
		taken = ip
		break
	}
	runSteps(t, ts, []step{
		{name: "taken", method: "POST", path: services, body: clusterIPService("taken", taken), code: 422,
			check: wantCauses(fmt.Sprintf(`spec.clusterIPs: Invalid value: [%q]: failed to allocate IP %s: provided IP is already allocated`, taken, taken))},
		{name: "other network", method: "POST", path: services, body: clusterIPService("far", "10.1.0.5"), code: 422,
			want: map[string]any{"message": `Service "far" is invalid: spec.clusterIPs: Invalid value: ["10.1.0.5"]: failed to allocate IP 10.1.0.5: the provided network does not match the current range`}},
		{name: "network address", method: "POST", path: services, body: clusterIPService("zero", "10.0.0.0"), code: 422,
			check: wantCauses(`spec.clusterIPs: Invalid value: ["10.0.0.0"]: failed to allocate IP 10.0.0.0: the provided IP (10.0.0.0) is not in the valid range. The range of valid IPs is 10.0.0.0/24`)},
		{name: "not an address", method: "POST", path: services, body: clusterIPService("bad", "10.0.0.300"), code: 422,
			check: wantCauses(`spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`)},
		{name: "IPv6 on an IPv4 cluster", method: "POST", path: services, body: clusterIPService("six", "fd00::5"), code: 422,
			check: wantCauses(`spec.clusterIPs[0]: Invalid value: ["fd00::5"]: IPv6 is not configured on this cluster`)},
		{name: "asked", method: "POST", path: services, body: clusterIPService("asked", "10.0.0.5"), code: 201,
			want: map[string]any{"spec.clusterIP": "10.0.0.5", "spec.clusterIPs.0": "10.0.0.5"}},
		{name: "change", method: "PUT", path: services + "/asked", body: clusterIPService("asked", "10.0.0.6"), code: 422,
			check: wantCauses(`spec.clusterIPs[0]: Invalid value: ["10.0.0.6"]: may not change once set`)},
		{name: "left out on update", method: "PUT", path: services + "/asked", body: clusterIPService("asked", ""), code: 200,
			want: map[string]any{"spec.clusterIP": "10.0.0.5", "spec.clusterIPs.0": "10.0.0.5"}},
		{name: "headless", method: "POST", path: services, body: clusterIPService("headless", "None"), code: 201,
			want: map[string]any{"spec.clusterIP": "None", "spec.clusterIPs.0": "None", "spec.ipFamilies.0": "IPv4", "spec.ipFamilyPolicy": "SingleStack"}},
		// kube's special case: a headless Service without selector is
		// RequireDualStack, with both families, even on one family's cluster.
		{name: "headless without selector", method: "POST", path: services, body: `{"metadata":{"name":"bare"},"spec":{"clusterIP":"None","ports":[{"port":80}]}}`, code: 201,
			want: map[string]any{"spec.ipFamilies.0": "IPv4", "spec.ipFamilies.1": "IPv6", "spec.ipFamilyPolicy": "RequireDualStack"}},
		{name: "dual stack required", method: "POST", path: services, body: `{"metadata":{"name":"dual"},"spec":{"ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}]}}`, code: 422,
			check: wantCauses(`spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`)},
		{name: "external name", method: "POST", path: services, body: `{"metadata":{"name":"ext"},"spec":{"type":"ExternalName","externalName":"example.com"}}`, code: 201,
			want: map[string]any{"spec.clusterIP": nil, "spec.ipFamilies": nil, "spec.ipFamilyPolicy": nil}},
		{name: "delete", method: "DELETE", path: services + "/asked", code: 200},
		{name: "freed by delete", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.5", code: 404},
		{name: "asked again", method: "POST", path: services, body: clusterIPService("again", "10.0.0.5"), code: 201},
		{name: "to external name", method: "PUT", path: services + "/again", body: `{"metadata":{"name":"again"},"spec":{"type":"ExternalName","externalName":"example.com","clusterIP":"10.0.0.5","clusterIPs":["10.0.0.5"],"ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"port":80}]}}`, code: 200,
			want: map[string]any{"spec.clusterIP": nil, "spec.clusterIPs": nil, "spec.ipFamilies": nil, "spec.ipFamilyPolicy": nil}},
		{name: "freed by type change", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.5", code: 404},
		{name: "back from external name", method: "PUT", path: services + "/again", body: clusterIPService("again", "10.0.0.5"), code: 200,
			want: map[string]any{"spec.clusterIP": "10.0.0.5"}},
		{name: "status of a ClusterIP Service", method: "PUT", path: services + "/again/status", code: 200,
			body: `{"metadata":{"name":"again"},"spec":{"ports":[{"port":80}]},"status":{"conditions":[{"type":"Ready","status":"True","reason":"Up","message":"","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`,
			want: map[string]any{"status.conditions.0.type": "Ready", "spec.clusterIP": "10.0.0.5"}},
		{name: "no load balancer on a ClusterIP Service", method: "PUT", path: services + "/again/status", code: 422,
			body: `{"metadata":{"name":"again"},"spec":{"ports":[{"port":80}]},"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}}`,
			want: map[string]any{"details.causes.0.field": "status.loadBalancer.ingress"}},
		{name: "dry run takes nothing", method: "POST", path: services + "?dryRun=All", body: clusterIPService("dry", "10.0.0.7"), code: 201,
			want: map[string]any{"spec.clusterIP": "10.0.0.7"}},
		{name: "not taken by the dry run", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.7", code: 404},
	})
}

// TestServiceNodePorts checks node ports as kube-apiserver gives them on its
// default range (30000-32767): one for each port of a NodePort or
// LoadBalancer Service, none two Services share, the one asked for refused
// with kube's message when taken or out of range, a health check node port
// for a LoadBalancer with externalTrafficPolicy Local, kept when an update
// leaves them out, freed by a change to ClusterIP and by a delete.
func TestServiceNodePorts(t *testing.T) {
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{})
	seen := map[string]string{}
	for i := range 10 {
		name := fmt.Sprintf("np%d", i)
		r := exchange(t, ts, "POST", services, nil, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"type":"NodePort","ports":[{"name":"a","port":80},{"name":"b","port":443}]}}`, name))
		if r.code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", name, r.code, r.obj)
		}
		for _, p := range []string{"spec.ports.0.nodePort", "spec.ports.1.nodePort"} {
			port := fmt.Sprint(at(r.obj, p))
			var n int
			if _, err := fmt.Sscan(port, &n); err != nil || n < 30000 || n > 32767 {
				t.Fatalf("%s: %s = %s, want a port of 30000-32767", name, p, port)
			}
			if other, ok := seen[port]; ok {
				t.Fatalf("%s and %s share node port %s", name, other, port)
			}
			seen[port] = name
		}
	}
	nodePort := func(name, typ string, port int) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"type":%q,"ports":[{"port":80,"nodePort":%d}]}}`, name, typ, port)
	}
	runSteps(t, ts, []step{
		{name: "asked", method: "POST", path: services, body: nodePort("asked", "NodePort", 30080), code: 201, want: map[string]any{"spec.ports.0.nodePort": "30080"}},
		{name: "taken", method: "POST", path: services, body: nodePort("taken", "NodePort", 30080), code: 422,
			want: map[string]any{"message": `Service "taken" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`}},
		{name: "out of range", method: "POST", path: services, body: nodePort("far", "NodePort", 20000), code: 422,
			check: wantCauses(`spec.ports[0].nodePort: Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767`)},
		{name: "TCP and UDP of one port share one", method: "POST", path: services, code: 201,
			body: `{"metadata":{"name":"dns"},"spec":{"type":"NodePort","ports":[{"name":"udp","port":53,"protocol":"UDP"},{"name":"tcp","port":53,"protocol":"TCP"}]}}`,
			check: func(t *testing.T, r response) {
				if a, b := at(r.obj, "spec.ports.0.nodePort"), at(r.obj, "spec.ports.1.nodePort"); a != b || a == nil {
					t.Errorf("node ports %v and %v, want one", a, b)
				}
			}},
		{name: "left out on update", method: "PUT", path: services + "/asked", body: `{"metadata":{"name":"asked"},"spec":{"type":"NodePort","ports":[{"port":80}]}}`, code: 200,
			want: map[string]any{"spec.ports.0.nodePort": "30080"}},
		{name: "to ClusterIP", method: "PUT", path: services + "/asked", body: nodePort("asked", "ClusterIP", 30080), code: 200,
			want: map[string]any{"spec.ports.0.nodePort": nil}},
		{name: "freed by type change", method: "POST", path: services, body: nodePort("next", "NodePort", 30080), code: 201},
		{name: "delete", method: "DELETE", path: services + "/next", code: 200},
		{name: "freed by delete", method: "POST", path: services, body: nodePort("last", "LoadBalancer", 30080), code: 201},
		{name: "health check", method: "POST", path: services, code: 201,
			body: `{"metadata":{"name":"local"},"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","healthCheckNodePort":30099,"ports":[{"port":80}]}}`,
			want: map[string]any{"spec.healthCheckNodePort": "30099"}},
		{name: "health check port taken", method: "POST", path: services, body: nodePort("hc", "NodePort", 30099), code: 422,
			check: wantCauses(`spec.ports[0].nodePort: Invalid value: 30099: provided port is already allocated`)},
		// kube's initNodePorts takes a node port once per Service: a port of
		// another number asking for it finds it taken (by the first).
		{name: "one node port asked by two ports", method: "POST", path: services, code: 422,
			body:  `{"metadata":{"name":"two"},"spec":{"type":"NodePort","ports":[{"name":"a","port":80,"nodePort":30090},{"name":"b","port":81,"protocol":"UDP","nodePort":30090}]}}`,
			check: wantCauses(`spec.ports[1].nodePort: Invalid value: 30090: provided port is already allocated`)},
		{name: "freed after the refusal", method: "POST", path: services, body: nodePort("after", "NodePort", 30090), code: 201},
	})
}

// TestServiceTrafficValidation checks through the server what kube's
// Service validation says of the load balancer and traffic fields (the
// interop differential proves the rest against kube's own): a health
// check node port only for a Local LoadBalancer, allocated when not
// given and kept on update; a loadBalancerClass only for a LoadBalancer,
// and not changed once set.
func TestServiceTrafficValidation(t *testing.T) {
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{})
	lb := func(name, extra string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"type":"LoadBalancer","ports":[{"port":80}]%s}}`, name, extra)
	}
	runSteps(t, ts, []step{
		{name: "health check port on NodePort", method: "POST", path: services, code: 422,
			body:  `{"metadata":{"name":"np"},"spec":{"type":"NodePort","healthCheckNodePort":30100,"ports":[{"port":80}]}}`,
			check: wantCauses("spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'")},
		{name: "class on ClusterIP", method: "POST", path: services, code: 422,
			body:  `{"metadata":{"name":"cip"},"spec":{"loadBalancerClass":"example.com/lb","ports":[{"port":80}]}}`,
			check: wantCauses("spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'")},
		{name: "local", method: "POST", path: services, body: lb("local", `,"externalTrafficPolicy":"Local","loadBalancerClass":"example.com/lb"`), code: 201,
			check: func(t *testing.T, r response) {
				var hc int
				if _, err := fmt.Sscan(fmt.Sprint(at(r.obj, "spec.healthCheckNodePort")), &hc); err != nil || hc < 30000 || hc > 32767 {
					t.Errorf("healthCheckNodePort %v, want one allocated of 30000-32767", at(r.obj, "spec.healthCheckNodePort"))
				}
			}},
		{name: "class changed", method: "PUT", path: services + "/local", body: lb("local", `,"externalTrafficPolicy":"Local","loadBalancerClass":"example.com/other"`), code: 422,
			check: wantCauses(`spec.loadBalancerClass: Invalid value: "example.com/other": may not change once set`)},
		{name: "health check port changed", method: "PUT", path: services + "/local", body: lb("local", `,"externalTrafficPolicy":"Local","loadBalancerClass":"example.com/lb","healthCheckNodePort":30999`), code: 422,
			check: wantCauses(`spec.healthCheckNodePort: Forbidden: field is immutable`)},
		{name: "kept when left out", method: "PUT", path: services + "/local", body: lb("local", `,"externalTrafficPolicy":"Local","loadBalancerClass":"example.com/lb"`), code: 200},
	})
}

// TestServiceDryRunAllocations checks kube's dry run of what a Service
// asks for: a node port taken is refused with the message of a real write
// (kube's PortAllocationOperation checks it), a cluster IP taken is not
// (kube's IP allocators check only the range in a dry run: "Don't bother
// to check whether the IP is actually free"), and neither is taken.
func TestServiceDryRunAllocations(t *testing.T) {
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{})
	nodePort := func(name, ip string, port int) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"type":"NodePort","clusterIP":%q,"ports":[{"port":80,"nodePort":%d}]}}`, name, ip, port)
	}
	taken := `Service "dry" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`
	runSteps(t, ts, []step{
		{name: "holder", method: "POST", path: services, body: nodePort("holder", "10.0.0.7", 30080), code: 201},
		{name: "dry run asking a taken node port", method: "POST", path: services + "?dryRun=All", body: nodePort("dry", "10.0.0.8", 30080), code: 422,
			want: map[string]any{"message": taken}},
		{name: "dry run asking a taken cluster IP", method: "POST", path: services + "?dryRun=All", body: nodePort("dry", "10.0.0.7", 30081), code: 201,
			want: map[string]any{"spec.clusterIP": "10.0.0.7", "spec.ports.0.nodePort": "30081"}},
		{name: "dry run takes nothing", method: "POST", path: services, body: nodePort("real", "10.0.0.8", 30081), code: 201},
		{name: "other", method: "POST", path: services, body: nodePort("dry", "10.0.0.9", 30082), code: 201},
		{name: "dry-run update asking a taken node port", method: "PUT", path: services + "/dry?dryRun=All", body: nodePort("dry", "10.0.0.9", 30080), code: 422,
			want: map[string]any{"message": taken}},
		{name: "dry-run update asking a free node port", method: "PUT", path: services + "/dry?dryRun=All", body: nodePort("dry", "10.0.0.9", 30083), code: 200,
			want: map[string]any{"spec.ports.0.nodePort": "30083"}},
		{name: "still free", method: "POST", path: services, body: nodePort("last", "10.0.0.10", 30083), code: 201},
	})
}

// TestServiceFinalizerUpdateFreesAllocations checks that an update that
// removes a deleted Service's last finalizer, and so deletes it, frees
// what that same update allocated (a type change from ExternalName asking
// an address and a node port), not only what the Service held.
func TestServiceFinalizerUpdateFreesAllocations(t *testing.T) {
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{})
	runSteps(t, ts, []step{
		{name: "create", method: "POST", path: services, code: 201,
			body: `{"metadata":{"name":"fin","finalizers":["example.com/keep"]},"spec":{"type":"ExternalName","externalName":"example.com"}}`},
		{name: "delete", method: "DELETE", path: services + "/fin", code: 200},
		{name: "last finalizer removed with a type change", method: "PUT", path: services + "/fin", code: 200,
			body: `{"metadata":{"name":"fin"},"spec":{"type":"NodePort","clusterIP":"10.0.0.7","ports":[{"port":80,"nodePort":30555}]}}`},
		{name: "gone", method: "GET", path: services + "/fin", code: 404},
		{name: "address freed", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/10.0.0.7", code: 404},
		{name: "node port freed", method: "POST", path: services, code: 201,
			body: `{"metadata":{"name":"next"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30555}]}}`},
	})
}

// TestServiceAllocationsShared checks that servers sharing a store never
// give one address twice, however their creates race, that a full range
// is kube's error, that a restarted server knows what is taken, and that a
// namespace's deletion frees its Services' addresses.
func TestServiceAllocationsShared(t *testing.T) {
	store := newMemoryStore(t)
	cfg := servicealloc.Config{ClusterIPRanges: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/28")}} // 14 addresses
	a, b := newServiceServer(t, store, cfg), newServiceServer(t, store, cfg)
	if r := exchange(t, a, "POST", "/api/v1/namespaces", nil, `{"metadata":{"name":"ns"}}`); r.code != http.StatusCreated {
		t.Fatalf("namespace: %d %v", r.code, r.obj)
	}
	const ns = "/api/v1/namespaces/ns/services"
	ips := make([]string, 14)
	var wg sync.WaitGroup
	for i := range ips {
		ts := []*httptest.Server{a, b}[i%2]
		wg.Go(func() {
			r := exchange(t, ts, "POST", ns, nil, clusterIPService(fmt.Sprintf("s%d", i), ""))
			if r.code != http.StatusCreated {
				t.Errorf("create %d: %d %v", i, r.code, r.obj)
				return
			}
			ips[i], _ = at(r.obj, "spec.clusterIP").(string)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, ip := range ips {
		if seen[ip] {
			t.Errorf("s%d: %s given twice in %v", i, ip, ips)
		}
		seen[ip] = true
	}
	full := step{name: "full", method: "POST", path: services, body: clusterIPService("full", ""), code: 500,
		want: map[string]any{"message": `Internal error occurred: failed to allocate a serviceIP for Service "full": range is full`}}
	runSteps(t, a, []step{full})
	restarted := newServiceServer(t, store, cfg)
	runSteps(t, restarted, []step{
		full,
		{name: "delete namespace", method: "DELETE", path: "/api/v1/namespaces/ns", code: 200},
	})
	// The leader's namespace controller deletes its Services, freeing
	// their addresses, which every server then sees.
	testwait.Until(t, 5*time.Second, "an address of the deleted namespace's Services given again", func() bool {
		return exchange(t, restarted, "POST", services, nil, clusterIPService("free", ips[0])).code == http.StatusCreated
	})
}

// TestKubernetesService checks the Service default/kubernetes that the
// leading server keeps, as kube's kubernetesservice controller: the first
// address of the range (recorded as an IPAddress), port 443 to the
// advertised port, kube's labels; its Endpoints and EndpointSlice name the
// advertised address and port; each is made again within the interval
// after a delete.
func TestKubernetesService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		s, err := New(context.Background(), Config{Storage: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Advertise: netip.MustParseAddrPort("192.0.2.7:6443")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		synctest.Wait()
		get := func(group, plural, name string) api.Object {
			t.Helper()
			res, _ := s.catalog.Get(group, "v1", plural)
			obj, err := s.registry.Get(context.Background(), res, "default", name)
			if err != nil {
				t.Fatalf("%s %s: %v", plural, name, err)
			}
			return obj
		}
		check := func() {
			t.Helper()
			svc := get("", "services", "kubernetes")
			for path, want := range map[string]any{
				"spec.clusterIP": "10.0.0.1", "spec.clusterIPs.0": "10.0.0.1", "spec.ipFamilies.0": "IPv4", "spec.type": "ClusterIP",
				"spec.ports.0.name": "https", "spec.ports.0.port": "443", "spec.ports.0.targetPort": "6443", "spec.ports.0.protocol": "TCP",
				"metadata.labels.provider": "kubernetes", "metadata.labels.component": "apiserver",
			} {
				if got := fmt.Sprint(at(svc, path)); got != want {
					t.Errorf("service %s = %s, want %s", path, got, want)
				}
			}
			if ipa := get("networking.k8s.io", "ipaddresses", "10.0.0.1"); at(ipa, "spec.parentRef.name") != "kubernetes" {
				t.Errorf("IPAddress 10.0.0.1: %v", ipa)
			}
			ep := get("", "endpoints", "kubernetes")
			for path, want := range map[string]any{"subsets.0.addresses.0.ip": "192.0.2.7", "subsets.0.ports.0.port": "6443", "subsets.0.ports.0.name": "https"} {
				if got := fmt.Sprint(at(ep, path)); got != want {
					t.Errorf("endpoints %s = %s, want %s", path, got, want)
				}
			}
			slice := get("discovery.k8s.io", "endpointslices", "kubernetes")
			for path, want := range map[string]any{"addressType": "IPv4", "endpoints.0.addresses.0": "192.0.2.7", "endpoints.0.conditions.ready": "true", "ports.0.port": "6443"} {
				if got := fmt.Sprint(at(slice, path)); got != want {
					t.Errorf("endpointslice %s = %s, want %s", path, got, want)
				}
			}
			if l, _ := at(slice, "metadata.labels").(map[string]any); l["kubernetes.io/service-name"] != "kubernetes" {
				t.Errorf("endpointslice labels %v", l)
			}
			cidrs, _ := s.catalog.Get("networking.k8s.io", "v1", "servicecidrs")
			cidr, err := s.registry.Get(context.Background(), cidrs, "", "kubernetes")
			if err != nil || at(cidr, "spec.cidrs.0") != "10.0.0.0/24" || at(cidr, "status.conditions.0.type") != "Ready" || at(cidr, "status.conditions.0.status") != "True" {
				t.Errorf("ServiceCIDR kubernetes: %v %v", err, cidr)
			}
		}
		check()
		// Deleted, each is made again at the next round, whether the
		// Service is there or not.
		for _, deleted := range [][2]string{{"", "services"}, {"", "endpoints"}, {"discovery.k8s.io", "endpointslices"}} {
			res, _ := s.catalog.Get(deleted[0], "v1", deleted[1])
			if _, _, err := s.registry.Delete(context.Background(), res, "default", "kubernetes", registry.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(kubernetesServiceInterval)
			synctest.Wait()
			check()
		}
	})
}

// TestServiceDualStack checks the families on a dual-stack range as kube's
// initIPFamilyFields and updateClusterIPs give them: SingleStack by
// default, both families (the first range's first) for PreferDualStack,
// the order asked for with RequireDualStack, a secondary address added by
// an upgrade and freed by a downgrade to SingleStack.
func TestServiceDualStack(t *testing.T) {
	ranges, err := servicealloc.ParseClusterIPRanges("10.0.0.0/24,fd00::/108")
	if err != nil {
		t.Fatal(err)
	}
	ts := newServiceServer(t, newMemoryStore(t), servicealloc.Config{ClusterIPRanges: ranges})
	with := func(name, spec string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"ports":[{"port":80}]%s}}`, name, spec)
	}
	var secondary string
	runSteps(t, ts, []step{
		{name: "single by default", method: "POST", path: services, body: with("single", ""), code: 201,
			want: map[string]any{"spec.ipFamilyPolicy": "SingleStack", "spec.ipFamilies.0": "IPv4", "spec.ipFamilies.1": nil, "spec.clusterIPs.1": nil}},
		{name: "prefer dual", method: "POST", path: services, body: with("prefer", `,"ipFamilyPolicy":"PreferDualStack"`), code: 201,
			want: map[string]any{"spec.ipFamilies.0": "IPv4", "spec.ipFamilies.1": "IPv6"}, check: func(t *testing.T, r response) {
				a, _ := netip.ParseAddr(fmt.Sprint(at(r.obj, "spec.clusterIPs.0")))
				b, _ := netip.ParseAddr(fmt.Sprint(at(r.obj, "spec.clusterIPs.1")))
				if !a.Is4() || !netip.MustParsePrefix("fd00::/108").Contains(b) {
					t.Errorf("clusterIPs %v, want an IPv4 then an IPv6 address of the ranges", at(r.obj, "spec.clusterIPs"))
				}
			}},
		{name: "require dual, IPv6 first", method: "POST", path: services, body: with("six", `,"ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv6","IPv4"]`), code: 201,
			want: map[string]any{"spec.ipFamilies.0": "IPv6", "spec.ipFamilies.1": "IPv4"}, check: func(t *testing.T, r response) {
				if a, _ := netip.ParseAddr(fmt.Sprint(at(r.obj, "spec.clusterIP"))); !a.Is6() {
					t.Errorf("clusterIP %v, want IPv6", at(r.obj, "spec.clusterIP"))
				}
			}},
		{name: "upgrade", method: "PATCH", path: services + "/single", body: `{"spec":{"ipFamilyPolicy":"PreferDualStack"}}`, code: 200,
			want: map[string]any{"spec.ipFamilies.1": "IPv6"}, check: func(t *testing.T, r response) {
				secondary = fmt.Sprint(at(r.obj, "spec.clusterIPs.1"))
				if a, err := netip.ParseAddr(secondary); err != nil || !a.Is6() {
					t.Errorf("secondary %q, want an IPv6 address", secondary)
				}
			}},
	})
	runSteps(t, ts, []step{
		{name: "secondary recorded", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/" + secondary, code: 200,
			want: map[string]any{"spec.parentRef.name": "single"}},
		{name: "downgrade", method: "PATCH", path: services + "/single", body: `{"spec":{"ipFamilyPolicy":"SingleStack"}}`, code: 200,
			want: map[string]any{"spec.ipFamilies.1": nil, "spec.clusterIPs.1": nil}},
		{name: "secondary freed", method: "GET", path: "/apis/networking.k8s.io/v1/ipaddresses/" + secondary, code: 404},
		{name: "IPAddress names are canonical", method: "POST", path: "/apis/networking.k8s.io/v1/ipaddresses", code: 422,
			body:  `{"metadata":{"name":"fd00:0::1"},"spec":{"parentRef":{"resource":"services","namespace":"default","name":"x"}}}`,
			check: wantCauses(`metadata.name: Invalid value: "fd00:0::1": must be in canonical form ("fd00::1")`)},
	})
}
