package interop

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestControllerLeaseAcrossServersOnEtcd runs two servers on one etcd:
// exactly one holds Lease kube-system/listwatch-controller-manager (and
// says so in leader_election_master_status); killed with SIGKILL, so that
// it cannot release the Lease, the other takes over once the Lease has
// gone unrenewed for its duration, and kubectl shows the new holder.
func TestControllerLeaseAcrossServersOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	const (
		lease    = "listwatch-controller-manager"
		duration = 4 * time.Second
		retry    = 500 * time.Millisecond
	)
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--unsafe-no-fsync",
		"--leader-elect-lease-duration", duration.String(), "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", retry.String()}
	servers := []*Listwatch{StartListwatch(t, bin, args...), StartListwatch(t, bin, args...)}

	// Exactly one leads: the first to start found the Lease free.
	leading := func(lw *Listwatch) bool {
		resp, err := http.Get(lw.URL + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), fmt.Sprintf("leader_election_master_status{name=%q} 1", lease))
	}
	var leader, other *Listwatch
	waitFor(t, binStartTimeout, func() bool {
		a, b := leading(servers[0]), leading(servers[1])
		switch {
		case a && b:
			t.Fatal("both servers lead")
		case a:
			leader, other = servers[0], servers[1]
		case b:
			leader, other = servers[1], servers[0]
		}
		return a || b
	})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: other.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	before, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leading(other) {
		t.Fatal("both servers lead")
	}

	leader.Kill()
	killed := time.Now()
	waitFor(t, binStartTimeout, func() bool { return leading(other) })
	// The other sees the last renewal within a jittered retry, takes the
	// Lease at its first attempt after the duration, and the metrics
	// poll adds a little.
	took := time.Since(killed)
	t.Logf("took over %v after the kill", took)
	if took > duration+2*retry*22/10+2*time.Second {
		t.Errorf("took over %v after the kill, want within the lease duration (%v) and two retries", took, duration)
	}
	after, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder, was := *after.Spec.HolderIdentity, *before.Spec.HolderIdentity
	if holder == was || !strings.Contains(holder, "_") || *after.Spec.LeaseTransitions != *before.Spec.LeaseTransitions+1 ||
		*after.Spec.LeaseDurationSeconds != int32(duration/time.Second) || after.Spec.RenewTime == nil || after.Spec.AcquireTime == nil {
		t.Fatalf("lease after the takeover: %+v, before: %+v", after.Spec, before.Spec)
	}
	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), other.URL, true)
	out := k.must(t, "get", "lease", "-n", "kube-system")
	contains(t, out, lease, holder)
}

// waitFor polls cond until it holds, failing t after limit.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v", limit)
		}
		<-tick.C
	}
}
