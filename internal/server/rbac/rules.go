package rbac

import (
	"fmt"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/server/authz"
)

// The wildcards of a rule's verbs, groups, resources and URLs, as kube's
// rbacv1.VerbAll, APIGroupAll, ResourceAll and NonResourceAll.
const all = "*"

// allows says whether rule allows what a asks, as kube's RuleAllows.
func allows(a *authz.Attributes, rule *authz.Rule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	return apiGroupMatches(rule, a.APIGroup) && resourceMatches(rule, combined, a.Subresource) && resourceNameMatches(rule, a.Name)
}

func verbMatches(rule *authz.Rule, verb string) bool {
	return slices.Contains(rule.Verbs, all) || slices.Contains(rule.Verbs, verb)
}

func apiGroupMatches(rule *authz.Rule, group string) bool {
	return slices.Contains(rule.APIGroups, all) || slices.Contains(rule.APIGroups, group)
}

// resourceMatches matches "*", the resource (with its subresource), or
// "*/<subresource>".
func resourceMatches(rule *authz.Rule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == all || r == combined {
			return true
		}
		if subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

// resourceNameMatches: a rule without names matches every name.
func resourceNameMatches(rule *authz.Rule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

func nonResourceURLMatches(rule *authz.Rule, path string) bool {
	return slices.ContainsFunc(rule.NonResourceURLs, func(u string) bool { return authz.URLCovers(u, path) })
}

// compact merges atomic rules that differ only in their verbs, as kube's
// CompactRules does for its escalation message.
func compact(rules []authz.Rule) []authz.Rule {
	type simple struct {
		group, resource, name string
		named                 bool
	}
	var out []authz.Rule
	merged := map[simple]int{} // -> index in out
	for _, r := range rules {
		if len(r.APIGroups) != 1 || len(r.Resources) != 1 || len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
			out = append(out, r)
			continue
		}
		k := simple{group: r.APIGroups[0], resource: r.Resources[0], named: len(r.ResourceNames) == 1}
		if k.named {
			k.name = r.ResourceNames[0]
		}
		if i, ok := merged[k]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		merged[k] = len(out)
		r.Verbs = slices.Clone(r.Verbs)
		out = append(out, r)
	}
	return out
}

// compactString is kube's CompactString of a rule, which escalation
// messages list: {APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}.
func compactString(r authz.Rule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
