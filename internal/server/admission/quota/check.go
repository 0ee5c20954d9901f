package quota

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/client/api"
)

// Refused is a write the quotas refuse: kube's 403 with this reason.
type Refused struct{ Reason string }

func (r *Refused) Error() string { return r.Reason }

func refused(format string, args ...any) error { return &Refused{fmt.Sprintf(format, args...)} }

// Write is a write to charge: its operation (CREATE or UPDATE), the
// resource (and subresource) and the object written over the old one
// (nil on create).
type Write struct {
	Op                         string
	Group, Plural, Subresource string
	Object, Old                api.Object
}

// Uncovered is a write that matches limited scopes no quota covers,
// which kube refuses with a plain error (a 500 without a reason).
type Uncovered struct{ Scopes []Scope }

func (u *Uncovered) Error() string {
	return fmt.Sprintf("insufficient quota to match these scopes: %v", u.Scopes)
}

// Handles says whether the write may cost quota (kube's evaluators'
// Handles): Check of any other charges and refuses nothing.
func Handles(w Write) bool { return evaluatorFor(w.Group, w.Plural).handles(w) }

// Check is kube's CheckRequest: the quotas among quotas whose usage the
// write raises, with their new usage, or a *Refused error, an *Uncovered
// one (or another for an object it cannot read). What limited names must
// be covered by a quota.
func Check(quotas []Quota, w Write, limited []Limited, now time.Time) ([]Quota, error) {
	ev := evaluatorFor(w.Group, w.Plural)
	if !ev.handles(w) {
		return nil, nil
	}
	obj, err := ev.read(w.Object)
	if err != nil {
		return nil, err
	}
	usage := ev.usage(obj, now)
	limitedScopes, limitedNames := limits(limited, w, obj, usage)
	var interesting []Quota
	covered := map[string]bool{}       // resource names the interesting quotas limit
	coveredScopes := map[string]bool{} // scope names of the quotas' expressions obj matches
	for _, q := range quotas {
		for _, s := range q.Scopes {
			if matchesScope(s, obj) {
				coveredScopes[s.Name] = true
			}
		}
		restricted := ev.matching(q.Hard)
		if len(restricted) == 0 || !matches(q.Scopes, obj) {
			continue
		}
		if err := constraints(restricted, obj); err != nil {
			var r *Refused
			if errors.As(err, &r) {
				return nil, refused("failed quota: %s: %s", q.Name, r.Reason)
			}
			return nil, err
		}
		for _, name := range restricted {
			if _, ok := q.Used[name]; !ok {
				return nil, refused("status unknown for quota: %s, resources: %s", q.Name, strings.Join(restricted, ","))
			}
			covered[name] = true
		}
		interesting = append(interesting, q)
	}
	var negative []string
	for name, q := range usage {
		if q.Sign() < 0 {
			negative = append(negative, name)
		}
	}
	if len(negative) > 0 {
		slices.Sort(negative)
		return nil, refused("quota usage is negative for resource(s): %s", strings.Join(negative, ","))
	}
	// An update is charged what it adds to a quota the old object was
	// charged to already, its whole usage to one it enters.
	var diff List
	var old any
	if w.Op == "UPDATE" && w.Old != nil && w.Old.ResourceVersion() != "" {
		if old, err = ev.read(w.Old); err != nil {
			return nil, err
		}
		diff = subtract(usage, ev.usage(old, now))
	}
	deltas := make([]List, len(interesting))
	moves := false // kube looks no further at a write that charges nothing
	for i, q := range interesting {
		deltas[i] = usage
		if diff != nil && matches(q.Scopes, old) {
			deltas[i] = diff
		}
		moves = moves || !allZero(deltas[i])
	}
	if len(interesting) == 0 {
		moves = !allZero(usage)
		if diff != nil {
			moves = !allZero(diff)
		}
	}
	if !moves {
		return nil, nil
	}
	var uncovered []string
	for _, name := range limitedNames {
		if !covered[name] && !slices.Contains(uncovered, name) {
			uncovered = append(uncovered, name)
		}
	}
	if len(uncovered) > 0 {
		slices.Sort(uncovered)
		return nil, refused("insufficient quota to consume: %s", strings.Join(uncovered, ","))
	}
	var unscoped []Scope
	for _, s := range limitedScopes {
		if !coveredScopes[s.Name] {
			unscoped = append(unscoped, s)
		}
	}
	if len(unscoped) > 0 {
		return nil, &Uncovered{unscoped}
	}
	var changed []Quota
	for i, q := range interesting {
		// A quota none of whose limits the write moves is not written
		// (kube's RemoveZeros), nor refused for being over already.
		requested := nonZero(mask(deltas[i], slices.Collect(maps.Keys(q.Hard))))
		if len(requested) == 0 {
			continue
		}
		used := maps.Clone(q.Used)
		Add(used, requested)
		var exceeded []string
		for name := range requested {
			if u := used[name]; u.Cmp(q.Hard[name]) > 0 {
				exceeded = append(exceeded, name)
			}
		}
		if len(exceeded) > 0 && w.Subresource != "status" { // a status write is charged, never refused
			return nil, refused("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				pretty(mask(requested, exceeded)), pretty(mask(q.Used, exceeded)), pretty(mask(q.Hard, exceeded)))
		}
		q.Used = used
		changed = append(changed, q)
	}
	return changed, nil
}

// limits are the expressions of limited's scopes obj matches (those of
// every resource, as kube's getMatchedLimitedScopes), and the names of
// what obj uses that limited's entries for the resource name (kube's
// limitedByDefault).
func limits(limited []Limited, w Write, obj any, usage List) (scopes []Scope, names []string) {
	for _, l := range limited {
		for _, s := range l.MatchScopes {
			if matchesScope(s, obj) {
				scopes = append(scopes, s)
			}
		}
		if l.APIGroup != w.Group || l.Resource != w.Plural {
			continue
		}
		for name, q := range usage {
			if q.Sign() == 1 && slices.ContainsFunc(l.MatchContains, func(c string) bool { return strings.Contains(name, c) }) {
				names = append(names, name)
			}
		}
	}
	return scopes, names
}

// allZero says whether every quantity of l is zero.
func allZero(l List) bool {
	for _, q := range l {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// subtract is a-b, each at least zero, zeros left out (kube's
// SubtractWithNonNegativeResult, then RemoveZeros).
func subtract(a, b List) List {
	out := List{}
	for name, q := range a {
		d := q.DeepCopy()
		if o, ok := b[name]; ok {
			d.Sub(o)
		}
		if d.Sign() > 0 {
			out[name] = d
		}
	}
	return out
}

// nonZero is l without its zero quantities.
func nonZero(l List) List {
	maps.DeleteFunc(l, func(_ string, q resource.Quantity) bool { return q.IsZero() })
	return l
}

// checkedResources are the pod resources whose quota makes each container
// name its own request or limit (kube's validationSet).
var checkedResources = []string{"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}

// constraints is kube's pod Constraints: each container must give the
// quota-limited cpu and memory it charges, unless the pod sets its own.
func constraints(restricted []string, obj any) error {
	pod, ok := obj.(*pod)
	if !ok || pod.levelSet() {
		return nil
	}
	missing := map[string][]string{}
	for _, c := range slices.Concat(pod.Spec.Containers, pod.Spec.InitContainers) {
		has := computeUsage(c.Resources.Requests, c.Resources.Limits)
		for _, name := range restricted {
			if _, ok := has[name]; !ok && slices.Contains(checkedResources, name) && !slices.Contains(missing[name], c.Name) {
				missing[name] = append(missing[name], c.Name)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		slices.Sort(missing[name])
		msgs = append(msgs, fmt.Sprintf("%s for: %s", name, strings.Join(missing[name], ",")))
	}
	return refused("must specify %s", strings.Join(msgs, "; "))
}

// Usage is, for each of quotas, what a resource's objects that match its
// scopes use of its hard resources (every one the resource charges,
// zero if nothing uses it), as kube's quota controller counts: each
// object (its JSON; only their number counts where ReadsObjects is
// false) is decoded once for all quotas.
func Usage(quotas []Quota, group, plural string, objs [][]byte, now time.Time) ([]List, error) {
	ev := evaluatorFor(group, plural)
	names := make([][]string, len(quotas))
	out := make([]List, len(quotas))
	for i, q := range quotas {
		names[i] = ev.matching(q.Hard)
		out[i] = List{}
		for _, n := range names[i] {
			out[i][n] = resource.Quantity{Format: resource.DecimalSI}
		}
	}
	for _, b := range objs {
		obj, err := ev.decode(b)
		if err != nil {
			return nil, err
		}
		u := ev.usage(obj, now)
		for i, q := range quotas {
			if len(names[i]) > 0 && matches(q.Scopes, obj) {
				Add(out[i], mask(u, names[i]))
			}
		}
	}
	return out, nil
}

// Resources are the resources (group, plural) whose objects a quota's hard
// names charge, among served: pods, services and claims for theirs, the
// resource counted for count/..., and the kinds of the legacy aliases.
func Resources(hard List, served func(group, plural string) bool) [][2]string {
	var out [][2]string
	seen := map[[2]string]bool{}
	for name := range hard {
		var gr [2]string
		switch {
		case strings.HasPrefix(name, "count/"):
			plural, group, _ := strings.Cut(strings.TrimPrefix(name, "count/"), ".")
			gr = [2]string{group, plural}
		case legacyAliases[name] != "":
			gr = [2]string{"", name}
		default:
			for _, plural := range []string{"pods", "services", "persistentvolumeclaims"} {
				if evaluatorFor("", plural).charges(name) {
					gr = [2]string{"", plural}
				}
			}
		}
		if gr[1] != "" && !seen[gr] && served(gr[0], gr[1]) {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	return out
}

// ReadsObjects says whether the usage of a resource's objects depends on
// them (pods, services, claims) or only on their number (nil objects
// will do).
func ReadsObjects(group, plural string) bool { return evaluatorFor(group, plural).reads() }

// Equal says whether two lists hold the same quantities.
func Equal(a, b List) bool {
	return maps.EqualFunc(a, b, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
}
