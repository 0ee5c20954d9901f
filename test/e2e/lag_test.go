package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/internal/cuttest"
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
// a proxy that cuts its connections every 0.2-2 s while writes arrive to the
// binary: its handler must see each write within a second (p99), as
// client-go does on such a network, and it must never relist (no 410
// happens).
func TestInformerLagUnderCuts(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			t.Parallel()
			srv := startServer(t)
			p := cuttest.StartProxy(t, srv.addr)
			direct := client.NewResource[*configMap](srv.client(t), configMaps, "default")
			if _, err := direct.Create(context.Background(), newConfigMap("lag", nil), client.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			lags := &cuttest.Lags{}
			opts := cache.ReflectorOptions{Name: "lag", UseWatchList: streaming, WatchErrorHandler: func(err error) { t.Logf("informer: %v", err) }}
			inf := runInformer(t, p.Addr, opts, cache.HandlerFuncs[*configMap]{UpdateFunc: func(_, o *configMap) { lags.Note(o.Data["at"]) }})

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { p.CutEvery(ctx, lagMinCut, lagMaxCut) })
			t.Cleanup(func() { cancel(); wg.Wait() })
			writes, err := cuttest.Write(ctx, lagRun, lagWriteEvery, func(ctx context.Context, at string) error {
				_, err := direct.Patch(ctx, "lag", client.MergePatchType, fmt.Appendf(nil, `{"data":{"at":%q}}`, at), client.PatchOptions{})
				return err
			})
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			waitCtx, cancelWait := context.WithTimeout(ctx, waitTimeout)
			defer cancelWait()
			if err := lags.Wait(waitCtx, writes); err != nil {
				t.Fatalf("the handler did not see all %d writes: %v", writes, err)
			}
			cancel()

			p50, p99 := lags.Percentiles()
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
