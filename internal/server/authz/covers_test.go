package authz

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCovers follows the cases of kube's policy_comparator_test.go.
func TestCovers(t *testing.T) {
	get := func(groups, resources []string, names ...string) Rule {
		return Rule{Verbs: []string{"get"}, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	one := func(s string) []string { return []string{s} }
	tests := []struct {
		name           string
		owner, servant []Rule
		uncovered      []Rule
	}{
		{name: "exact", owner: []Rule{get(one("v1"), one("builds"))}, servant: []Rule{get(one("v1"), one("builds"))}},
		{name: "subresource wildcard", owner: []Rule{get(one("v1"), one("*/scale"))}, servant: []Rule{get(one("v1"), one("foo/scale"))}},
		{name: "subresource wildcard is not the resource", owner: []Rule{get(one("v1"), one("*/scale"))}, servant: []Rule{get(one("v1"), one("foo"))},
			uncovered: []Rule{get(one("v1"), one("foo"))}},
		{
			name: "several owner rules cover one rule",
			owner: []Rule{
				{APIGroups: one("v1"), Verbs: one("delete"), Resources: one("deployments")},
				{APIGroups: one("v1"), Verbs: one("delete"), Resources: one("builds")},
				{APIGroups: one("v1"), Verbs: one("update"), Resources: []string{"builds", "deployments"}},
			},
			servant: []Rule{{APIGroups: one("v1"), Verbs: []string{"delete", "update"}, Resources: []string{"builds", "deployments"}}},
		},
		{
			name:    "missing verb, broken down",
			owner:   []Rule{{APIGroups: one(""), Verbs: one("get"), Resources: []string{"pods", "secrets"}}},
			servant: []Rule{{APIGroups: one(""), Verbs: []string{"get", "list"}, Resources: []string{"pods", "secrets"}}},
			uncovered: []Rule{
				{APIGroups: one(""), Verbs: one("list"), Resources: one("pods")},
				{APIGroups: one(""), Verbs: one("list"), Resources: one("secrets")},
			},
		},
		{name: "star verbs, groups, resources", owner: []Rule{{Verbs: one("*"), APIGroups: one("*"), Resources: one("*")}},
			servant: []Rule{{Verbs: []string{"get", "delete"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments/scale"}, ResourceNames: one("x")}}},
		{name: "names cover names", owner: []Rule{get(one(""), one("pods"), "a", "b")}, servant: []Rule{get(one(""), one("pods"), "b")}},
		{name: "names do not cover all", owner: []Rule{get(one(""), one("pods"), "a")}, servant: []Rule{get(one(""), one("pods"))},
			uncovered: []Rule{get(one(""), one("pods"))}},
		{name: "other name", owner: []Rule{get(one(""), one("pods"), "a")}, servant: []Rule{get(one(""), one("pods"), "a", "c")},
			uncovered: []Rule{get(one(""), one("pods"), "c")}},
		{name: "url prefix", owner: []Rule{{Verbs: one("get"), NonResourceURLs: one("/apis/*")}}, servant: []Rule{{Verbs: one("get"), NonResourceURLs: []string{"/apis/apps", "/api"}}},
			uncovered: []Rule{{Verbs: one("get"), NonResourceURLs: one("/api")}}},
		{name: "url star", owner: []Rule{{Verbs: one("*"), NonResourceURLs: one("*")}}, servant: []Rule{{Verbs: one("post"), NonResourceURLs: one("/healthz")}}},
		{name: "resources do not cover urls", owner: []Rule{{Verbs: one("*"), APIGroups: one("*"), Resources: one("*")}}, servant: []Rule{{Verbs: one("get"), NonResourceURLs: one("/metrics")}},
			uncovered: []Rule{{Verbs: one("get"), NonResourceURLs: one("/metrics")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uncovered, err := Covers(tc.owner, tc.servant)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.uncovered, uncovered); diff != "" {
				t.Errorf("uncovered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCoversBounded: rules granting MaxGrants combinations are checked,
// one more are refused before anything is expanded.
func TestCoversBounded(t *testing.T) {
	names := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint("n", i)
		}
		return s
	}
	owner := []Rule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	atLimit := []Rule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: names(100), ResourceNames: names(MaxGrants / 100)}}
	if uncovered, err := Covers(owner, atLimit); err != nil || len(uncovered) != 0 {
		t.Fatalf("at the limit: uncovered %d, err %v; want none", len(uncovered), err)
	}
	past := append(atLimit, Rule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}})
	if _, err := Covers(owner, past); !errors.Is(err, ErrTooManyGrants) {
		t.Fatalf("past the limit: err %v, want ErrTooManyGrants", err)
	}
	// 2^16 of each: 2^64 combinations, which an unchecked int product
	// wraps to 0.
	wide := names(1 << 16)
	wrapping := []Rule{{Verbs: wide, APIGroups: wide, Resources: wide, ResourceNames: wide}}
	if _, err := Covers(owner, wrapping); !errors.Is(err, ErrTooManyGrants) {
		t.Fatalf("2^64 combinations: err %v, want ErrTooManyGrants", err)
	}
}
