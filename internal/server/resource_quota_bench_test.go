package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"

	"github.com/listwatch/listwatch/storage/memory"
)

// Sizes of the quota controller's benchmarks: namespaces, each with
// three quotas over its pods.
const (
	benchQuotaNamespaces = 10
	benchQuotaPods       = 1000
)

// benchQuotaPod is a pod of about 1.5 KiB: a third best-effort, a third
// with a deadline (Terminating), the rest with requests and limits.
func benchQuotaPod(i int) string {
	resources, deadline := `"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}},`, ""
	switch i % 3 {
	case 0:
		resources = ""
	case 1:
		deadline = `"activeDeadlineSeconds":3600,`
	}
	env := make([]string, 8)
	for j := range env {
		env[j] = fmt.Sprintf(`{"name":"SETTING_%d","value":"%s"}`, j, strings.Repeat("v", 60))
	}
	return `{"metadata":{"name":"p` + fmt.Sprint(i) + `","labels":{"app":"web","tier":"frontend","release":"stable"}},"spec":{` + deadline +
		`"containers":[{"name":"app","image":"registry.example.com/team/app:1.2.3",` + resources +
		`"ports":[{"containerPort":8080,"name":"http"}],"env":[` + strings.Join(env, ",") + `]}]}}`
}

// benchQuotas are the three quotas of each namespace: compute of all
// pods, best-effort pods' number, non-terminating pods' compute.
var benchQuotas = []string{
	`{"metadata":{"name":"compute"},"spec":{"hard":{"pods":"100k","requests.cpu":"1k","requests.memory":"1Ti","limits.cpu":"1k","limits.memory":"1Ti"}}}`,
	`{"metadata":{"name":"besteffort"},"spec":{"hard":{"pods":"100k","count/pods":"100k"},"scopes":["BestEffort"]}}`,
	`{"metadata":{"name":"long"},"spec":{"hard":{"requests.cpu":"1k","requests.memory":"1Ti"},"scopes":["NotTerminating"]}}`,
}

// benchQuotaServer is a server holding benchQuotaNamespaces namespaces of
// benchQuotaPods pods and three quotas each, whose controllers are
// stopped once the quotas' status is filled, and a follower for looks.
func benchQuotaServer(b *testing.B) (*Server, *quotaFollow) {
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	s, err := New(b.Context(), Config{Storage: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	h := s.Handler()
	pods, _ := s.catalog.Get("", "v1", "pods")
	for n := range benchQuotaNamespaces {
		ns := fmt.Sprint("team", n)
		serveBench(b, h, http.MethodPost, "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`, http.StatusCreated)
		for i := range benchQuotaPods { // without the handler's admission, for a faster start
			pod, err := api.ParseObject([]byte(benchQuotaPod(i)))
			if err == nil {
				_, err = s.registry.Create(b.Context(), pods, ns, pod)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		for _, q := range benchQuotas {
			serveBench(b, h, http.MethodPost, "/api/v1/namespaces/"+ns+"/resourcequotas", q, http.StatusCreated)
		}
	}
	s.election.stop()
	rev, err := store.CurrentRevision(b.Context())
	if err == nil {
		err = s.caches.get(pods).WaitFresh(b.Context(), rev) // the follower watches from there
	}
	if err != nil {
		b.Fatal(err)
	}
	f := newQuotaFollow(s)
	b.Cleanup(f.stop)
	s.lookAtQuotas(b.Context(), true, f)
	testwait.Until(b, 10*time.Second, "the pods' follower", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.stale[[2]string{"", "pods"}]
	})
	s.lookAtQuotas(b.Context(), true, f) // the statuses written by the first, the follower's mark
	return s, f
}

// reportCPU reports the process's CPU time (user and system) per op of
// the loop it is deferred around: the leader's looks wait for caches,
// which wall time would count.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() { b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQuotaResync is the leader's look at every quota every
// quotaResync: the usage of every quota recomputed, nothing to write.
func BenchmarkQuotaResync(b *testing.B) {
	s, f := benchQuotaServer(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		s.lookAtQuotas(b.Context(), true, f)
	}
}

// BenchmarkQuotaLook is the leader's look every quotaPoll when nothing
// changed.
func BenchmarkQuotaLook(b *testing.B) {
	s, f := benchQuotaServer(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		s.lookAtQuotas(b.Context(), false, f)
	}
}
