package cache

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/listwatch/listwatch/client/cache/cachetest"
)

// TestFilteringHandler checks client-go's FilteringResourceEventHandler
// rules: an update entering the filter is an add, one leaving it a delete
// of the old state, one outside it nothing.
func TestFilteringHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kept := func(o *obj) bool { return o.Labels["keep"] == "yes" }
		keep := map[string]string{"keep": "yes"}
		inf, lw := newTestInformer(t, InformerOptions[*obj]{}, labelled("ns", "a", 1, keep), labelled("ns", "b", 2, nil))
		h := &recHandler{}
		register(t, inf, FilteringHandler[*obj]{Filter: kept, Handler: h}, 0)
		startInformer(t, inf)
		w := nextWatch(t, lw)
		h.expect(t, "add a@1 (initial)")

		// One event at a time: the DeltaFIFO may reorder different keys.
		w.Modify(labelled("ns", "b", 10, keep)) // enters
		h.expect(t, "add b@10")
		w.Modify(labelled("ns", "a", 11, nil)) // leaves
		h.expect(t, "delete a@1")
		w.Modify(labelled("ns", "b", 12, keep)) // stays in
		h.expect(t, "update b@10->12")
		w.Modify(labelled("ns", "a", 13, nil)) // stays out
		w.Add(labelled("ns", "c", 14, nil))    // out
		w.Delete(labelled("ns", "c", 15, nil))
		h.expect(t)
		w.Delete(labelled("ns", "b", 16, keep))
		h.expect(t, "delete b@16")
	})
}

// TestContextHandlerCancelledOnRemove checks that a handler's context ends
// when it is removed (through a FilteringHandler, which passes it on),
// that it is called no more, and that the informer's end cancels the
// context of the handlers left.
func TestContextHandlerCancelledOnRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf, lw := newTestInformer(t, InformerOptions[*obj]{})
		ended := make(chan error, 1)
		var calls []string
		blocking := ContextHandlerFuncs[*obj]{AddFunc: func(ctx context.Context, o *obj, _ bool) {
			calls = append(calls, o.Name)
			<-ctx.Done() // work that lasts until the handler goes
			ended <- ctx.Err()
		}}
		reg := register(t, inf, FilteringHandler[*obj]{Filter: func(*obj) bool { return true }, Handler: blocking}, 0)
		stayed := make(chan error, 1)
		register(t, inf, ContextHandlerFuncs[*obj]{DeleteFunc: func(ctx context.Context, _ *obj, _ bool) {
			<-ctx.Done()
			stayed <- ctx.Err()
		}}, 0)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		w := nextWatch(t, lw)
		w.Add(cachetest.New("ns", "a", 1))
		w.Add(cachetest.New("ns", "b", 2))
		synctest.Wait()
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; err != context.Canceled {
			t.Errorf("the removed handler's context ended with %v", err)
		}
		w.Delete(cachetest.New("ns", "a", 3))
		synctest.Wait()
		if len(calls) != 1 || calls[0] != "a" {
			t.Errorf("the removed handler was called for %v, want only a", calls)
		}
		select {
		case err := <-stayed:
			t.Fatalf("the remaining handler's context ended with %v before the informer", err)
		default:
		}
		cancel()
		if err := <-stayed; err != context.Canceled {
			t.Errorf("the remaining handler's context ended with %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
