package authz

import (
	"slices"
	"strings"
)

// Covers reports whether owner's rules allow everything servant's allow, as
// kube's validation.Covers: servant's rules are broken down into rules of
// one verb, one API group, one resource and at most one resource name (or
// one verb and one non-resource URL), and each must be allowed by a single
// owner rule. uncovered are the broken-down rules none allows, in order.
func Covers(owner, servant []Rule) (ok bool, uncovered []Rule) {
	for _, s := range servant {
		for _, sub := range Breakdown(s) {
			if !slices.ContainsFunc(owner, func(o Rule) bool { return ruleCovers(o, sub) }) {
				uncovered = append(uncovered, sub)
			}
		}
	}
	return len(uncovered) == 0, uncovered
}

// Breakdown returns r as rules of one verb, API group, resource and resource
// name each (kube's BreakdownRule), then one per verb and non-resource URL.
func Breakdown(r Rule) []Rule {
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

// ruleCovers reports whether owner allows sub, a broken-down rule.
func ruleCovers(owner, sub Rule) bool {
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

// urlsCover: an owner URL ending in "*" covers every URL it prefixes.
func urlsCover(set, want []string) bool {
	for _, u := range want {
		if !slices.ContainsFunc(set, func(o string) bool {
			return o == u || strings.HasSuffix(o, "*") && strings.HasPrefix(u, strings.TrimRight(o, "*"))
		}) {
			return false
		}
	}
	return true
}
