package leader_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

const (
	ns   = "kube-system"
	name = "test-controller-manager"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// maxRetry is the longest a candidate waits between attempts to acquire.
const maxRetry = leader.DefaultRetryPeriod * 22 / 10

// fixture is a registry over a memory store holding kube-system.
type fixture struct {
	store  storage.Interface
	reg    *registry.Registry
	leases *resource.Resource
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	builtins := resource.Builtins()
	reg := registry.New(store, quiet)
	f := &fixture{store: store, reg: reg}
	var nsRes *resource.Resource
	for _, r := range builtins {
		switch r.Plural {
		case "leases":
			f.leases = r
		case "namespaces":
			nsRes = r
		}
	}
	if _, err := reg.Create(context.Background(), nsRes, "", api.Object{"metadata": map[string]any{"name": ns}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// lease returns the stored Lease's spec.
func (f *fixture) lease(t *testing.T) map[string]any {
	t.Helper()
	obj, err := f.reg.Get(context.Background(), f.leases, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj["spec"].(map[string]any)
}

// candidate runs one Elector until stop, recording whether it leads.
type candidate struct {
	e       *leader.Elector
	leading atomic.Bool
	terms   atomic.Int32 // how many times lead was called
	stop    context.CancelFunc
	done    chan struct{}
}

// stand starts a candidate on reg; every candidate's lead adds itself to
// leaders, and the test fails if two lead at once.
func stand(t *testing.T, reg *registry.Registry, leases *resource.Resource, id string, leaders *atomic.Int32, now func() time.Time) *candidate {
	t.Helper()
	c := &candidate{done: make(chan struct{})}
	e, err := leader.New(leader.Config{Registry: reg, Leases: leases, Namespace: ns, Name: name, Identity: id, Log: quiet, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	c.e = e
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = func() { cancel(); <-c.done }
	go func() {
		defer close(c.done)
		c.e.Run(ctx, func(ctx context.Context) {
			if n := leaders.Add(1); n > 1 {
				t.Errorf("%s leads with %d others", id, n-1)
			}
			c.terms.Add(1)
			c.leading.Store(true)
			<-ctx.Done()
			c.leading.Store(false)
			leaders.Add(-1)
		})
	}()
	t.Cleanup(c.stop)
	return c
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func num(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case interface{ String() string }:
		return v.String()
	case nil:
		return ""
	default:
		return "?"
	}
}

// TestAcquireRenewRelease: a free Lease is taken at once (no wait at
// start), renewed every RetryPeriod with its acquireTime kept, and
// released when the holder stops, so that the next candidate takes it
// within a retry, not a lease duration.
func TestAcquireRenewRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		var leaders atomic.Int32
		start := time.Now()
		a := stand(t, f.reg, f.leases, "a", &leaders, nil)
		synctest.Wait()
		if !a.leading.Load() || time.Since(start) != 0 {
			t.Fatalf("a leads: %v after %v, want at once", a.leading.Load(), time.Since(start))
		}
		spec := f.lease(t)
		if str(spec, "holderIdentity") != "a" || num(spec, "leaseDurationSeconds") != "15" || num(spec, "leaseTransitions") != "0" ||
			str(spec, "acquireTime") != start.UTC().Format("2006-01-02T15:04:05.000000Z07:00") || spec["renewTime"] != spec["acquireTime"] {
			t.Fatalf("lease after acquiring: %v", spec)
		}
		b := stand(t, f.reg, f.leases, "b", &leaders, nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		renewed := f.lease(t)
		if !a.leading.Load() || b.leading.Load() || str(renewed, "holderIdentity") != "a" || renewed["acquireTime"] != spec["acquireTime"] {
			t.Fatalf("after a minute: a leads %v, b leads %v, lease %v", a.leading.Load(), b.leading.Load(), renewed)
		}
		renewAt, _ := time.Parse(time.RFC3339Nano, str(renewed, "renewTime"))
		if age := time.Since(renewAt); age > leader.DefaultRetryPeriod {
			t.Fatalf("renewTime %v old, want at most a retry period", age)
		}

		stopped := time.Now()
		a.stop()
		released := f.lease(t)
		if str(released, "holderIdentity") != "" || num(released, "leaseDurationSeconds") != "1" {
			t.Fatalf("lease after a stopped: %v", released)
		}
		testwait.Until(t, time.Minute, "b to lead", b.leading.Load)
		if took := time.Since(stopped); took > maxRetry {
			t.Fatalf("b took over %v after a released, want within a jittered retry period", took)
		}
		if spec := f.lease(t); str(spec, "holderIdentity") != "b" || num(spec, "leaseTransitions") != "1" {
			t.Fatalf("lease after b took over: %v", spec)
		}
	})
}

// cutStore fails every call while cut is set: a server cut off from the
// store.
type cutStore struct {
	storage.Interface
	cut atomic.Bool
}

var errCut = errors.New("store unreachable")

func (s *cutStore) Get(ctx context.Context, key string) (storage.KV, error) {
	if s.cut.Load() {
		return storage.KV{}, errCut
	}
	return s.Interface.Get(ctx, key)
}

// TestExpireAndTakeOver: a holder cut off from the store steps down
// within RenewDeadline; the other takes the Lease only once it has seen
// it unchanged for LeaseDuration, on its own clock (one candidate's clock
// is an hour ahead: skew does not matter), and never while the first
// leads.
func TestExpireAndTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		cs := &cutStore{Interface: f.store}
		cutReg := registry.New(cs, quiet)
		var leaders atomic.Int32
		a := stand(t, cutReg, f.leases, "a", &leaders, nil)
		synctest.Wait()
		ahead := func() time.Time { return time.Now().Add(time.Hour) }
		b := stand(t, f.reg, f.leases, "b", &leaders, ahead)
		time.Sleep(30 * time.Second)
		if !a.leading.Load() || b.leading.Load() {
			t.Fatalf("a leads %v, b leads %v; want a alone", a.leading.Load(), b.leading.Load())
		}
		renewAt, _ := time.Parse(time.RFC3339Nano, str(f.lease(t), "renewTime"))
		cs.cut.Store(true)
		testwait.Until(t, time.Minute, "a to step down", func() bool { return !a.leading.Load() })
		if d := time.Since(renewAt); d >= leader.DefaultLeaseDuration {
			t.Errorf("a stepped down %v after its last renewal, want before the lease expires", d)
		}
		testwait.Until(t, time.Minute, "b to lead", b.leading.Load)
		// b sees the last renewal at its next jittered attempt, and takes
		// the lease at the first attempt after it expired.
		if d := time.Since(renewAt); d < leader.DefaultLeaseDuration || d > leader.DefaultLeaseDuration+2*maxRetry {
			t.Errorf("b took over %v after a's last renewal, want between the lease duration and two jittered retries more", d)
		}
		if spec := f.lease(t); str(spec, "holderIdentity") != "b" || num(spec, "leaseTransitions") != "1" {
			t.Fatalf("lease: %v", spec)
		}
		// a, reconnected, stands again and waits.
		cs.cut.Store(false)
		time.Sleep(time.Minute)
		if a.leading.Load() || !b.leading.Load() || a.terms.Load() != 1 {
			t.Fatalf("after a reconnected: a leads %v (terms %d), b leads %v", a.leading.Load(), a.terms.Load(), b.leading.Load())
		}
	})
}

// conflictStore writes the Lease as another candidate would between the
// next read of it and the write that follows.
type conflictStore struct {
	storage.Interface
	once  sync.Once
	write func()
}

func (s *conflictStore) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	s.once.Do(s.write)
	return s.Interface.Update(ctx, key, expected, value)
}

// TestConflict: a free Lease that another candidate takes between our
// read and our write is not overwritten (the write is a compare-and-swap),
// and the other's claim holds until it expires.
func TestConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		free := api.Object{"metadata": map[string]any{"name": name}, "spec": map[string]any{"holderIdentity": "", "leaseDurationSeconds": json.Number("1")}}
		if _, err := f.reg.Create(ctx, f.leases, ns, free); err != nil {
			t.Fatal(err)
		}
		cs := &conflictStore{Interface: f.store}
		cs.write = func() {
			_, err := f.reg.Update(ctx, f.leases, ns, name, func(cur api.Object) (api.Object, error) {
				next := cur.DeepCopy()
				next["spec"] = map[string]any{"holderIdentity": "other", "leaseDurationSeconds": json.Number("15"), "leaseTransitions": json.Number("1")}
				return next, nil
			})
			if err != nil {
				t.Error(err)
			}
		}
		reg := registry.New(cs, quiet)
		var leaders atomic.Int32
		start := time.Now()
		a := stand(t, reg, f.leases, "a", &leaders, nil)
		synctest.Wait()
		if a.leading.Load() || str(f.lease(t), "holderIdentity") != "other" {
			t.Fatalf("a leads %v, lease %v: want the other's write kept", a.leading.Load(), f.lease(t))
		}
		testwait.Until(t, time.Minute, "a to lead", a.leading.Load)
		if d := time.Since(start); d < leader.DefaultLeaseDuration {
			t.Fatalf("a took the other's lease after %v, before it expired", d)
		}
		if spec := f.lease(t); str(spec, "holderIdentity") != "a" || num(spec, "leaseTransitions") != "2" {
			t.Fatalf("lease: %v", spec)
		}
	})
}

// TestNeverTwoLeaders runs three candidates whose holders are cut off
// from the store in turn: leadership moves, and no two ever lead at once
// (stand fails the test if they do).
func TestNeverTwoLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		var leaders atomic.Int32
		var cands []*candidate
		var stores []*cutStore
		for _, id := range []string{"a", "b", "c"} {
			cs := &cutStore{Interface: f.store}
			reg := registry.New(cs, quiet)
			stores = append(stores, cs)
			cands = append(cands, stand(t, reg, f.leases, id, &leaders, nil))
		}
		holders := map[string]bool{}
		for range 6 {
			synctest.Wait()
			for i, c := range cands {
				if c.leading.Load() {
					holders[c.e.Identity()] = true
					stores[i].cut.Store(true)
				}
			}
			time.Sleep(30 * time.Second)
			for _, cs := range stores {
				cs.cut.Store(false)
			}
		}
		if len(holders) < 2 {
			t.Fatalf("leaders: %v, want leadership to move", holders)
		}
	})
}
