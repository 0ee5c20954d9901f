package interop

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/listwatch/listwatch/internal/testwait"
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
		duration = 4 * time.Second
		retry    = 500 * time.Millisecond
	)
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--unsafe-no-fsync",
		"--leader-elect-lease-duration", duration.String(), "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", retry.String()}
	servers := []*Listwatch{StartListwatch(t, bin, args...), StartListwatch(t, bin, args...)}

	// Exactly one leads: the first to start found the Lease free.
	leading := leadsControllers
	var leader, other *Listwatch
	testwait.Until(t, binStartTimeout, "one server to lead", func() bool {
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
	before, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), controllerLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leading(other) {
		t.Fatal("both servers lead")
	}

	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	testwait.Until(t, binStartTimeout, "the other server to lead", func() bool { return leading(other) })
	// The other sees the last renewal within a jittered retry, takes the
	// Lease at its first attempt after the duration, and the metrics
	// poll adds a little.
	took := time.Since(killed)
	t.Logf("took over %v after the kill", took)
	if took > duration+2*retry*22/10+2*time.Second {
		t.Errorf("took over %v after the kill, want within the lease duration (%v) and two retries", took, duration)
	}
	after, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), controllerLease, metav1.GetOptions{})
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
	contains(t, out, controllerLease, holder)
}

// controllerLease is the Lease the servers elect their controllers' leader
// with.
const controllerLease = "listwatch-controller-manager"

// leadsControllers reports whether lw says it leads, in its metrics.
func leadsControllers(lw *Listwatch) bool {
	resp, err := http.Get(lw.URL + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), fmt.Sprintf("leader_election_master_status{name=%q} 1", controllerLease))
}

// TestControllerLeaseWithClientGo: the server's election and client-go's
// tools/leaderelection read each other's Lease. A client-go candidate
// sees the server lead (OnNewLeader) and never takes the Lease while the
// server renews it; a Lease client-go holds and renews, the server leaves
// alone (it steps down on reading it), and when client-go releases it
// (ReleaseOnCancel) the server takes it within a retry.
func TestControllerLeaseWithClientGo(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync", "--leader-elect-lease-duration", electionLeaseDuration.String(),
		"--leader-elect-renew-deadline", electionRenewDeadline.String(), "--leader-elect-retry-period", electionRetryPeriod.String())
	ctx, cancel := context.WithTimeout(t.Context(), electionTimeout)
	defer cancel()
	testwait.Until(t, binStartTimeout, "the server to lead", func() bool { return leadsControllers(lw) })
	cs := typedClientset(t, lw.URL)
	leases := cs.CoordinationV1().Leases("kube-system")
	lock := metav1.ObjectMeta{Name: controllerLease, Namespace: "kube-system"}
	w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + controllerLease})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// held runs until the Lease, held by holder all along, has been renewed
	// for twice its duration since it was acquired.
	held := func(holder func(string) bool) string {
		for lease := range leaseEvents(t, ctx, w) {
			s := lease.Spec
			if s.HolderIdentity == nil || !holder(*s.HolderIdentity) {
				t.Fatalf("the lease moved: %+v", s)
			}
			if s.RenewTime != nil && s.AcquireTime != nil && s.RenewTime.Sub(s.AcquireTime.Time) > 2*electionLeaseDuration {
				return *s.HolderIdentity
			}
		}
		return ""
	}

	var log electionLog
	isServer := func(id string) bool { return id != "client-go" && strings.Contains(id, "_") }
	c := runCandidate(ctx, t, cs, lock, "client-go", isServer, &log)
	waitClosed(t, ctx, c.saw, "client-go to see the server lead")
	server := held(isServer)
	stopCandidate(c)
	if got := log.get(); len(got) != 0 {
		t.Fatalf("client-go led while the server renewed: %v", got)
	}

	// client-go takes the Lease over as the server's renewals would see
	// another holder, and renews it.
	id := "client-go"
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error { // with the server's renewals
		lease, err := leases.Get(ctx, controllerLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NowMicro()
		lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = &id, &now, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c = runCandidate(ctx, t, cs, lock, "client-go", func(string) bool { return false }, &log)
	waitClosed(t, ctx, c.leading, "client-go to lead")
	testwait.Until(t, electionTimeout, "the server to step down", func() bool { return !leadsControllers(lw) })
	held(func(h string) bool { return h == id })
	stoppedAt := time.Now()
	stopCandidate(c)
	testwait.Until(t, electionTimeout, "the server to lead again", func() bool { return leadsControllers(lw) })
	if took := time.Since(stoppedAt); took > 2*electionRetryPeriod*22/10+time.Second {
		t.Errorf("the server led %v after client-go released the lease, want within a retry", took)
	}
	if lease, err := leases.Get(ctx, controllerLease, metav1.GetOptions{}); err != nil || *lease.Spec.HolderIdentity != server {
		t.Errorf("lease after client-go released it: %+v %v, want held by %s", lease.Spec, err, server)
	}
}
