package cache

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache/cachetest"
	"github.com/listwatch/listwatch/client/selector"
)

// pagedLW serves a fixed set of objects in pages, and watches that stay
// silent until stopped.
type pagedLW struct{ items []*obj }

func (l pagedLW) List(_ context.Context, o client.ListOptions) ([]*obj, string, string, error) {
	start, _ := strconv.Atoi(o.Continue)
	end := len(l.items)
	if o.Limit > 0 {
		end = min(end, start+int(o.Limit))
	}
	cont := ""
	if end < len(l.items) {
		cont = strconv.Itoa(end)
	}
	return l.items[start:end], "1", cont, nil
}

func (l pagedLW) Watch(ctx context.Context, _ client.ListOptions) (client.Watch[*obj], error) {
	return newSilentWatch(ctx), nil
}

type silentWatch struct {
	events chan client.Event[*obj]
	cancel context.CancelFunc
}

func newSilentWatch(ctx context.Context) *silentWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &silentWatch{events: make(chan client.Event[*obj]), cancel: cancel}
	go func() {
		<-ctx.Done()
		close(w.events)
	}()
	return w
}

func (w *silentWatch) Events() <-chan client.Event[*obj] { return w.events }
func (w *silentWatch) Err() error                        { return nil }
func (w *silentWatch) Stop()                             { w.cancel() }

func smallObjects(n int) []*obj {
	items := make([]*obj, n)
	for i := range items {
		items[i] = labelled(fmt.Sprintf("ns%d", i%100), fmt.Sprintf("obj-%d", i), i+1, map[string]string{"app": strconv.Itoa(i % 10)})
	}
	return items
}

// BenchmarkInformerInitialSync measures an informer's first sync of 50,000
// small objects, listed in pages of 500, through one no-op handler.
func BenchmarkInformerInitialSync(b *testing.B) {
	lw := pagedLW{items: smallObjects(50_000)}
	b.ReportAllocs()
	for b.Loop() {
		inf := NewInformer[*obj](lw, InformerOptions[*obj]{})
		reg, _ := inf.AddEventHandler(HandlerFuncs[*obj]{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = inf.Run(ctx)
		}()
		if !WaitForCacheSync(ctx, inf, reg) {
			b.Fatal("no sync")
		}
		cancel()
		<-done
	}
}

func BenchmarkIndexerAdd(b *testing.B) {
	items := smallObjects(50_000)
	b.ReportAllocs()
	for b.Loop() {
		x := NewIndexer(Indexers[*obj]{"app": byApp})
		for _, o := range items {
			x.Add(o)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/object")
}

func BenchmarkIndexerUpdate(b *testing.B) {
	items := smallObjects(50_000)
	x := NewIndexer(Indexers[*obj]{"app": byApp})
	for _, o := range items {
		x.Add(o)
	}
	next := cachetest.New("ns0", "obj-0", 0)
	next.Labels = map[string]string{"app": "0"}
	b.ReportAllocs()
	for b.Loop() {
		x.Update(next)
	}
}

func BenchmarkIndexerList(b *testing.B) {
	x := NewIndexer(Indexers[*obj]{"app": byApp})
	for _, o := range smallObjects(50_000) {
		x.Add(o)
	}
	sel, _ := selector.ParseLabels("app=3")
	l := NewLister(x)
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = x.List()
		}
	})
	b.Run("namespace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = l.Namespace("ns7").List(selector.Labels{})
		}
	})
	b.Run("selector", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = l.List(sel)
		}
	})
	b.Run("byIndex", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = x.ByIndex("app", "3")
		}
	})
}
