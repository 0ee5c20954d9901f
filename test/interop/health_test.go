package interop

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/listwatch/listwatch/internal/testwait"
)

// healthAnswer is what a health endpoint answered.
type healthAnswer struct {
	Code        int
	Body        string
	ContentType string
}

// kubeHealth is kube-apiserver's answer to path, from its own healthz
// handlers with the checks it runs on etcd (the log check, informer-sync
// and post-start hooks aside), etcd's failing with etcdErr.
func kubeHealth(path string, etcdErr error) healthAnswer {
	etcd := func(*http.Request) error { return etcdErr }
	mux := http.NewServeMux()
	healthz.InstallLivezHandler(mux, healthz.PingHealthz, healthz.NamedCheck("etcd", etcd))
	healthz.InstallReadyzHandler(mux, healthz.PingHealthz, healthz.NamedCheck("etcd", etcd),
		healthz.NamedCheck("etcd-readiness", etcd), healthz.NewShutdownHealthz(make(chan struct{})))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return healthAnswer{rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")}
}

func askHealth(t *testing.T, url string) healthAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return healthAnswer{resp.StatusCode, string(body), resp.Header.Get("Content-Type")}
}

// healthPaths are asked of listwatch and of kube's handlers alike.
var healthPaths = []string{"/readyz", "/readyz?verbose", "/livez", "/livez?verbose",
	"/readyz?verbose&exclude=etcd&exclude=nope", "/readyz?exclude=etcd&exclude=etcd-readiness"}

// sameHealth checks that lw answers every health path as kube-apiserver
// would with etcd's check failing with etcdErr.
func sameHealth(t *testing.T, lw *Listwatch, etcdErr error) {
	t.Helper()
	for _, path := range healthPaths {
		if diff := cmp.Diff(kubeHealth(path, etcdErr), askHealth(t, lw.URL+path)); diff != "" {
			t.Errorf("%s with etcd failing: %v (-kube +listwatch):\n%s", path, etcdErr != nil, diff)
		}
	}
}

// waitHealth asks lw's /readyz until it answers code.
func waitHealth(t *testing.T, lw *Listwatch, code int, within time.Duration) {
	t.Helper()
	testwait.Until(t, within, fmt.Sprintf("/readyz to answer %d", code), func() bool { return askHealth(t, lw.URL+"/readyz").Code == code })
}

// TestHealthFollowsEtcd runs a server on a one-member etcd that is killed
// and restarted: /readyz and /livez answer as kube-apiserver's handlers
// do, 200 and then 500 with kube's text, and 200 again once etcd is back;
// kubectl get --raw shows kube's verbose list.
func TestHealthFollowsEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	ec := StartEtcdCluster(t, 1)
	lw := StartListwatch(t, listwatchBin(t), "--storage", "etcd", "--etcd-endpoints", ec.Endpoint(0), "--etcd-prefix", "/health-test")
	sameHealth(t, lw, nil)
	k := kubectls(t)["current"](t, lw.URL)
	if got, want := k.must(t, "get", "--raw", "/readyz?verbose"), kubeHealth("/readyz?verbose", nil).Body; got != want {
		t.Errorf("kubectl get --raw=/readyz?verbose:\n%s\nwant\n%s", got, want)
	}

	ec.Kill(0)
	waitHealth(t, lw, http.StatusInternalServerError, 30*time.Second)
	sameHealth(t, lw, io.ErrUnexpectedEOF)
	out, err := k.run(t, nil, "get", "--raw", "/readyz?verbose")
	if err == nil || !strings.Contains(out, `[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld`) {
		t.Errorf("kubectl get --raw=/readyz?verbose with etcd down: %v\n%s", err, out)
	}

	ec.Restart(t, 0)
	waitHealth(t, lw, http.StatusOK, time.Minute)
	sameHealth(t, lw, nil)
}

// etcdCompactions counts the compactions the etcd members of this process
// have done (etcd's own histogram of their durations).
func etcdCompactions(t *testing.T) uint64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("etcd reports no compactions metric")
	return 0
}

// TestServersCompactOncePerInterval runs three servers on one etcd, each
// to compact every 200 ms all but the last revision, while the revision
// grows: between them they compact once per interval, taking turns on
// compact_rev_key (each on its own, they compacted 43 times in 15
// intervals).
func TestServersCompactOncePerInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	const interval = 200 * time.Millisecond
	cli := RunEtcd(t)
	bin := listwatchBin(t)
	args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--etcd-prefix", "/compaction-test",
		"--compaction-interval", interval.String(), "--compaction-keep-revisions", "1", "--compaction-keep-duration", "1ms"}
	StartListwatch(t, bin, args...)
	StartListwatch(t, bin, args...)
	StartListwatch(t, bin, args...)

	ctx := t.Context()
	claims := func() int64 {
		resp, err := cli.Get(ctx, "compact_rev_key")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0
		}
		return resp.Kvs[0].Version
	}
	claimsBefore, compactionsBefore, start := claims(), etcdCompactions(t), time.Now()
	tick := time.NewTicker(10 * time.Millisecond) // the revision grows between rounds
	defer tick.Stop()
	for time.Since(start) < 15*interval {
		if _, err := cli.Put(ctx, "/elsewhere/counter", time.Now().String()); err != nil {
			t.Fatal(err)
		}
		<-tick.C
	}
	rounds := int64(time.Since(start) / interval)
	claimed, compacted := claims()-claimsBefore, int64(etcdCompactions(t)-compactionsBefore)
	t.Logf("%d intervals: %d rounds claimed, %d compactions", rounds, claimed, compacted)
	if claimed < rounds/3 || claimed > rounds+2 {
		t.Errorf("%d rounds claimed in %d intervals, want one per interval at most", claimed, rounds)
	}
	if compacted < 2 || compacted > rounds+2 {
		t.Errorf("%d compactions in %d intervals, want one per interval at most", compacted, rounds)
	}
}
