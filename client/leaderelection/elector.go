// Package leaderelection elects one leader among the replicas of a
// controller through a coordination.k8s.io/v1 Lease, by client-go's rules
// (tools/leaderelection with a LeaseLock), so that listwatch's and
// client-go's electors can compete for one lease.
//
// A candidate takes the lease when no one holds it or its holder has not
// renewed it for leaseDurationSeconds, measured by the candidate's own clock
// from when it last saw the lease change (never by the lease's times, so
// clocks need not agree); it then renews it every RetryPeriod. A leader that
// cannot renew within RenewDeadline stops leading: the context given to
// OnStartedLeading is cancelled. LeaseDuration > RenewDeadline leaves the
// old leader time to stop before another may take the lease.
//
// # Concurrency
//
// Run blocks; an Elector runs once. OnStartedLeading runs on a goroutine of
// its own, and Run waits for it to return before it releases the lease and
// returns (client-go's Run does not wait): a leader's work has stopped
// before another candidate can see the lease released. OnNewLeader and
// OnStoppedLeading run on Run's goroutine and must not block. IsLeader and
// Leader may be called from any goroutine.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
)

// Defaults of Config's timings, those client-go's users (kube-controller-manager,
// controller-runtime) run with.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// jitterFactor stretches each wait between attempts to acquire by up to
// 120% of RetryPeriod, as client-go's JitterFactor, so that candidates
// started together do not try in step.
const jitterFactor = 1.2

// Config configures an Elector.
type Config struct {
	// Client reaches the API server.
	Client *client.Client
	// Namespace and Name locate the Lease; it is created when missing.
	Namespace, Name string
	// Identity names this candidate in the lease's holderIdentity; unique
	// among the candidates (a hostname and a random suffix, typically).
	Identity string

	// LeaseDuration is how long a candidate waits, from when it last saw
	// the lease change, before it takes a lease that was not renewed
	// (written to the lease in whole seconds). DefaultLeaseDuration when 0.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader tries to renew before it stops
	// leading. DefaultRenewDeadline when 0.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts. DefaultRetryPeriod when 0.
	RetryPeriod time.Duration
	// ReleaseOnCancel makes a leader whose context ends give the lease up
	// (holder "", duration 1 s), so that another candidate takes it at
	// once instead of after LeaseDuration.
	ReleaseOnCancel bool

	Callbacks Callbacks
}

// Callbacks are called as leadership changes.
type Callbacks struct {
	// OnStartedLeading is the leader's work (required); ctx is cancelled
	// when leadership is lost or Run's context ends.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called when Run returns, whether or not this
	// candidate led. Optional.
	OnStoppedLeading func()
	// OnNewLeader is called with the holder's identity each time a new one
	// is seen (this candidate's own included). Optional.
	OnNewLeader func(identity string)
}

// Elector runs one candidate for one Lease.
type Elector struct {
	cfg    Config
	leases *client.Resource[*Lease]

	// Fields below are used by Run's goroutine only.

	// lease is the lease as last read or written: an update carries its
	// resourceVersion, so that it fails if another wrote in between.
	lease *Lease
	// observedKey is the record of the lease last read; observedTime
	// moves only when a read differs from it.
	observedKey recordKey
	reported    string // the holder last given to OnNewLeader

	mu           sync.Mutex
	observed     record    // guarded by mu
	observedTime time.Time // when observed was set, by the local clock; guarded by mu
}

// New checks cfg, filling its zero timings with the defaults, as
// client-go's NewLeaderElector checks its configuration.
func New(cfg Config) (*Elector, error) {
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	switch {
	case cfg.Client == nil:
		return nil, errors.New("leaderelection: Client is required")
	case cfg.Name == "" || cfg.Namespace == "":
		return nil, errors.New("leaderelection: the lease's Namespace and Name are required")
	case cfg.Identity == "":
		return nil, errors.New("leaderelection: Identity is required")
	case cfg.Callbacks.OnStartedLeading == nil:
		return nil, errors.New("leaderelection: Callbacks.OnStartedLeading is required")
	case cfg.LeaseDuration < time.Second:
		// Written in whole seconds: less would be a lease of 0 s.
		return nil, errors.New("leaderelection: LeaseDuration must be at least 1s")
	case cfg.RetryPeriod < 0:
		return nil, errors.New("leaderelection: RetryPeriod must be positive")
	case cfg.LeaseDuration <= cfg.RenewDeadline:
		return nil, errors.New("leaderelection: LeaseDuration must be greater than RenewDeadline")
	case cfg.RenewDeadline <= time.Duration(jitterFactor*float64(cfg.RetryPeriod)):
		return nil, fmt.Errorf("leaderelection: RenewDeadline must be greater than RetryPeriod*%v", jitterFactor)
	}
	return &Elector{cfg: cfg, leases: client.NewResource[*Lease](cfg.Client, LeasesResource, cfg.Namespace)}, nil
}

// IsLeader reports whether this candidate held the lease when it last read
// or wrote it.
func (e *Elector) IsLeader() bool { return e.Leader() == e.cfg.Identity }

// Leader is the holder of the lease when this candidate last read or wrote
// it ("" when none).
func (e *Elector) Leader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed.holder
}

// Check is a liveness check for a leader, as client-go's: an error when
// this candidate believes it leads but its last renewal is older than the
// lease duration plus tolerance, as happens when its work does not return
// after leadership was lost (Run waits for it) and the process should be
// restarted. It is nil for a candidate that does not lead.
func (e *Elector) Check(tolerance time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.observed.holder != e.cfg.Identity {
		return nil
	}
	if time.Since(e.observedTime) > e.cfg.LeaseDuration+tolerance {
		return fmt.Errorf("leaderelection: lease %s/%s not renewed for %v", e.cfg.Namespace, e.cfg.Name, time.Since(e.observedTime).Round(time.Millisecond))
	}
	return nil
}

// Run campaigns until ctx ends: it tries to take the lease every
// RetryPeriod (with jitter), then leads, renewing it, until ctx ends or a
// renewal fails for RenewDeadline. It returns after the leader's work has
// returned and the lease is released (ReleaseOnCancel).
func (e *Elector) Run(ctx context.Context) {
	if f := e.cfg.Callbacks.OnStoppedLeading; f != nil {
		defer f()
	}
	if !e.acquire(ctx) {
		return
	}
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var work sync.WaitGroup
	work.Go(func() { e.cfg.Callbacks.OnStartedLeading(leadCtx) })
	e.renew(leadCtx)
	cancel()
	work.Wait()
	if e.cfg.ReleaseOnCancel {
		e.release(ctx)
	}
}

// acquire tries to take the lease until it does (true) or ctx ends.
func (e *Elector) acquire(ctx context.Context) bool {
	for {
		ok := e.tryAcquireOrRenew(ctx)
		e.reportLeader()
		if ok {
			return true
		}
		pause := e.cfg.RetryPeriod + time.Duration(rand.Float64()*jitterFactor*float64(e.cfg.RetryPeriod))
		if wait.Sleep(ctx, pause) != nil {
			return false
		}
	}
}

// renew keeps the lease every RetryPeriod until ctx ends or a renewal does
// not succeed within RenewDeadline (retried every RetryPeriod meanwhile).
func (e *Elector) renew(ctx context.Context) {
	for {
		if !e.renewWithin(ctx) {
			return
		}
		if wait.Sleep(ctx, e.cfg.RetryPeriod) != nil {
			return
		}
	}
}

func (e *Elector) renewWithin(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	for {
		ok := e.tryAcquireOrRenew(ctx)
		e.reportLeader()
		if ok {
			return true
		}
		if wait.Sleep(ctx, e.cfg.RetryPeriod) != nil {
			return false
		}
	}
}

// tryAcquireOrRenew is one attempt, by client-go's rules: renew at once a
// lease this candidate holds and still believes valid; else read it (create
// it when missing), and take it when it has no holder or has expired.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := time.Now()
	want := record{
		holder:          e.cfg.Identity,
		durationSeconds: int32(e.cfg.LeaseDuration / time.Second),
		acquire:         now,
		renew:           now,
	}
	if e.IsLeader() && e.valid(now) {
		prev := e.observedRecord()
		want.acquire, want.transitions = prev.acquire, prev.transitions
		if e.update(ctx, want) == nil {
			return true
		}
		// Another wrote it, or the server failed: read it and decide again.
	}
	lease, err := e.leases.Get(ctx, e.cfg.Name)
	if client.IsNotFound(err) {
		created, err := e.leases.Create(ctx, &Lease{
			TypeMeta:   api.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: api.ObjectMeta{Name: e.cfg.Name, Namespace: e.cfg.Namespace},
			Spec:       want.spec(),
		}, client.WriteOptions{})
		if err != nil {
			return false
		}
		e.lease = created
		e.observe(want)
		return true
	}
	if err != nil {
		return false
	}
	e.lease = lease
	got := recordOf(&lease.Spec)
	if k := got.key(); k != e.observedKey {
		e.observedKey = k
		e.observe(got)
	}
	if got.holder != "" && e.valid(now) && !e.IsLeader() {
		return false // held by another, not yet expired
	}
	if e.IsLeader() {
		want.acquire, want.transitions = got.acquire, got.transitions
	} else {
		want.transitions = got.transitions + 1
	}
	return e.update(ctx, want) == nil
}

// update writes r over the lease last read or written.
func (e *Elector) update(ctx context.Context, r record) error {
	if e.lease == nil {
		return errors.New("the lease has not been read")
	}
	l := *e.lease
	l.Spec = r.spec()
	updated, err := e.leases.Update(ctx, &l, client.WriteOptions{})
	if err != nil {
		return err
	}
	e.lease = updated
	e.observe(r)
	return nil
}

// release gives the lease up as client-go's tryRelease does (no holder, a
// duration of one second, the transitions kept), but only if the lease read
// names this candidate: client-go asks what it last observed, and may clear
// the lease of a candidate that took it since. It is bounded by
// RenewDeadline, beyond ctx's end.
func (e *Elector) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	for ctx.Err() == nil {
		lease, err := e.leases.Get(ctx, e.cfg.Name)
		if err != nil {
			return
		}
		e.lease = lease
		held := recordOf(&lease.Spec)
		if held.holder != e.cfg.Identity {
			return
		}
		now := time.Now()
		err = e.update(ctx, record{durationSeconds: 1, acquire: now, renew: now, transitions: held.transitions})
		if !client.IsConflict(err) {
			return
		}
	}
}

// reportLeader calls OnNewLeader when the holder seen has changed.
func (e *Elector) reportLeader() {
	holder := e.Leader()
	if holder == e.reported {
		return
	}
	e.reported = holder
	if f := e.cfg.Callbacks.OnNewLeader; f != nil {
		f(holder)
	}
}

func (e *Elector) observe(r record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observed, e.observedTime = r, time.Now()
}

func (e *Elector) observedRecord() record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed
}

// valid reports whether the lease as last observed has not expired at now:
// its duration has not passed since it was observed.
func (e *Elector) valid(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observedTime.Add(time.Duration(e.observed.durationSeconds) * time.Second).After(now)
}
