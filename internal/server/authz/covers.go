package authz

import (
	"fmt"
	"slices"
	"strings"
)

// MaxGrants bounds the (group, resource, verb, name) and (URL, verb)
// combinations Covers breaks rules down into: kube expands every rule into
// them, so a role of a few hundred short entries in each list (well within
// a body's 3 MiB) would take minutes and gigabytes.
const MaxGrants = 100_000

// ErrTooManyGrants is Covers' refusal of rules granting more than MaxGrants
// combinations.
var ErrTooManyGrants = fmt.Errorf("more than %d combinations of API group, resource, verb and name", MaxGrants)

// Covers returns the rules servant grants that owner's rules do not, as
// kube's validation.Covers: servant's rules are broken down into rules of
// one verb, one API group, one resource and at most one resource name (or
// one verb and one non-resource URL), and each must be allowed by a single
// owner rule. uncovered are the broken-down rules none allows, in order.
// It fails with ErrTooManyGrants, before expanding anything, when servant
// grants more than MaxGrants combinations.
func Covers(owner, servant []Rule) (uncovered []Rule, err error) {
	if grants(servant) > MaxGrants {
		return nil, ErrTooManyGrants
	}
	for _, s := range servant {
		for _, sub := range breakdown(s) {
			if !slices.ContainsFunc(owner, func(o Rule) bool { return ruleCovers(&o, &sub) }) {
				uncovered = append(uncovered, sub)
			}
		}
	}
	return uncovered, nil
}

// grants counts the combinations rules grant, up to MaxGrants+1. Each
// product saturates there: four lists of 2^16 entries multiply to 2^64,
// which an int wraps to 0.
func grants(rules []Rule) int {
	n := 0
	for _, r := range rules {
		n += product(len(r.APIGroups), len(r.Resources), len(r.Verbs), max(1, len(r.ResourceNames)))
		n += product(len(r.NonResourceURLs), len(r.Verbs))
		if n > MaxGrants {
			return MaxGrants + 1
		}
	}
	return n
}

// product multiplies factors, saturating at MaxGrants+1.
func product(factors ...int) int {
	p := 1
	for _, f := range factors {
		if f != 0 && p > MaxGrants/f {
			return MaxGrants + 1
		}
		p *= f
	}
	return p
}

// breakdown returns r as rules of one verb, API group, resource and
// resource name each (kube's BreakdownRule), then one per verb and
// non-resource URL.
func breakdown(r Rule) []Rule {
	var subs []Rule
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				one := Rule{APIGroups: []string{g}, Resources: []string{res}, Verbs: []string{v}}
				if len(r.ResourceNames) == 0 {
					subs = append(subs, one)
					continue
				}
				for _, n := range r.ResourceNames {
					one.ResourceNames = []string{n}
					subs = append(subs, one)
				}
			}
		}
	}
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			subs = append(subs, Rule{NonResourceURLs: []string{u}, Verbs: []string{v}})
		}
	}
	return subs
}

// ruleCovers reports whether owner allows sub, a broken-down rule, as
// kube's ruleCovers.
func ruleCovers(owner, sub *Rule) bool {
	names := len(owner.ResourceNames) == 0 || len(sub.ResourceNames) > 0 && hasAll(owner.ResourceNames, sub.ResourceNames)
	return (slices.Contains(owner.Verbs, "*") || hasAll(owner.Verbs, sub.Verbs)) &&
		(slices.Contains(owner.APIGroups, "*") || hasAll(owner.APIGroups, sub.APIGroups)) &&
		resourcesCover(owner.Resources, sub.Resources) && names &&
		urlsCover(owner.NonResourceURLs, sub.NonResourceURLs)
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !slices.Contains(set, w) {
			return false
		}
	}
	return true
}

// resourcesCover: "*" covers every resource, and "*/status" the status
// subresource of every resource.
func resourcesCover(set, want []string) bool {
	if slices.Contains(set, "*") {
		return true
	}
	for _, r := range want {
		if slices.Contains(set, r) {
			continue
		}
		_, sub, ok := strings.Cut(r, "/")
		if !ok || !slices.Contains(set, "*/"+sub) {
			return false
		}
	}
	return true
}

func urlsCover(set, want []string) bool {
	for _, u := range want {
		if !slices.ContainsFunc(set, func(o string) bool { return URLCovers(o, u) }) {
			return false
		}
	}
	return true
}

// URLCovers reports whether a rule's non-resource URL covers path: the
// same path, or a prefix of it ending in "*" ("*" alone covers every
// path), as kube's NonResourceURLMatches.
func URLCovers(rule, path string) bool {
	return rule == path || strings.HasSuffix(rule, "*") && strings.HasPrefix(path, strings.TrimRight(rule, "*"))
}
