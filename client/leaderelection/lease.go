package leaderelection

import (
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// LeasesResource is coordination.k8s.io/v1 leases.
var LeasesResource = client.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// Lease is a coordination.k8s.io/v1 Lease.
type Lease struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           LeaseSpec `json:"spec"`
}

var _ client.Object = (*Lease)(nil)

// LeaseSpec is a Lease's spec; every field may be absent.
type LeaseSpec struct {
	HolderIdentity       *string        `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32         `json:"leaseDurationSeconds,omitempty"`
	AcquireTime          *api.MicroTime `json:"acquireTime,omitempty"`
	RenewTime            *api.MicroTime `json:"renewTime,omitempty"`
	LeaseTransitions     *int32         `json:"leaseTransitions,omitempty"`
	Strategy             *string        `json:"strategy,omitempty"`
	PreferredHolder      *string        `json:"preferredHolder,omitempty"`
}

// record is what an elector reads of a lease and writes to it: client-go's
// LeaderElectionRecord, so that both electors can share one lease.
type record struct {
	holder          string
	durationSeconds int32
	acquire, renew  time.Time
	transitions     int32
	strategy        string
	preferredHolder string
}

func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

func microTime(t *api.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func recordOf(s *LeaseSpec) record {
	return record{
		holder:          deref(s.HolderIdentity),
		durationSeconds: deref(s.LeaseDurationSeconds),
		acquire:         microTime(s.AcquireTime),
		renew:           microTime(s.RenewTime),
		transitions:     deref(s.LeaseTransitions),
		strategy:        deref(s.Strategy),
		preferredHolder: deref(s.PreferredHolder),
	}
}

// spec is the lease spec of r as client-go's LeaseLock writes it: holder,
// duration, both times and transitions always (an empty holder as ""), the
// strategy and preferred holder only when set.
func (r record) spec() LeaseSpec {
	s := LeaseSpec{
		HolderIdentity:       &r.holder,
		LeaseDurationSeconds: &r.durationSeconds,
		AcquireTime:          &api.MicroTime{Time: r.acquire},
		RenewTime:            &api.MicroTime{Time: r.renew},
		LeaseTransitions:     &r.transitions,
	}
	if r.strategy != "" {
		s.Strategy = &r.strategy
	}
	if r.preferredHolder != "" {
		s.PreferredHolder = &r.preferredHolder
	}
	return s
}

// recordKey is what tells two observations of a lease apart: client-go
// compares the JSON of its record, whose times have second precision, so a
// renewal within the same second is not a change.
type recordKey struct {
	holder                    string
	durationSeconds           int32
	acquireUnix, renewUnix    int64
	transitions               int32
	strategy, preferredHolder string
}

func (r record) key() recordKey {
	return recordKey{r.holder, r.durationSeconds, r.acquire.Unix(), r.renew.Unix(), r.transitions, r.strategy, r.preferredHolder}
}
