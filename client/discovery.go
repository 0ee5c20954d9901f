package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// APIResource is one served resource as discovery describes it.
type APIResource struct {
	GroupVersionResource
	Kind         string
	SingularName string
	Namespaced   bool
	Verbs        []string
	ShortNames   []string
	Categories   []string
}

// APIResources is what a server serves: the core group first, then the
// other groups in the server's order, each group's versions in order of
// preference.
type APIResources []APIResource

// mediaAggregatedDiscovery asks for aggregated discovery (v2, then v2beta1)
// and accepts the legacy documents, as client-go asks.
const mediaAggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

// Discover reads the server's resources: from /api and /apis in one
// request each when the server answers with aggregated discovery, and
// otherwise from the legacy documents, one request per group version.
// Subresources are left out.
func (c *Client) Discover(ctx context.Context) (APIResources, error) {
	var all APIResources
	for _, root := range []string{"/api", "/apis"} {
		rs, err := c.discoverRoot(ctx, root)
		if err != nil {
			return nil, err
		}
		all = append(all, rs...)
	}
	return all, nil
}

// discoverRoot reads the resources under /api or /apis.
func (c *Client) discoverRoot(ctx context.Context, root string) (APIResources, error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: root, accept: mediaAggregatedDiscovery})
	if err != nil {
		return nil, fmt.Errorf("discovery %s: %w", root, err)
	}
	if strings.Contains(resp.contentType, "as=APIGroupDiscoveryList") {
		return aggregatedResources(resp.body)
	}
	versions, err := legacyGroupVersions(root, resp.body)
	if err != nil {
		return nil, err
	}
	var out APIResources
	for _, gv := range versions {
		rs, err := c.legacyResources(ctx, root, gv)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// aggregatedResources reads an APIGroupDiscoveryList.
func aggregatedResources(body []byte) (APIResources, error) {
	var list api.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding aggregated discovery: %w", err)
	}
	var out APIResources
	for _, g := range list.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				out = append(out, aggregatedResource(g.ObjectMeta.Name, v.Version, r))
			}
		}
	}
	return out, nil
}

func aggregatedResource(group, version string, r api.APIResourceDiscovery) APIResource {
	res := APIResource{
		GroupVersionResource: GroupVersionResource{Group: group, Version: version, Resource: r.Resource},
		SingularName:         r.SingularResource, Namespaced: r.Scope == "Namespaced",
		Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
	}
	if r.ResponseKind != nil {
		res.Kind = r.ResponseKind.Kind
	}
	return res
}

// legacyGroupVersions reads /api (APIVersions) or /apis (APIGroupList)
// into group versions ("v1", "apps/v1"), each group's preferred first.
func legacyGroupVersions(root string, body []byte) ([]string, error) {
	if root == "/api" {
		var v api.APIVersions
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("decoding /api: %w", err)
		}
		return v.Versions, nil
	}
	var groups api.APIGroupList
	if err := json.Unmarshal(body, &groups); err != nil {
		return nil, fmt.Errorf("decoding /apis: %w", err)
	}
	var out []string
	for _, g := range groups.Groups {
		out = append(out, g.PreferredVersion.GroupVersion)
		for _, v := range g.Versions {
			if v.GroupVersion != g.PreferredVersion.GroupVersion {
				out = append(out, v.GroupVersion)
			}
		}
	}
	return out, nil
}

// legacyResources reads one group version's APIResourceList.
func (c *Client) legacyResources(ctx context.Context, root, gv string) (APIResources, error) {
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: root + "/" + gv})
	if err != nil {
		return nil, fmt.Errorf("discovery %s/%s: %w", root, gv, err)
	}
	var list api.APIResourceList
	if err := json.Unmarshal(resp.body, &list); err != nil {
		return nil, fmt.Errorf("decoding discovery of %s: %w", gv, err)
	}
	group, version, _ := strings.Cut(gv, "/")
	if version == "" {
		group, version = "", group
	}
	var out APIResources
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue // a subresource
		}
		out = append(out, APIResource{
			GroupVersionResource: GroupVersionResource{Group: group, Version: version, Resource: r.Name},
			Kind:                 r.Kind, SingularName: r.SingularName, Namespaced: r.Namespaced,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	return out, nil
}

// resourceQuery is one reading of what a user typed.
type resourceQuery struct {
	name, group, version string
	anyGroup             bool
}

// queries are the readings of arg, as kubectl's ParseResourceArg: with two
// or more dots, resource.version.group first, then resource.group.
func queries(arg string) []resourceQuery {
	name, rest, dotted := strings.Cut(strings.ToLower(arg), ".")
	if !dotted {
		return []resourceQuery{{name: name, anyGroup: true}}
	}
	var qs []resourceQuery
	if version, group, ok := strings.Cut(rest, "."); ok {
		qs = append(qs, resourceQuery{name: name, group: group, version: version})
	}
	return append(qs, resourceQuery{name: name, group: rest})
}

// Match ranks: how a resource matched the name a user typed.
const (
	byPlural = iota
	bySingular
	byShortName
	byKind
	noMatch
)

// rank says how well r matches q (noMatch when it does not).
func (q resourceQuery) rank(r *APIResource) int {
	if !q.anyGroup && r.Group != q.group || q.version != "" && r.Version != q.version {
		return noMatch
	}
	singular := cmpOrLower(r.SingularName, r.Kind)
	switch {
	case r.Resource == q.name:
		return byPlural
	case singular == q.name:
		return bySingular
	case slices.Contains(r.ShortNames, q.name):
		return byShortName
	case strings.ToLower(r.Kind) == q.name:
		return byKind
	}
	return noMatch
}

// cmpOrLower returns s, or lower-case def when s is empty (the singular
// name of a resource whose discovery gives none is its kind, lower-case).
func cmpOrLower(s, def string) string {
	if s != "" {
		return s
	}
	return strings.ToLower(def)
}

// Resolve finds the resource a user means by arg, as kubectl resolves
// names: the plural, singular or short name or the kind, case-insensitive,
// optionally qualified as name.group or name.version.group. A plural name
// wins over a singular, a singular over a short name, a short name over a
// kind; among equals, the core group and then the server's order of groups
// and versions decide.
func (rs APIResources) Resolve(arg string) (APIResource, error) {
	for _, q := range queries(arg) {
		best, bestRank := -1, noMatch
		for i := range rs {
			if r := q.rank(&rs[i]); r < bestRank {
				best, bestRank = i, r
			}
		}
		if best >= 0 {
			return rs[best], nil
		}
	}
	return APIResource{}, fmt.Errorf("the server doesn't have a resource type %q", arg)
}

// ForKind finds the resource whose objects have apiVersion and kind.
func (rs APIResources) ForKind(apiVersion, kind string) (APIResource, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	for _, r := range rs {
		if r.Group == group && r.Version == version && r.Kind == kind {
			return r, nil
		}
	}
	return APIResource{}, fmt.Errorf("no matches for kind %q in version %q", kind, apiVersion)
}
