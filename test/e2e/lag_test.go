package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/cache"
	"github.com/listwatch/listwatch/client"
)

// The lag run: writes every lagWriteEvery for lagRun while the proxy cuts
// every connection after a random pause in [lagMinCut, lagMaxCut).
const (
	lagRun        = 8 * time.Second
	lagWriteEvery = 20 * time.Millisecond
	lagMinCut     = 200 * time.Millisecond
	lagMaxCut     = 2 * time.Second
	maxLagP99     = time.Second
)

// TestInformerLagUnderCuts runs an informer with the default options through
// a proxy that cuts its connections every 0.2-2 s while writes arrive: its
// handler must see each write within a second (p99), as client-go does on
// such a network, and it must never relist (no 410 happens).
func TestInformerLagUnderCuts(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			t.Parallel()
			srv := startServer(t)
			p := startProxy(t, srv.addr)
			direct := client.NewResource[*configMap](srv.client(t), configMaps, "default")
			if _, err := direct.Create(context.Background(), newConfigMap("lag", nil), client.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			lags := &lagRecorder{}
			opts := cache.ReflectorOptions{Name: "lag", UseWatchList: streaming, WatchErrorHandler: func(err error) { t.Logf("informer: %v", err) }}
			inf := runInformer(t, p.Addr, opts, cache.HandlerFuncs[*configMap]{UpdateFunc: func(_, o *configMap) { lags.note(o) }})

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { cutEvery(ctx, p) })
			t.Cleanup(func() { cancel(); wg.Wait() })
			writes := writeTimes(t, ctx, direct)
			cancel()
			waitFor(t, "the handler to see every write", func() bool { return lags.seen() >= writes })

			p50, p99 := lags.percentiles()
			st := inf.Reflector().Stats()
			t.Logf("handler lag over %d writes, %d cuts: p50 %v, p99 %v; reflector %+v", writes, p.Cuts(), p50, p99, st)
			if p99 >= maxLagP99 {
				t.Errorf("handler lag p99 %v, want under %v", p99, maxLagP99)
			}
			if st.Relists != 0 {
				t.Errorf("relists: %d, want 0 (no 410 happened)", st.Relists)
			}
			if p.Cuts() < int(lagRun/lagMaxCut) {
				t.Errorf("only %d cuts: the run did not test anything", p.Cuts())
			}
		})
	}
}

// writeTimes writes the time into the "lag" object every lagWriteEvery for
// lagRun, bypassing the proxy, and returns how many writes it made.
func writeTimes(t *testing.T, ctx context.Context, direct *client.Resource[*configMap]) int {
	tick := time.NewTicker(lagWriteEvery)
	defer tick.Stop()
	end := time.After(lagRun)
	for n := 0; ; n++ {
		select {
		case <-tick.C:
		case <-end:
			return n
		}
		patch := fmt.Appendf(nil, `{"data":{"at":"%d"}}`, time.Now().UnixNano())
		if _, err := direct.Patch(ctx, "lag", client.MergePatchType, patch, client.PatchOptions{}); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// cutEvery cuts every connection through p after a random pause in
// [lagMinCut, lagMaxCut), until ctx ends.
func cutEvery(ctx context.Context, p *proxy) {
	for {
		pause := time.NewTimer(lagMinCut + rand.N(lagMaxCut-lagMinCut))
		select {
		case <-pause.C:
			p.CutAll()
		case <-ctx.Done():
			pause.Stop()
			return
		}
	}
}

// lagRecorder keeps how long after each write its handler saw it.
type lagRecorder struct {
	mu   sync.Mutex
	lags []time.Duration // guarded by mu
}

func (r *lagRecorder) note(o *configMap) {
	at, err := strconv.ParseInt(o.Data["at"], 10, 64)
	if err != nil {
		return // not a write of writeTimes
	}
	lag := time.Since(time.Unix(0, at))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lags = append(r.lags, lag)
}

func (r *lagRecorder) seen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lags)
}

// percentiles returns the 50th and 99th percentile lags.
func (r *lagRecorder) percentiles() (p50, p99 time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lags) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(r.lags))
	return s[len(s)/2], s[len(s)*99/100]
}
