package workqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestItemExponentialFailureRateLimiter(t *testing.T) {
	r := NewItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second)
	var got []time.Duration
	for range 10 {
		got = append(got, r.When("a"))
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	if n := r.NumRequeues("a"); n != 10 {
		t.Errorf("NumRequeues = %d, want 10", n)
	}
	if d := r.When("b"); d != 5*time.Millisecond {
		t.Errorf("another item's first delay = %v, want 5ms", d)
	}
	r.Forget("a")
	if n, d := r.NumRequeues("a"), r.When("a"); n != 0 || d != 5*time.Millisecond {
		t.Errorf("after Forget: NumRequeues = %d, When = %v; want 0, 5ms", n, d)
	}
}

func TestDefaultMaxDelayReached(t *testing.T) {
	r := NewItemExponentialFailureRateLimiter[int](DefaultBaseDelay, DefaultMaxDelay)
	var d time.Duration
	for range 40 {
		d = r.When(1)
	}
	if d != DefaultMaxDelay {
		t.Errorf("delay after 40 failures = %v, want %v", d, DefaultMaxDelay)
	}
}

func TestBucketRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewBucketRateLimiter[string](10, 100)
		for i := range 100 {
			if d := r.When("x"); d != 0 {
				t.Fatalf("token %d of the burst: delay %v, want 0", i, d)
			}
		}
		if d := r.When("x"); d != 100*time.Millisecond {
			t.Errorf("first token past the burst: %v, want 100ms", d)
		}
		if d := r.When("y"); d != 200*time.Millisecond {
			t.Errorf("second token past the burst: %v, want 200ms", d)
		}
		time.Sleep(time.Second) // refills 10 tokens, 2 of them already reserved
		for i := range 8 {
			if d := r.When("z"); d != 0 {
				t.Fatalf("refilled token %d: delay %v, want 0", i, d)
			}
		}
		if d := r.When("z"); d != 100*time.Millisecond {
			t.Errorf("after the refill is spent: %v, want 100ms", d)
		}
	})
}

func TestDefaultControllerRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := DefaultControllerRateLimiter[int]()
		// The per-item backoff of item 0 grows while the bucket lasts.
		for i := range 10 {
			if d, want := r.When(0), DefaultBaseDelay<<i; d != want {
				t.Fatalf("failure %d: %v, want %v", i, d, want)
			}
		}
		// 90 more distinct items drain the bucket at 5ms each ...
		for i := 1; i <= 90; i++ {
			if d := r.When(i); d != DefaultBaseDelay {
				t.Fatalf("item %d: %v, want %v", i, d, DefaultBaseDelay)
			}
		}
		// ... and then the bucket's 10 qps dominates.
		if d := r.When(1000); d != 100*time.Millisecond {
			t.Errorf("past the burst: %v, want 100ms", d)
		}
		if n := r.NumRequeues(0); n != 10 {
			t.Errorf("NumRequeues = %d, want 10", n)
		}
		r.Forget(0)
		if n := r.NumRequeues(0); n != 0 {
			t.Errorf("NumRequeues after Forget = %d, want 0", n)
		}
	})
}

func TestAddRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[string]{RateLimiter: NewItemExponentialFailureRateLimiter[string](time.Second, time.Minute)})
		defer q.ShutDown()
		var readyAt []time.Duration
		start := time.Now()
		for range 3 {
			q.AddRateLimited("a")
			item, _ := q.Get()
			readyAt = append(readyAt, time.Since(start))
			q.Done(item)
		}
		want := []time.Duration{time.Second, 3 * time.Second, 7 * time.Second}
		if diff := cmp.Diff(want, readyAt); diff != "" {
			t.Errorf("ready times (-want +got):\n%s", diff)
		}
		if q.NumRequeues("a") != 3 {
			t.Errorf("NumRequeues = %d, want 3", q.NumRequeues("a"))
		}
		q.Forget("a")
		q.AddRateLimited("a")
		time.Sleep(time.Second)
		synctest.Wait()
		if q.Len() != 1 {
			t.Error("after Forget the item did not come back after the base delay")
		}
	})
}
