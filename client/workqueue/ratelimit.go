package workqueue

import (
	"math"
	"sync"
	"time"
)

// RateLimiter decides how long an item waits before it is retried.
// Implementations are safe for concurrent use.
type RateLimiter[T comparable] interface {
	// When returns how long item should wait now, counting it as a failure.
	When(item T) time.Duration
	// Forget clears item's failures.
	Forget(item T)
	// NumRequeues returns item's failures since it was last forgotten.
	NumRequeues(item T) int
}

// Defaults of DefaultControllerRateLimiter, client-go's
// (util/workqueue/default_rate_limiters.go).
const (
	// DefaultBaseDelay is the first retry's delay; each failure doubles it.
	DefaultBaseDelay = 5 * time.Millisecond
	// DefaultMaxDelay caps the per-item delay (reached after 18 failures).
	DefaultMaxDelay = 1000 * time.Second
	// DefaultQPS and DefaultBurst bound retries of all items together:
	// bursts of 100, then 10 a second.
	DefaultQPS   = 10
	DefaultBurst = 100
)

// DefaultControllerRateLimiter returns the larger of a per-item exponential
// backoff (5 ms·2^n, at most 1000 s) and an overall token bucket (10 per
// second, burst 100).
func DefaultControllerRateLimiter[T comparable]() RateLimiter[T] {
	return NewMaxOfRateLimiter(
		NewItemExponentialFailureRateLimiter[T](DefaultBaseDelay, DefaultMaxDelay),
		NewBucketRateLimiter[T](DefaultQPS, DefaultBurst),
	)
}

// ItemExponentialFailureRateLimiter delays an item base·2^failures, at most max.
type ItemExponentialFailureRateLimiter[T comparable] struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[T]int // guarded by mu
}

var _ RateLimiter[string] = (*ItemExponentialFailureRateLimiter[string])(nil)

// NewItemExponentialFailureRateLimiter returns a per-item exponential backoff.
func NewItemExponentialFailureRateLimiter[T comparable](base, max time.Duration) *ItemExponentialFailureRateLimiter[T] {
	return &ItemExponentialFailureRateLimiter[T]{base: base, max: max, failures: map[T]int{}}
}

// When counts a failure of item and returns base·2^(failures-1), at most max.
func (r *ItemExponentialFailureRateLimiter[T]) When(item T) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[item]
	r.failures[item] = n + 1
	d := float64(r.base) * math.Pow(2, float64(n))
	if d > float64(r.max) {
		return r.max
	}
	return time.Duration(d)
}

// Forget clears item's failures.
func (r *ItemExponentialFailureRateLimiter[T]) Forget(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, item)
}

// NumRequeues returns item's failures.
func (r *ItemExponentialFailureRateLimiter[T]) NumRequeues(item T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[item]
}

// BucketRateLimiter is a token bucket shared by all items: burst tokens,
// refilled at qps a second. When reserves a token and returns how long until
// it is available, so a burst beyond the bucket is spread out, not refused.
type BucketRateLimiter[T comparable] struct {
	qps   float64
	burst float64

	mu     sync.Mutex
	tokens float64   // guarded by mu; negative when reserved ahead
	last   time.Time // guarded by mu; when tokens was computed
}

var _ RateLimiter[string] = (*BucketRateLimiter[string])(nil)

// NewBucketRateLimiter returns a full bucket of burst tokens refilled at qps.
func NewBucketRateLimiter[T comparable](qps float64, burst int) *BucketRateLimiter[T] {
	return &BucketRateLimiter[T]{qps: qps, burst: float64(burst), tokens: float64(burst), last: time.Now()}
}

// When reserves a token and returns the wait until it is available.
func (r *BucketRateLimiter[T]) When(T) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.tokens = math.Min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.qps)
	r.last = now
	r.tokens--
	if r.tokens >= 0 {
		return 0
	}
	return time.Duration(-r.tokens / r.qps * float64(time.Second))
}

// Forget does nothing: the bucket does not track items.
func (r *BucketRateLimiter[T]) Forget(T) {}

// NumRequeues is always 0: the bucket does not track items.
func (r *BucketRateLimiter[T]) NumRequeues(T) int { return 0 }

// MaxOfRateLimiter returns the longest delay of its limiters.
type MaxOfRateLimiter[T comparable] struct{ limiters []RateLimiter[T] }

var _ RateLimiter[string] = (*MaxOfRateLimiter[string])(nil)

// NewMaxOfRateLimiter combines limiters; each is consulted on every call.
func NewMaxOfRateLimiter[T comparable](limiters ...RateLimiter[T]) *MaxOfRateLimiter[T] {
	return &MaxOfRateLimiter[T]{limiters: limiters}
}

// When returns the longest of the limiters' delays.
func (r *MaxOfRateLimiter[T]) When(item T) time.Duration {
	var d time.Duration
	for _, l := range r.limiters {
		d = max(d, l.When(item))
	}
	return d
}

// Forget forgets item in every limiter.
func (r *MaxOfRateLimiter[T]) Forget(item T) {
	for _, l := range r.limiters {
		l.Forget(item)
	}
}

// NumRequeues returns the largest count of the limiters.
func (r *MaxOfRateLimiter[T]) NumRequeues(item T) int {
	n := 0
	for _, l := range r.limiters {
		n = max(n, l.NumRequeues(item))
	}
	return n
}
