package interop

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestClusterServicesDistinctAddresses checks that two servers on one etcd
// cluster, each creating NodePort Services at once with client-go (in
// protobuf), never give one cluster IP or node port twice: the store's
// create of each IPAddress, and of each node port's key, is the lock. The
// ranges are small, so that the servers meet on the same addresses.
func TestClusterServicesDistinctAddresses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	_, c := StartCluster(t, listwatchBin(t), "--service-cluster-ip-range", "10.96.0.0/27", "--service-node-port-range", "31000-31029")
	// The leader makes the kubernetes Service at the range's first address;
	// the Services below take the rest.
	w, err := typedClientset(t, c.Servers[0].URL).CoreV1().Services("default").Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if svc, ok := ev.Object.(*corev1.Service); !ok || svc.Spec.ClusterIP != "10.96.0.1" {
			t.Fatalf("kubernetes Service: %v %v", ev.Type, ev.Object)
		}
	case <-time.After(time.Minute):
		t.Fatal("no kubernetes Service after a minute")
	}
	w.Stop()
	const perServer = 14 // 28 of the 29 addresses the kubernetes Service leaves, 28 of 30 ports
	type got struct{ ip, port string }
	results := make(chan got, 2*perServer)
	var wg sync.WaitGroup
	for s := range 2 {
		services := typedClientset(t, c.Servers[s].URL).CoreV1().Services("default")
		for i := range perServer {
			wg.Go(func() {
				svc, err := services.Create(t.Context(), &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d-%d", s, i)},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "a"},
						Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Errorf("server %d, service %d: %v", s, i, err)
					return
				}
				results <- got{svc.Spec.ClusterIP, fmt.Sprint(svc.Spec.Ports[0].NodePort)}
			})
		}
	}
	wg.Wait()
	close(results)
	ips, ports := map[string]bool{"10.96.0.1": true}, map[string]bool{} // the kubernetes Service's
	for r := range results {
		ip, err := netip.ParseAddr(r.ip)
		if err != nil || !netip.MustParsePrefix("10.96.0.0/27").Contains(ip) || ips[r.ip] || ports[r.port] {
			t.Errorf("address %s, node port %s: out of range or given twice (%v, %v)", r.ip, r.port, ips, ports)
		}
		ips[r.ip], ports[r.port] = true, true
	}
	addresses, err := typedClientset(t, c.Servers[0].URL).NetworkingV1().IPAddresses().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(addresses.Items) != len(ips) {
		t.Errorf("%d IPAddresses, want one per address given (%d)", len(addresses.Items), len(ips))
	}
	for _, a := range addresses.Items {
		if !ips[a.Name] || a.Spec.ParentRef == nil || a.Spec.ParentRef.Resource != "services" {
			t.Errorf("IPAddress %s: %+v", a.Name, a.Spec.ParentRef)
		}
	}
}
