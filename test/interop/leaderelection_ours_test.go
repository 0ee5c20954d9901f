package interop

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/leaderelection"
)

// ourCandidate is one listwatch leader elector; it logs "<id> started"
// and "<id> stopped" around its term.
type ourCandidate struct {
	leading chan struct{} // closed by OnStartedLeading
	cancel  context.CancelFunc
	done    chan struct{} // closed when Run returns
}

func runOurCandidate(ctx context.Context, t *testing.T, url string, lock metav1.ObjectMeta, id string, log *electionLog) *ourCandidate {
	t.Helper()
	c, err := client.New(client.ConfigForURL(url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cand := &ourCandidate{leading: make(chan struct{}), done: make(chan struct{})}
	e, err := leaderelection.New(leaderelection.Config{
		Client: c, Namespace: lock.Namespace, Name: lock.Name, Identity: id,
		LeaseDuration: electionLeaseDuration, RenewDeadline: electionRenewDeadline, RetryPeriod: electionRetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.Callbacks{OnStartedLeading: func(ctx context.Context) {
			log.add(id + " started")
			close(cand.leading)
			<-ctx.Done()
			log.add(id + " stopped")
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cand.cancel = context.WithCancel(ctx)
	go func() {
		defer close(cand.done)
		e.Run(ctx)
	}()
	t.Cleanup(func() { cand.cancel(); <-cand.done })
	return cand
}

// TestLeaderElectionOursAndClientGo runs listwatch's elector and
// client-go's on one Lease against the real binary. Ours leads first:
// client-go reads its lease, names it the leader and does not take it
// while it renews; ours releases it on cancel and client-go takes it
// within the lease duration. Then a second elector of ours waits while
// client-go leads and takes over when client-go releases. Never do two
// lead at once, and the lease reads the same through k8s.io/api's type.
func TestLeaderElectionOursAndClientGo(t *testing.T) {
	e := startElection(t)
	ctx, lw, leases, w, lock := e.ctx, e.lw, e.leases, e.w, e.lock
	var log electionLog
	ours := runOurCandidate(ctx, t, lw.URL, lock, "ours", &log)
	waitClosed(t, ctx, ours.leading, "ours to lead")
	kube := runCandidate(ctx, t, typedClientset(t, lw.URL), lock, "kube", func(l string) bool { return l == "ours" }, &log)
	defer stopCandidate(kube)
	waitClosed(t, ctx, kube.saw, "client-go to see ours leading")

	// client-go tries every retry period; ours keeps the lease by renewing.
	for lease := range leaseEvents(t, ctx, w) {
		s := lease.Spec
		if deref(s.HolderIdentity) != "ours" || deref(s.LeaseDurationSeconds) != "2" || deref(s.LeaseTransitions) != "0" || s.AcquireTime == nil || s.RenewTime == nil {
			t.Fatalf("ours holds the lease, but it reads holder %s, duration %s, transitions %s, acquired %v, renewed %v",
				deref(s.HolderIdentity), deref(s.LeaseDurationSeconds), deref(s.LeaseTransitions), s.AcquireTime, s.RenewTime)
		}
		if s.RenewTime.Sub(s.AcquireTime.Time) > 2*electionLeaseDuration {
			break
		}
	}

	stopped := time.Now()
	ours.cancel()
	waitClosed(t, ctx, kube.leading, "client-go to lead")
	if took := time.Since(stopped); took > electionLeaseDuration {
		t.Errorf("client-go led %v after ours stopped, want within the lease duration %v (ours released the lease)", took, electionLeaseDuration)
	}
	waitClosed(t, ctx, ours.done, "our elector to return")

	again := runOurCandidate(ctx, t, lw.URL, lock, "ours-again", &log)
	// ours-again must not lead while client-go renews: two lease durations.
	select {
	case <-again.leading:
		t.Fatal("ours-again led while client-go held the lease")
	case <-time.After(2 * electionLeaseDuration):
	}
	theirs := leaseSpecShape(ctx, t, lw.URL)
	log.add("kube stopped") // before the cancel: client-go leads until its context ends
	stopped = time.Now()
	kube.cancel()
	waitClosed(t, ctx, again.leading, "ours-again to lead")
	if took := time.Since(stopped); took > electionLeaseDuration {
		t.Errorf("ours-again led %v after client-go stopped, want within the lease duration %v (client-go released the lease)", took, electionLeaseDuration)
	}
	if got, want := log.get(), []string{"ours started", "ours stopped", "kube started", "kube stopped", "ours-again started"}; !slices.Equal(got, want) {
		t.Errorf("leadership %v, want %v", got, want)
	}
	micro := "0000-00-00T00:00:00.000000Z"
	want := map[string]string{"holderIdentity": "string", "leaseDurationSeconds": "json.Number", "leaseTransitions": "json.Number", "acquireTime": micro, "renewTime": micro}
	if !maps.Equal(theirs, want) {
		t.Errorf("the lease's spec as client-go's elector writes it %v, want %v", theirs, want)
	}
	if ours := leaseSpecShape(ctx, t, lw.URL); !maps.Equal(ours, theirs) {
		t.Errorf("the lease's spec as ours writes it %v, as client-go's %v", ours, theirs)
	}
	lease, err := leases.Get(ctx, "lock", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := lease.Spec; deref(s.HolderIdentity) != "ours-again" || deref(s.LeaseTransitions) != "2" {
		t.Errorf("lease after two hand-overs: holder %s, transitions %s, want ours-again, 2", deref(s.HolderIdentity), deref(s.LeaseTransitions))
	}
}

// leaseSpecShape reads the lock's spec as JSON and returns the shape of
// each field: its JSON type, and a time's layout with its digits zeroed.
func leaseSpecShape(ctx context.Context, t *testing.T, url string) map[string]string {
	t.Helper()
	c, err := client.New(client.ConfigForURL(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lease, err := client.NewResource[client.Unstructured](c, leaderelection.LeasesResource, "default").Get(ctx, "lock")
	if err != nil {
		t.Fatal(err)
	}
	digits := regexp.MustCompile(`[0-9]`)
	shape := map[string]string{}
	for k, v := range lease["spec"].(map[string]any) {
		switch v := v.(type) {
		case string:
			if strings.HasSuffix(k, "Time") {
				shape[k] = digits.ReplaceAllString(v, "0")
			} else {
				shape[k] = "string"
			}
		default:
			shape[k] = fmt.Sprintf("%T", v)
		}
	}
	return shape
}
