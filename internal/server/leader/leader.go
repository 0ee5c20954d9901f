// Package leader elects one server among those sharing a store to run the
// in-server controllers, through a coordination.k8s.io/v1 Lease, as
// client-go's tools/leaderelection elects kube-controller-manager:
//
//   - A candidate takes the Lease when it does not exist, names no holder
//     (released), or has not changed for leaseDurationSeconds as this
//     candidate measured it: expiry is timed from when the candidate saw
//     the Lease's spec change, on its own clock, never from renewTime, so
//     that the servers' clocks need not agree.
//   - The holder renews it every RetryPeriod; when it has not renewed for
//     RenewDeadline (less than LeaseDuration, so that it steps down before
//     another may take over), or reads that another holds it, it stops
//     leading: the context given to lead ends and Run waits for lead to
//     return before it stands again.
//   - When Run's context ends with the Lease held, the Lease is released
//     (holderIdentity empty, leaseDurationSeconds 1, as client-go's
//     ReleaseOnCancel), so that another candidate takes it at once.
//
// Every write is a compare-and-swap on the Lease's resourceVersion through
// the registry, so that two candidates never both succeed, and watches and
// kubectl see the Lease as any other.
//
// Run's goroutine owns the Elector and calls Config.Leading; lead runs in
// a goroutine Run starts on each term and waits for.
package leader

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// Defaults are kube-controller-manager's (--leader-elect-lease-duration,
// --leader-elect-renew-deadline, --leader-elect-retry-period).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// jitterFactor spreads the candidates' attempts to acquire: each waits
// between RetryPeriod and (1+jitterFactor) x RetryPeriod, as client-go.
const jitterFactor = 1.2

// microTime is metav1.MicroTime's JSON form.
const microTime = "2006-01-02T15:04:05.000000Z07:00"

// Config configures an Elector.
type Config struct {
	// Registry stores the Lease; Leases is the coordination.k8s.io/v1
	// leases resource.
	Registry *registry.Registry
	Leases   *resource.Resource
	// Namespace and Name name the Lease.
	Namespace, Name string
	// Identity is this candidate's holderIdentity; "" means
	// <hostname>_<uuid>, as kube-controller-manager's.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod: 0 means the defaults.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Now is the clock of the times written and of expiry; nil means
	// time.Now. (Waits use the time package's timers.)
	Now func() time.Time
	// Log receives the changes of leadership; nil means slog.Default().
	Log *slog.Logger
	// Leading, if set, is told when this candidate starts (true) and
	// stops (false) leading.
	Leading func(bool)
}

// Elector is one candidate.
type Elector struct {
	cfg Config
	// observed is the Lease's spec as last read or written, observedAt
	// when it was first seen so (cfg.Now).
	observed   spec
	observedAt time.Time
}

// New returns a candidate; Run makes it stand. As client-go's, it
// refuses durations that would let a holder lead after its Lease expired:
// LeaseDuration must exceed RenewDeadline, which must exceed
// (1+jitter) x RetryPeriod.
func New(cfg Config) (*Elector, error) {
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.RenewDeadline = cmp.Or(cfg.RenewDeadline, DefaultRenewDeadline)
	cfg.RetryPeriod = cmp.Or(cfg.RetryPeriod, DefaultRetryPeriod)
	switch {
	case cfg.LeaseDuration <= cfg.RenewDeadline:
		return nil, fmt.Errorf("the lease duration (%v) must be greater than the renew deadline (%v)", cfg.LeaseDuration, cfg.RenewDeadline)
	case float64(cfg.RenewDeadline) <= jitterFactor*float64(cfg.RetryPeriod):
		return nil, fmt.Errorf("the renew deadline (%v) must be greater than %v x the retry period (%v)", cfg.RenewDeadline, jitterFactor, cfg.RetryPeriod)
	case cfg.RetryPeriod < 0 || cfg.LeaseDuration < time.Second:
		return nil, fmt.Errorf("the lease duration (%v) must be a second at least, and the retry period (%v) above zero", cfg.LeaseDuration, cfg.RetryPeriod)
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = host + "_" + registry.NewUID()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Leading == nil {
		cfg.Leading = func(bool) {}
	}
	cfg.Log = cfg.Log.With("lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	return &Elector{cfg: cfg}, nil
}

// Identity is the holderIdentity this candidate writes.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Run stands for the Lease until ctx ends, running lead while it holds
// it, then releases it if held.
func (e *Elector) Run(ctx context.Context, lead func(context.Context)) {
	for e.acquire(ctx) {
		e.cfg.Log.Info("became leader")
		e.cfg.Leading(true)
		lctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { lead(lctx) })
		e.renew(lctx)
		cancel()
		wg.Wait()
		e.cfg.Leading(false)
		e.cfg.Log.Info("stopped leading")
	}
	e.release(context.WithoutCancel(ctx))
}

// acquire tries until it holds the Lease (true) or ctx ends (false).
func (e *Elector) acquire(ctx context.Context) bool {
	for ctx.Err() == nil {
		if e.try(ctx) == nil {
			return true
		}
		_ = wait.Sleep(ctx, e.cfg.RetryPeriod+time.Duration(rand.Float64()*jitterFactor*float64(e.cfg.RetryPeriod)))
	}
	return false
}

// renew renews the Lease every RetryPeriod until ctx ends, or until it
// has failed for RenewDeadline or another holds it.
func (e *Elector) renew(ctx context.Context) {
	for {
		dctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
		err := e.try(dctx)
		for err != nil && !errors.Is(err, errHeld) && wait.Sleep(dctx, e.cfg.RetryPeriod) == nil {
			err = e.try(dctx)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e.cfg.Log.Warn("failed to renew the lease", "err", err)
			return
		}
		if wait.Sleep(ctx, e.cfg.RetryPeriod) != nil {
			return
		}
	}
}

// errHeld says another candidate holds the Lease.
var errHeld = errors.New("the lease is held by another candidate")

// try takes or renews the Lease, within RenewDeadline at most.
func (e *Elector) try(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	now := e.cfg.Now()
	written, err := e.cfg.Registry.Update(ctx, e.cfg.Leases, e.cfg.Namespace, e.cfg.Name, func(cur api.Object) (api.Object, error) {
		old := leaseSpec(cur["spec"])
		e.observe(old, now)
		if old.HolderIdentity != "" && old.HolderIdentity != e.cfg.Identity && e.valid(now) {
			return nil, errHeld
		}
		next := e.record(now, old.LeaseTransitions)
		if old.HolderIdentity == e.cfg.Identity {
			if old.AcquireTime != "" {
				next["acquireTime"] = old.AcquireTime
			}
		} else {
			next["leaseTransitions"] = number(old.LeaseTransitions + 1)
		}
		return withSpec(cur, next), nil
	})
	if isReason(err, api.StatusReasonNotFound) {
		obj := api.Object{
			"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": map[string]any{"name": e.cfg.Name, "namespace": e.cfg.Namespace},
			"spec":     e.record(now, 0),
		}
		var written registry.Written
		if written, err = e.cfg.Registry.Create(ctx, e.cfg.Leases, e.cfg.Namespace, obj); err == nil {
			e.observe(leaseSpec(written.Object["spec"]), now)
		}
		return err
	}
	if err == nil {
		e.observe(leaseSpec(written.Object["spec"]), now)
	}
	return err
}

// record is the spec of a Lease this candidate holds from now.
func (e *Elector) record(now time.Time, transitions int32) map[string]any {
	t := now.UTC().Format(microTime)
	return map[string]any{
		"holderIdentity":       e.cfg.Identity,
		"leaseDurationSeconds": number(int32(e.cfg.LeaseDuration / time.Second)),
		"acquireTime":          t,
		"renewTime":            t,
		"leaseTransitions":     number(transitions),
	}
}

// observe notes the Lease's spec as read or written at now: its expiry
// is timed from the first time this candidate saw it so.
func (e *Elector) observe(s spec, now time.Time) {
	if e.observedAt.IsZero() || s != e.observed {
		e.observed, e.observedAt = s, now
	}
}

// valid reports whether the Lease observed has not expired at now.
func (e *Elector) valid(now time.Time) bool {
	return e.observedAt.Add(time.Duration(e.observed.LeaseDurationSeconds) * time.Second).After(now)
}

// release gives the Lease up if this candidate holds it, so that another
// takes it at once.
func (e *Elector) release(ctx context.Context) {
	if e.observed.HolderIdentity != e.cfg.Identity {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	now := e.cfg.Now().UTC().Format(microTime)
	written, err := e.cfg.Registry.Update(ctx, e.cfg.Leases, e.cfg.Namespace, e.cfg.Name, func(cur api.Object) (api.Object, error) {
		old := leaseSpec(cur["spec"])
		if old.HolderIdentity != e.cfg.Identity {
			return nil, errHeld
		}
		return withSpec(cur, map[string]any{
			"holderIdentity": "", "leaseDurationSeconds": number(1),
			"acquireTime": now, "renewTime": now, "leaseTransitions": number(old.LeaseTransitions),
		}), nil
	})
	switch {
	case err == nil:
		e.cfg.Log.Info("released the lease")
		e.observe(leaseSpec(written.Object["spec"]), e.cfg.Now())
	case !errors.Is(err, errHeld):
		e.cfg.Log.Warn("failed to release the lease", "err", err)
	}
}

// spec is a Lease's spec: what client-go's election record holds of it.
type spec struct {
	HolderIdentity       string `json:"holderIdentity"`
	LeaseDurationSeconds int32  `json:"leaseDurationSeconds"`
	AcquireTime          string `json:"acquireTime"`
	RenewTime            string `json:"renewTime"`
	LeaseTransitions     int32  `json:"leaseTransitions"`
	Strategy             string `json:"strategy"`
	PreferredHolder      string `json:"preferredHolder"`
}

// leaseSpec reads a Lease's spec; what it cannot read is zero (the
// registry validated the types of what it stored).
func leaseSpec(v any) spec {
	var s spec
	if b, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	return s
}

// number is n as decoded JSON holds it.
func number(n int32) json.Number { return json.Number(strconv.FormatInt(int64(n), 10)) }

// withSpec returns a copy of cur with spec, and cur's resourceVersion as
// the write's precondition.
func withSpec(cur api.Object, spec map[string]any) api.Object {
	next := maps.Clone(cur)
	next["metadata"] = maps.Clone(cur.Metadata())
	next["spec"] = spec
	return next
}

func isReason(err error, reason api.StatusReason) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Reason == reason
}
