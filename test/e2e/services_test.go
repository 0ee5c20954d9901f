package e2e

import (
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestServicesFromTheBinary drives `listwatch serve` with kubectl as a
// user would: the `kubernetes` Service and its endpoints appear, Services
// get cluster IPs and node ports of the ranges the flags give, no two the
// same, an address taken is refused with kube's message, a restart keeps
// what is taken, and a delete frees it.
func TestServicesFromTheBinary(t *testing.T) {
	kubectl := needKubectl(t)
	flags := []string{"--service-cluster-ip-range", "10.96.0.0/28", "--service-node-port-range", "31000-31009"}
	s := startServer(t, flags...)
	run, must := kubectlIn(t, kubectl, s.URL)

	watch := exec.Command(kubectl, "--server", s.URL, "-n", "default", "get", "services", "-w", "--field-selector", "metadata.name=kubernetes", "-o", "name")
	startStream(t, watch).expectLines(t, `^service/kubernetes$`)
	if ip := must("get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].port}"); ip != "10.96.0.1 443" {
		t.Errorf("kubernetes service: %q, want the range's first address, port 443", ip)
	}
	_, port, _ := net.SplitHostPort(s.addr)
	ep := "{.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}"
	if got := must("get", "endpoints", "kubernetes", "-o", "jsonpath="+ep); got != "127.0.0.1:"+port {
		t.Errorf("kubernetes endpoints: %q, want 127.0.0.1:%s", got, port)
	}

	for i := range 5 {
		must("create", "service", "nodeport", "n"+strconv.Itoa(i), "--tcp=80:8080")
	}
	rows := "jsonpath={range .items[*]}{.metadata.name} {.spec.clusterIP} {.spec.ports[0].nodePort}{\"\\n\"}{end}"
	ips, ports := map[string]string{}, map[string]string{}
	for line := range strings.Lines(must("get", "services", "-o", rows)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] == "kubernetes" {
			continue
		}
		ip, err := netip.ParseAddr(f[1])
		if err != nil || !netip.MustParsePrefix("10.96.0.0/28").Contains(ip) {
			t.Errorf("%s: clusterIP %s, want one of 10.96.0.0/28", f[0], f[1])
		}
		if n, _ := strconv.Atoi(f[2]); n < 31000 || n > 31009 {
			t.Errorf("%s: node port %s, want one of 31000-31009", f[0], f[2])
		}
		if other, ok := ips[f[1]]; ok || f[1] == "10.96.0.1" {
			t.Errorf("%s: %s already %s's", f[0], f[1], other)
		}
		if other, ok := ports[f[2]]; ok {
			t.Errorf("%s: node port %s already %s's", f[0], f[2], other)
		}
		ips[f[1]], ports[f[2]] = f[0], f[2]
	}
	if len(ips) != 5 {
		t.Fatalf("%d services with addresses, want 5: %v", len(ips), ips)
	}
	n0 := must("get", "service", "n0", "-o", "jsonpath={.spec.clusterIP}")
	refused := "failed to allocate IP " + n0 + ": provided IP is already allocated"
	if out, err := run("create", "service", "clusterip", "taken", "--tcp=80", "--clusterip="+n0); err == nil || !strings.Contains(out, refused) {
		t.Errorf("asking n0's address: %v %q, want %q", err, out, refused)
	}

	s.stop(t)
	s.start(t, flags...)
	if out, err := run("create", "service", "clusterip", "taken", "--tcp=80", "--clusterip="+n0); err == nil || !strings.Contains(out, refused) {
		t.Errorf("after a restart, asking n0's address: %v %q, want %q", err, out, refused)
	}
	must("create", "service", "clusterip", "after", "--tcp=80")
	if ip := must("get", "service", "after", "-o", "jsonpath={.spec.clusterIP}"); ips[ip] != "" || ip == "10.96.0.1" {
		t.Errorf("after a restart, a new service got %s, already %s's", ip, ips[ip])
	}
	must("delete", "service", "n0")
	must("create", "service", "clusterip", "reuse", "--tcp=80", "--clusterip="+n0)
}
