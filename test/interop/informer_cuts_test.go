package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/internal/cuttest"
)

// lagNoise is how much later than client-go's our handler may see a write
// at the 99th percentile and still count as no worse: scheduling noise on
// a loaded machine, where a reconnection takes milliseconds and the lag
// this test guards against took seconds.
const lagNoise = 100 * time.Millisecond

// TestInformerLagUnderCutsBesideClientGo runs client-go's informer (with
// its defaults: a streaming list, WatchListClient being on) and ours (with
// LIST and with a streaming list) through one proxy that cuts every
// connection every ~2 s while writes arrive: ours must see each write
// within a second (p99) and no later than client-go's, and list no more
// often.
func TestInformerLagUnderCutsBesideClientGo(t *testing.T) {
	ours := []*cuttest.OurInformer{{Name: "listwatch"}, {Name: "listwatch-watchlist", UseWatchList: true}}
	results, writes, cuts := cuttest.LagRun(t, cuttest.DefaultSchedule(), clientGoInformer(), ours[0].Informer(t), ours[1].Informer(t))
	t.Logf("%d writes, %d cuts", writes, cuts)
	cg := results[0]
	t.Logf("%v", cg)
	for i, r := range results[1:] {
		t.Logf("%v; reflector %+v", r, ours[i].Stats())
		if r.P99 >= time.Second || r.P99 > cg.P99+lagNoise {
			t.Errorf("%s: handler lag p99 %v, want under 1s and at most client-go's %v + %v", r.Name, r.P99, cg.P99, lagNoise)
		}
		if relists, cgRelists := r.Reads.Lists-min(r.Reads.Lists, 1), cg.Reads.Lists-min(cg.Reads.Lists, 1); relists > cgRelists {
			t.Errorf("%s: %d LISTs after the first, client-go %d", r.Name, relists, cgRelists)
		}
	}
}

// clientGoInformer is client-go's ConfigMap informer from a shared
// informer factory, as controllers make it.
func clientGoInformer() cuttest.Informer {
	const userAgent = "client-go"
	return cuttest.Informer{Name: userAgent, UserAgent: userAgent, Start: func(ctx context.Context, url string, lags *cuttest.Lags) (func(), error) {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, QPS: -1, UserAgent: userAgent})
		if err != nil {
			return nil, err
		}
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(cuttest.LagNamespace))
		inf := factory.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
			lags.Note(obj.(*corev1.ConfigMap).Data["at"])
		}}); err != nil {
			return nil, err
		}
		factory.Start(ctx.Done())
		syncCtx, cancel := context.WithTimeout(ctx, cuttest.SyncTimeout)
		defer cancel()
		if !toolscache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			return factory.Shutdown, errors.New("not synced")
		}
		return factory.Shutdown, nil
	}}
}
