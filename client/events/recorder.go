// Package events records Kubernetes Events about objects, as client-go's
// tools/events recorder does: events.k8s.io/v1 Events, or core/v1 Events
// with the same fields when the server does not serve events.k8s.io/v1
// (decided once, by discovery, when the recorder starts).
//
// Eventf never blocks: it queues the event in a bounded buffer and drops it
// when the buffer is full (Stats.Dropped). A token bucket per source and
// object (tools/record's spam filter: a burst of 25, then one event every 5
// minutes) drops events of a noisy object before they are queued
// (Stats.RateLimited); client-go applies it to core/v1 events only, this
// recorder to both.
//
// Isomorphic events (same type, reason, action, regarding and related
// objects and reporter) within 6 minutes form a series, as in client-go:
// the first is created, the second sets series.count 2 and
// series.lastObservedTime by a PATCH at once, and later ones count in the
// recorder, written every 30 minutes and when the series has been quiet
// for 6 minutes, which ends it.
//
// # Concurrency
//
// Eventf and Stats may be called from any goroutine. One goroutine, owned
// by the Recorder, writes the events; it stops when Start's context ends
// (Done is closed then), dropping what is still queued. A write that fails
// for a reason other than the server's refusal is tried again every ~10 s,
// 12 times at most, as client-go's; the queue waits meanwhile.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
)

// Defaults of Config.
const (
	// DefaultQueueSize is client-go's maxQueuedEvents.
	DefaultQueueSize = 1000
	// DefaultBurst and DefaultRefillPeriod are tools/record's spam filter:
	// a burst of 25 events per source and object, then one per 300 s.
	DefaultBurst        = 25
	DefaultRefillPeriod = 5 * time.Minute
)

// client-go's tools/events timings.
const (
	maxTries         = 12               // writes of one event before it is given up
	retryWait        = 10 * time.Second // between them, with up to 25% jitter
	finishTime       = 6 * time.Minute  // a series quiet this long ends
	refreshTime      = 30 * time.Minute // how often ongoing series are written
	maxSpamKeys      = 4096             // buckets kept, tools/record's cache size
	retryJitter      = 0.25
	defaultNamespace = "default" // the namespace of events about cluster-scoped objects
)

var (
	eventsV1   = client.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	coreEvents = client.GroupVersionResource{Version: "v1", Resource: "events"}
)

// Config configures a Recorder.
type Config struct {
	// Client reaches the API server.
	Client *client.Client
	// ReportingController names the controller in every event (required),
	// such as "example.com/mirror".
	ReportingController string
	// ReportingInstance names this replica; ReportingController-hostname
	// when "", as client-go's.
	ReportingInstance string
	// QueueSize bounds the events waiting to be written; DefaultQueueSize
	// when 0.
	QueueSize int
	// Burst and RefillPeriod shape the rate limit per source and object:
	// Burst events at once, then one more each RefillPeriod.
	// DefaultBurst and DefaultRefillPeriod when 0.
	Burst        int
	RefillPeriod time.Duration

	// SeriesFinish is how long a series must be quiet before its count is
	// written and it ends; 6 minutes (client-go's) when 0.
	SeriesFinish time.Duration
	// OnWritten, if set, is called after each write the server accepted,
	// on the writer's goroutine.
	OnWritten func()
}

// Stats counts what became of the events given to Eventf.
type Stats struct {
	Written     uint64 // creates and series updates the server accepted
	Dropped     uint64 // the queue was full
	RateLimited uint64 // the object's bucket was empty
	Failed      uint64 // refused by the server, invalid, or given up after maxTries
}

// Recorder writes events; see the package documentation.
type Recorder struct {
	cfg   Config
	core  bool // the server lacks events.k8s.io/v1: core/v1 Events are written
	queue chan *Event
	done  chan struct{}

	written, dropped, limited, failed atomic.Uint64

	mu      sync.Mutex
	buckets map[spamKey]*bucket // guarded by mu

	// series holds the events seen within finishTime by their isomorphic
	// key; used by the writing goroutine only.
	series map[eventKey]*Event
}

// Start checks cfg, asks the server whether it serves events.k8s.io/v1,
// and starts the recorder's writer, which runs until ctx ends.
func Start(ctx context.Context, cfg Config) (*Recorder, error) {
	if cfg.Client == nil || cfg.ReportingController == "" {
		return nil, errors.New("events: Client and ReportingController are required")
	}
	if cfg.ReportingInstance == "" {
		host, _ := os.Hostname()
		cfg.ReportingInstance = cfg.ReportingController + "-" + host
	}
	cfg.QueueSize = cmpOr(cfg.QueueSize, DefaultQueueSize)
	cfg.Burst = cmpOr(cfg.Burst, DefaultBurst)
	cfg.RefillPeriod = cmpOr(cfg.RefillPeriod, DefaultRefillPeriod)
	cfg.SeriesFinish = cmpOr(cfg.SeriesFinish, finishTime)
	resources, err := cfg.Client.Discover(ctx)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	r := &Recorder{
		cfg: cfg, core: !slices.ContainsFunc(resources, func(r client.APIResource) bool { return r.GroupVersionResource == eventsV1 }),
		queue: make(chan *Event, cfg.QueueSize), done: make(chan struct{}),
		buckets: map[spamKey]*bucket{}, series: map[eventKey]*Event{},
	}
	go r.run(ctx)
	return r, nil
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// APIVersion is the API the recorder writes: "events.k8s.io/v1" or "v1".
func (r *Recorder) APIVersion() string {
	if r.core {
		return coreEvents.GroupVersion()
	}
	return eventsV1.GroupVersion()
}

// Done is closed when the writer has stopped.
func (r *Recorder) Done() <-chan struct{} { return r.done }

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	return Stats{Written: r.written.Load(), Dropped: r.dropped.Load(), RateLimited: r.limited.Load(), Failed: r.failed.Load()}
}

// Eventf records that action happened to regarding (with related, if not
// nil), for reason, with the note made by fmt.Sprintf(note, args...).
// eventType is Normal or Warning; another is counted as failed. It does
// not block.
func (r *Recorder) Eventf(regarding Reference, related *Reference, eventType, reason, action, note string, args ...any) {
	if eventType != Normal && eventType != Warning {
		r.failed.Add(1)
		return
	}
	now := time.Now()
	ns := regarding.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	ev := &Event{
		TypeMeta:            api.TypeMeta{APIVersion: eventsV1.GroupVersion(), Kind: "Event"},
		ObjectMeta:          api.ObjectMeta{Name: eventName(regarding.Name, now), Namespace: ns},
		EventTime:           *api.NewMicroTime(now),
		ReportingController: r.cfg.ReportingController, ReportingInstance: r.cfg.ReportingInstance,
		Action: action, Reason: reason, Regarding: regarding, Related: related,
		Note: fmt.Sprintf(note, args...), Type: eventType,
	}
	if !r.allow(ev, now) {
		r.limited.Add(1)
		return
	}
	select {
	case r.queue <- ev:
	default:
		r.dropped.Add(1)
	}
}

// spamKey is tools/record's getSpamKey: the source and the object.
type spamKey struct {
	controller, instance, eventType string
	regarding                       Reference
}

// bucket is a token bucket, refilled lazily.
type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// allow takes a token from the bucket of ev's source and object.
func (r *Recorder) allow(ev *Event, now time.Time) bool {
	ref := ev.Regarding
	ref.ResourceVersion, ref.FieldPath = "", "" // not in tools/record's key
	k := spamKey{ev.ReportingController, ev.ReportingInstance, ev.Type, ref}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buckets[k]
	if b == nil {
		if len(r.buckets) >= maxSpamKeys {
			r.forgetFullBuckets(now)
		}
		b = &bucket{tokens: float64(r.cfg.Burst), at: now}
		r.buckets[k] = b
	}
	b.tokens = min(float64(r.cfg.Burst), b.tokens+float64(now.Sub(b.at))/float64(r.cfg.RefillPeriod))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forgetFullBuckets removes the buckets that have refilled (a new one is
// the same), and one more if none has, so that the map stays bounded.
// Called with mu held.
func (r *Recorder) forgetFullBuckets(now time.Time) {
	for k, b := range r.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(r.cfg.RefillPeriod) >= float64(r.cfg.Burst) {
			delete(r.buckets, k)
		}
	}
	for k := range r.buckets {
		if len(r.buckets) < maxSpamKeys {
			break
		}
		delete(r.buckets, k)
	}
}

// eventKey is client-go's isomorphic key: events equal in it form a series.
type eventKey struct {
	eventType, action, reason, controller, instance string
	regarding, related                              Reference
}

func keyOf(ev *Event) eventKey {
	k := eventKey{ev.Type, ev.Action, ev.Reason, ev.ReportingController, ev.ReportingInstance, ev.Regarding, Reference{}}
	if ev.Related != nil {
		k.related = *ev.Related
	}
	return k
}

// run writes the queued events and the series until ctx ends.
func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	finish := time.NewTicker(r.cfg.SeriesFinish)
	defer finish.Stop()
	refresh := time.NewTicker(refreshTime)
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.queue:
			r.observe(ctx, ev)
		case <-finish.C:
			r.finishSeries(ctx)
		case <-refresh.C:
			r.refreshSeries(ctx)
		}
	}
}

// observe writes a new event, or starts or counts the series it belongs
// to, as client-go's recordToSink.
func (r *Recorder) observe(ctx context.Context, ev *Event) {
	k := keyOf(ev)
	first := r.series[k]
	if first == nil {
		r.series[k] = ev
		r.write(ctx, ev)
		return
	}
	now := *api.NewMicroTime(time.Now())
	if first.Series != nil {
		first.Series.Count++
		first.Series.LastObservedTime = now
		return
	}
	first.Series = &Series{Count: 2, LastObservedTime: now}
	r.write(ctx, first)
}

// refreshSeries writes the count of every ongoing series.
func (r *Recorder) refreshSeries(ctx context.Context) {
	for _, ev := range r.series {
		if ev.Series != nil {
			r.writeOnce(ctx, ev)
		}
	}
}

// finishSeries writes and forgets the series quiet for finishTime, and
// forgets the single events older than that.
func (r *Recorder) finishSeries(ctx context.Context) {
	cutoff := time.Now().Add(-r.cfg.SeriesFinish)
	for k, ev := range r.series {
		switch {
		case ev.Series != nil && ev.Series.LastObservedTime.Before(cutoff):
			if !r.writeOnce(ctx, ev) {
				delete(r.series, k)
			}
		case ev.Series == nil && ev.EventTime.Before(cutoff):
			delete(r.series, k)
		}
	}
}

// write writes ev, trying again after errors that are not the server's
// refusal, maxTries times in all.
func (r *Recorder) write(ctx context.Context, ev *Event) {
	for tries := 1; r.writeOnce(ctx, ev); tries++ {
		if tries >= maxTries {
			r.failed.Add(1)
			return
		}
		if wait.Sleep(ctx, retryWait+time.Duration(rand.Float64()*retryJitter*float64(retryWait))) != nil {
			return
		}
	}
}

// writeOnce creates ev, or patches its series (creating it if it is gone),
// as client-go's recordEvent; it reports whether to try again.
func (r *Recorder) writeOnce(ctx context.Context, ev *Event) (retry bool) {
	var err error
	if ev.Series != nil {
		err = r.patchSeries(ctx, ev)
	}
	if ev.Series == nil || client.IsNotFound(err) {
		err = r.create(ctx, ev)
	}
	var status *api.StatusError
	switch {
	case err == nil:
		r.written.Add(1)
		if r.cfg.OnWritten != nil {
			r.cfg.OnWritten()
		}
		return false
	case errors.As(err, &status):
		// A series whose create raced with another: patch it next time.
		if client.IsAlreadyExists(err) && ev.Series != nil {
			return true
		}
		r.failed.Add(1)
		return false
	}
	return true
}

func (r *Recorder) create(ctx context.Context, ev *Event) error {
	ns := ev.Namespace
	if r.core {
		_, err := client.NewResource[*CoreEvent](r.cfg.Client, coreEvents, ns).Create(ctx, ev.core(), client.WriteOptions{})
		return err
	}
	_, err := client.NewResource[*Event](r.cfg.Client, eventsV1, ns).Create(ctx, ev, client.WriteOptions{})
	return err
}

// patchSeries sends the series as client-go does: the strategic merge
// patch from the event without its series to the event with it.
func (r *Recorder) patchSeries(ctx context.Context, ev *Event) error {
	patch, err := json.Marshal(struct {
		Series *Series `json:"series"`
	}{ev.Series})
	if err != nil {
		return err
	}
	ns, name := ev.Namespace, ev.Name
	if r.core {
		_, err = client.NewResource[*CoreEvent](r.cfg.Client, coreEvents, ns).Patch(ctx, name, client.StrategicMergePatchType, patch, client.PatchOptions{})
		return err
	}
	_, err = client.NewResource[*Event](r.cfg.Client, eventsV1, ns).Patch(ctx, name, client.StrategicMergePatchType, patch, client.PatchOptions{})
	return err
}
