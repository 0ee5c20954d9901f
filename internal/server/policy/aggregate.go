package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// Aggregator is kube's ClusterRole aggregation controller. Its caller
// feeds it every ClusterRole (Resync) and then each change (Changed), from
// one goroutine or several; each call writes the aggregated ClusterRoles
// whose rules differ from the union of the roles their selectors match.
type Aggregator struct {
	reg   *registry.Registry
	roles *resource.Resource // the clusterroles resource
	log   *slog.Logger

	mu sync.Mutex // serialises Resync and Changed; held while writing
	// view is every ClusterRole by name, as last fed or written; guarded by mu.
	view map[string]*clusterRole
}

// clusterRole is what aggregation reads of a ClusterRole.
type clusterRole struct {
	rev    int64 // of the state read
	labels map[string]string
	rules  []authz.Rule
	// selectors are its aggregationRule's, parsed; nil if it has none or
	// one does not parse (it is then left alone, as kube's controller
	// fails to sync it).
	selectors []selector.Labels
}

// NewAggregator returns an Aggregator writing through reg to roles, the
// clusterroles resource.
func NewAggregator(reg *registry.Registry, roles *resource.Resource, log *slog.Logger) *Aggregator {
	return &Aggregator{reg: reg, roles: roles, log: log, view: map[string]*clusterRole{}}
}

// Resync replaces the view with all, every ClusterRole, and aggregates.
func (a *Aggregator) Resync(ctx context.Context, all []api.Object) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.view)
	for _, obj := range all {
		a.put(obj)
	}
	return a.aggregate(ctx)
}

// Changed applies one change of a ClusterRole, cur its new state or nil if
// it was deleted (old its last state, which may be nil if it was not),
// and aggregates.
func (a *Aggregator) Changed(ctx context.Context, old, cur api.Object) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur != nil {
		a.put(cur)
	} else if old != nil {
		delete(a.view, old.Name())
	}
	return a.aggregate(ctx)
}

// Retry aggregates again from the view, after a call failed to write
// some role.
func (a *Aggregator) Retry(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.aggregate(ctx)
}

// put records obj in the view unless the view has a later state of it
// (one this Aggregator wrote, before its event arrived).
func (a *Aggregator) put(obj api.Object) {
	rev, _ := strconv.ParseInt(obj.ResourceVersion(), 10, 64)
	name := obj.Name()
	if cur := a.view[name]; cur != nil && cur.rev >= rev {
		return
	}
	o, err := read(obj)
	if err != nil {
		a.log.Error("a stored ClusterRole is malformed; not aggregating it", "name", name, "err", err)
		delete(a.view, name)
		return
	}
	cr := &clusterRole{rev: rev, labels: o.Metadata.Labels, rules: o.Rules}
	if o.AggregationRule != nil {
		cr.selectors = make([]selector.Labels, 0, len(o.AggregationRule.ClusterRoleSelectors))
		for _, ls := range o.AggregationRule.ClusterRoleSelectors {
			sel, err := selector.FromLabelSelector(&ls)
			if err != nil {
				a.log.Error("a ClusterRole's aggregationRule does not parse; not aggregating it", "name", name, "err", err)
				cr.selectors = nil
				break
			}
			cr.selectors = append(cr.selectors, sel)
		}
	}
	a.view[name] = cr
}

// aggregate writes each aggregated ClusterRole whose rules are not the
// union of those its selectors match, in rounds until none changes, so
// that a chain (a role aggregated into view, view into edit, edit into
// admin) is done at once. A cycle of aggregated roles could change them
// forever: len(view)+1 rounds bound it, the next change going on.
func (a *Aggregator) aggregate(ctx context.Context) error {
	names := slices.Sorted(maps.Keys(a.view))
	var errs []error
	for range len(names) + 1 {
		wrote := false
		for _, name := range names {
			cr := a.view[name]
			if cr == nil || cr.selectors == nil {
				continue
			}
			want := a.union(name, cr.selectors, names)
			if slices.EqualFunc(want, cr.rules, sameRule) {
				continue
			}
			if err := a.write(ctx, name, want); err != nil {
				errs = append(errs, fmt.Errorf("aggregating ClusterRole %s: %w", name, err))
				continue
			}
			wrote = true
		}
		if !wrote {
			break
		}
	}
	return errors.Join(errs...)
}

// union is kube's aggregation: for each selector in turn, the rules of the
// roles it matches (by name, role name itself aside), each rule once (a
// set of their keys, so that many rules cost linear time, not quadratic).
func (a *Aggregator) union(name string, sels []selector.Labels, names []string) []authz.Rule {
	var out []authz.Rule
	seen := map[string]bool{}
	for _, sel := range sels {
		for _, n := range names {
			cr := a.view[n]
			if n == name || cr == nil || !sel.Matches(cr.labels) {
				continue
			}
			for _, r := range cr.rules {
				if k := ruleKey(r); !seen[k] {
					seen[k] = true
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// write sets the rules of ClusterRole name, if it is still aggregated and
// they differ, and records what it wrote.
func (a *Aggregator) write(ctx context.Context, name string, rules []authz.Rule) error {
	w, err := a.reg.Update(ctx, a.roles, "", name, func(cur api.Object) (api.Object, error) {
		c, err := read(cur)
		if err != nil {
			return nil, err
		}
		if c.AggregationRule == nil || slices.EqualFunc(c.Rules, rules, sameRule) {
			return nil, errUnchanged // the view is behind: its change is on its way
		}
		next := withoutPrecondition(cur)
		next["rules"] = nil // as kube's apply of no rules leaves them
		if len(rules) > 0 {
			next["rules"] = jsonValue(rules)
		}
		return next, nil
	})
	switch {
	case errors.Is(err, errUnchanged), isReason(err, api.StatusReasonNotFound):
		return nil
	case err != nil:
		return err
	}
	a.put(w.Object)
	return nil
}
