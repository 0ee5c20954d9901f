package server

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// serveDiscovery answers /api, /apis, /api/v1, /apis/<g> and /apis/<g>/<v>.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, info requestInfo) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, apierror.MethodNotAllowed(r.Method, r.URL.Path))
		return
	}
	groups := s.groups()
	core := info.Prefix == "api"
	switch len(info.Parts) {
	case 0:
		s.serveRoot(w, r, groups, core)
	case 1:
		if core {
			s.serveResourceList(w, groups, "", info.Parts[0])
			return
		}
		g, ok := findGroup(groups, info.Parts[0])
		if !ok {
			writeError(w, notFoundPath())
			return
		}
		writeJSON(w, http.StatusOK, mediaJSON, apiGroup(g))
	case 2:
		s.serveResourceList(w, groups, info.Parts[0], info.Parts[1])
	default:
		writeError(w, notFoundPath())
	}
}

// group is one API group and its versions, preferred first.
type group struct {
	name     string
	versions []version
}

type version struct {
	name      string
	resources []*resource.Resource
}

// groups arranges the catalogue into groups: core first, then the built-in
// groups in kube-apiserver's order (by their discovery priority: kubectl
// prefers a resource of an earlier group when a name is ambiguous), then
// the others (custom resources', priority 1000 in kube) by name.
func (s *Server) groups() []group {
	var out []group
	for _, r := range s.catalog.All() {
		i := slices.IndexFunc(out, func(g group) bool { return g.name == r.Group })
		if i < 0 {
			out = append(out, group{name: r.Group})
			i = len(out) - 1
		}
		g := &out[i]
		j := slices.IndexFunc(g.versions, func(v version) bool { return v.name == r.Version })
		if j < 0 {
			g.versions = append(g.versions, version{name: r.Version})
			j = len(g.versions) - 1
		}
		g.versions[j].resources = append(g.versions[j].resources, r)
	}
	for i := range out {
		slices.SortFunc(out[i].versions, func(a, b version) int { return compareVersions(a.name, b.name) })
	}
	slices.SortFunc(out, func(a, b group) int {
		if c := cmp.Compare(groupRank(a.name), groupRank(b.name)); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	return out
}

// builtinGroups rank kube's groups: core 0, the others from 1 in
// kube-apiserver's order.
var builtinGroups = sync.OnceValue(func() map[string]int {
	rank := map[string]int{"": 0}
	for i, g := range kubespec.Load().Groups {
		rank[g] = i + 1
	}
	return rank
})

// groupRank places a group: kube's in their order, the rest after them.
func groupRank(name string) int {
	if r, ok := builtinGroups()[name]; ok {
		return r
	}
	return math.MaxInt
}

func findGroup(groups []group, name string) (group, bool) {
	i := slices.IndexFunc(groups, func(g group) bool { return g.name == name })
	if i < 0 {
		return group{}, false
	}
	return groups[i], true
}

var kubeVersion = regexp.MustCompile(`^v(\d+)(?:(alpha|beta)(\d+))?$`)

// compareVersions orders versions as Kubernetes prefers them: GA before beta
// before alpha, higher numbers first, other names last in alphabetical order.
func compareVersions(a, b string) int {
	ka, kb := versionKey(a), versionKey(b)
	if c := cmp.Compare(kb.rank, ka.rank); c != 0 {
		return c
	}
	if c := cmp.Compare(kb.major, ka.major); c != 0 {
		return c
	}
	if c := cmp.Compare(kb.minor, ka.minor); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

type versionOrder struct{ rank, major, minor int }

func versionKey(v string) versionOrder {
	m := kubeVersion.FindStringSubmatch(v)
	if m == nil {
		return versionOrder{}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[3])
	rank := map[string]int{"": 3, "beta": 2, "alpha": 1}[m[2]]
	return versionOrder{rank: rank, major: major, minor: minor}
}

// serveRoot answers /api or /apis, in aggregated form when the client asks for it.
func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request, groups []group, core bool) {
	out, ok := negotiate(r.Header.Get("Accept"), false, func(as, g, v string) bool {
		return as == "APIGroupDiscoveryList" && g == "apidiscovery.k8s.io" && (v == "v2" || v == "v2beta1")
	})
	if !ok {
		writeError(w, apierror.NotAcceptable([]string{mediaJSON}))
		return
	}
	if out.as == "APIGroupDiscoveryList" {
		s.serveAggregated(w, r, groups, core, discoveryVersion(r.Header.Get("Accept")))
		return
	}
	if core {
		writeJSON(w, http.StatusOK, mediaJSON, api.APIVersions{
			TypeMeta: api.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []api.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
		return
	}
	list := api.APIGroupList{TypeMeta: api.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []api.APIGroup{}}
	for _, g := range groups {
		if g.name != "" {
			list.Groups = append(list.Groups, apiGroup(g))
		}
	}
	writeJSON(w, http.StatusOK, mediaJSON, list)
}

// discoveryVersion is the aggregated discovery version the client listed first.
func discoveryVersion(accept string) string {
	for _, m := range parseAccept(accept) {
		if m.params["as"] == "APIGroupDiscoveryList" && (m.params["v"] == "v2" || m.params["v"] == "v2beta1") {
			return m.params["v"]
		}
	}
	return "v2"
}

func apiGroup(g group) api.APIGroup {
	out := api.APIGroup{TypeMeta: api.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.name}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, api.GroupVersionForDiscovery{GroupVersion: g.name + "/" + v.name, Version: v.name})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}

// serveResourceList answers /api/v1 and /apis/<g>/<v>.
func (s *Server) serveResourceList(w http.ResponseWriter, groups []group, groupName, versionName string) {
	g, ok := findGroup(groups, groupName)
	i := slices.IndexFunc(g.versions, func(v version) bool { return v.name == versionName })
	if !ok || i < 0 {
		writeError(w, notFoundPath())
		return
	}
	gv := versionName
	if groupName != "" {
		gv = groupName + "/" + versionName
	}
	list := api.APIResourceList{TypeMeta: api.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, r := range g.versions[i].resources {
		list.APIResources = append(list.APIResources, api.APIResource{
			Name: r.Plural, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: r.ServedVerbs(), ShortNames: r.ShortNames, Categories: r.Categories,
			StorageVersionHash: r.StorageVersionHash,
		})
		subs := len(list.APIResources)
		for _, part := range partNames(r) {
			list.APIResources = append(list.APIResources, api.APIResource{
				Name: r.Plural + "/" + part, Namespaced: r.Namespaced, Kind: r.Kind, Verbs: r.PartVerbs(part),
			})
		}
		for _, sub := range r.Subresources {
			list.APIResources = append(list.APIResources, api.APIResource{
				Name: r.Plural + "/" + sub.Name, Namespaced: r.Namespaced, Group: sub.Group, Version: sub.Version, Kind: sub.Kind, Verbs: sub.Verbs,
			})
		}
		if r.Definition != "" { // kube lists a built-in's subresources by name
			slices.SortFunc(list.APIResources[subs:], func(a, b api.APIResource) int { return cmp.Compare(a.Name, b.Name) })
		}
	}
	writeJSON(w, http.StatusOK, mediaJSON, list)
}

// serveAggregated answers /api or /apis with aggregated discovery, with an
// ETag so clients can revalidate cheaply (304).
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, groups []group, core bool, v string) {
	list := api.APIGroupDiscoveryList{TypeMeta: api.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + v}, Items: []api.APIGroupDiscovery{}}
	for _, g := range groups {
		if (g.name == "") == core {
			list.Items = append(list.Items, groupDiscovery(g))
		}
	}
	body, err := json.Marshal(list)
	if err != nil {
		writeError(w, apierror.Internal(err))
		return
	}
	etag := fmt.Sprintf(`"%X"`, sha256.Sum256(body))
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public")
	h.Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

func groupDiscovery(g group) api.APIGroupDiscovery {
	out := api.APIGroupDiscovery{ObjectMeta: api.ObjectMeta{Name: g.name}}
	for _, v := range g.versions {
		vd := api.APIVersionDiscovery{Version: v.name, Freshness: "Current"}
		for _, r := range v.resources {
			vd.Resources = append(vd.Resources, resourceDiscovery(r))
		}
		out.Versions = append(out.Versions, vd)
	}
	return out
}

// partNames are the subresources that write a part of r's objects: status
// and r's Parts, sorted.
func partNames(r *resource.Resource) []string {
	var names []string
	if r.StatusSubresource {
		names = append(names, "status")
	}
	for name := range r.Parts {
		if name != "status" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func resourceDiscovery(r *resource.Resource) api.APIResourceDiscovery {
	scope := "Cluster"
	if r.Namespaced {
		scope = "Namespaced"
	}
	gvk := &api.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	d := api.APIResourceDiscovery{
		Resource: r.Plural, ResponseKind: gvk, Scope: scope, SingularResource: r.Singular,
		Verbs: r.ServedVerbs(), ShortNames: r.ShortNames, Categories: r.Categories,
	}
	for _, part := range partNames(r) {
		d.Subresources = append(d.Subresources, api.APISubresourceDiscovery{Subresource: part, ResponseKind: gvk, Verbs: r.PartVerbs(part)})
	}
	for _, sub := range r.Subresources {
		d.Subresources = append(d.Subresources, api.APISubresourceDiscovery{
			Subresource: sub.Name, ResponseKind: &api.GroupVersionKind{Group: sub.Group, Version: sub.Version, Kind: sub.Kind}, Verbs: sub.Verbs,
		})
	}
	if r.Definition != "" {
		slices.SortFunc(d.Subresources, func(a, b api.APISubresourceDiscovery) int { return cmp.Compare(a.Subresource, b.Subresource) })
	}
	return d
}
