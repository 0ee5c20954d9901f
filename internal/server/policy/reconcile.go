package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// maxAttempts bounds the rounds of one object's reconciliation when it
// keeps appearing and disappearing under it (kube's reconcile gives up
// after 3 or 4).
const maxAttempts = 4

// errUnchanged ends an update that would write nothing.
var errUnchanged = errors.New("unchanged")

// recreate ends an update of a binding whose roleRef differs from the
// default's: roleRef cannot change, so kube deletes and creates it.
type recreate struct{ uid string }

func (recreate) Error() string { return "roleRef changed" }

// Ensure creates the default objects that are missing from the store and
// reconciles the others, each one concurrently (on a fresh store their
// creates share group commits). An object the API refuses (its namespace
// being deleted) is logged and skipped, as kube does; a failure of the
// store is returned.
func Ensure(ctx context.Context, reg *registry.Registry, catalog *resource.Catalog, log *slog.Logger) error {
	resources := map[string]*resource.Resource{}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		res, ok := catalog.Get(Group, "v1", Plural(kind))
		if !ok {
			return fmt.Errorf("the catalogue serves no %s", kind)
		}
		resources[kind] = res
	}
	defaults := Defaults()
	errs := make([]error, len(defaults))
	var created, updated atomic.Int32
	var wg sync.WaitGroup
	for i, want := range defaults {
		wg.Go(func() {
			wrote, err := ensure(ctx, reg, resources[want.Kind()], want, log)
			switch {
			case err == nil && wrote == opCreate:
				created.Add(1)
			case err == nil && wrote == opUpdate:
				updated.Add(1)
			case isClientError(err):
				log.Warn("could not reconcile a default RBAC object", "kind", want.Kind(), "namespace", want.Namespace(), "name", want.Name(), "err", err)
			case err != nil:
				errs[i] = fmt.Errorf("reconciling %s %s: %w", want.Kind(), key(want), err)
			}
		})
	}
	wg.Wait()
	if n, m := created.Load(), updated.Load(); n+m > 0 {
		log.Info("default RBAC policy reconciled", "kubernetes", defaultsVersion, "created", n, "updated", m)
	}
	return errors.Join(errs...)
}

// Plural returns the resource of an RBAC kind.
func Plural(kind string) string {
	return map[string]string{"ClusterRole": "clusterroles", "Role": "roles", "ClusterRoleBinding": "clusterrolebindings", "RoleBinding": "rolebindings"}[kind]
}

func key(obj api.Object) string {
	if ns := obj.Namespace(); ns != "" {
		return ns + "/" + obj.Name()
	}
	return obj.Name()
}

func isClientError(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Code >= 400 && se.Status.Code < 500
}

func isReason(err error, reason api.StatusReason) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Reason == reason
}

type op int

const (
	opNone op = iota
	opCreate
	opUpdate
)

// ensure creates or reconciles one object, as kube's ReconcileRoleOptions
// and ReconcileRoleBindingOptions with Confirm and nothing removed.
func ensure(ctx context.Context, reg *registry.Registry, res *resource.Resource, want api.Object, log *slog.Logger) (op, error) {
	ns, name := want.Namespace(), want.Name()
	for range maxAttempts {
		_, err := reg.Update(ctx, res, ns, name, func(cur api.Object) (api.Object, error) {
			return reconciled(cur, want, log)
		})
		var rec recreate
		switch {
		case err == nil:
			return opUpdate, nil
		case errors.Is(err, errUnchanged):
			return opNone, nil
		case errors.As(err, &rec):
			_, _, err = reg.Delete(ctx, res, ns, name, registry.DeleteOptions{Preconditions: registry.Preconditions{UID: &rec.uid}})
			if err != nil && !isReason(err, api.StatusReasonNotFound) {
				if isReason(err, api.StatusReasonConflict) {
					continue // another object took the name
				}
				return opNone, err
			}
		case !isReason(err, api.StatusReasonNotFound):
			return opNone, err
		}
		_, err = reg.Create(ctx, res, ns, want.DeepCopy())
		if isReason(err, api.StatusReasonAlreadyExists) {
			continue // created meanwhile: reconcile it
		}
		if err != nil {
			return opNone, err
		}
		return opCreate, nil
	}
	return opNone, fmt.Errorf("gave up after %d attempts", maxAttempts)
}

// reconciled returns cur with what want has that it lacks (kube's
// computeReconciledRole and computeReconciledRoleBinding without removal):
// labels and annotations (cur's values win), rules not covered by cur's,
// aggregation selectors, subjects; and no aggregationRule if want has
// none. It returns errUnchanged if that is cur, or cur is protected by its
// autoupdate annotation, and recreate if want is a binding to another role.
func reconciled(cur, want api.Object, log *slog.Logger) (api.Object, error) {
	c, err := read(cur)
	if err != nil {
		return nil, err
	}
	w, err := read(want)
	if err != nil {
		return nil, err
	}
	protected := c.Metadata.Annotations[autoUpdate] == "false"
	binding := want.Kind() == "RoleBinding" || want.Kind() == "ClusterRoleBinding"
	if binding && c.RoleRef != w.RoleRef {
		if protected {
			log.Warn("skipped a reconcile-protected RBAC binding whose roleRef differs", "kind", want.Kind(), "name", key(want))
			return nil, errUnchanged
		}
		return nil, recreate{uid: c.Metadata.UID}
	}
	next := withoutPrecondition(cur)
	md := next.Metadata()
	changed := false
	for _, f := range []struct {
		field     string
		want, cur map[string]string
	}{{"labels", w.Metadata.Labels, c.Metadata.Labels}, {"annotations", w.Metadata.Annotations, c.Metadata.Annotations}} {
		merged := maps.Clone(f.cur)
		for k, v := range f.want {
			if _, ok := merged[k]; !ok {
				if merged == nil {
					merged = map[string]string{}
				}
				merged[k] = v
			}
		}
		if !maps.Equal(merged, f.cur) {
			md[f.field] = jsonValue(merged)
			changed = true
		}
	}
	if binding {
		var missing []authz.Subject
		for _, s := range w.Subjects {
			if !slices.Contains(c.Subjects, s) && !slices.Contains(missing, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			next["subjects"] = append(listOf(next["subjects"]), jsonValue(missing).([]any)...)
			changed = true
		}
	} else {
		uncovered, err := authz.Covers(c.Rules, w.Rules)
		if err != nil {
			return nil, err
		}
		if len(uncovered) > 0 {
			next["rules"] = append(listOf(next["rules"]), jsonValue(uncovered).([]any)...)
			changed = true
		}
		if aggregationChanged(next, c.AggregationRule, w.AggregationRule) {
			changed = true
		}
	}
	switch {
	case !changed:
		return nil, errUnchanged
	case protected:
		log.Warn("skipped a reconcile-protected default RBAC object that lacks some of the defaults", "kind", want.Kind(), "name", key(want))
		return nil, errUnchanged
	}
	return next, nil
}

// aggregationChanged sets next's aggregationRule from cur's and want's:
// none if want has none, else cur's with want's selectors it lacks.
func aggregationChanged(next api.Object, cur, want *aggregationRule) bool {
	if want == nil {
		delete(next, "aggregationRule")
		return cur != nil
	}
	var sels []selector.LabelSelector
	if cur != nil {
		sels = cur.ClusterRoleSelectors
	}
	n := len(sels)
	for _, s := range want.ClusterRoleSelectors {
		if !slices.ContainsFunc(sels, func(h selector.LabelSelector) bool { return sameSelector(h, s) }) {
			sels = append(sels, s)
		}
	}
	if len(sels) == n {
		return false
	}
	next["aggregationRule"] = jsonValue(aggregationRule{ClusterRoleSelectors: sels})
	return true
}

// withoutPrecondition returns a copy of cur to update, without its
// resourceVersion: the registry then computes the update again from the
// latest state when another writer (another server) got there first.
func withoutPrecondition(cur api.Object) api.Object {
	next := cur.DeepCopy()
	delete(next.Metadata(), "resourceVersion")
	return next
}

// listOf returns v as a JSON list, nil if it is none.
func listOf(v any) []any {
	l, _ := v.([]any)
	return l
}
