package resource

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/kubespec"
)

// servedSubresources are the subresources the server serves for built-ins,
// by name: status (StatusSubresource), serviceaccounts/token when the
// server issues tokens, pods/binding (internal/server/binding.go) and
// pods/eviction (internal/server/eviction.go);
// scale is served where the Resource has Scale.
var servedSubresources = []string{"status", "token", "binding", "eviction"}

// Every resource kube 1.37 serves by default is served, named as kube's
// discovery names it, or listed as not served; what is not served is in
// docs/ARCHITECTURE.md, subresources too.
func TestBuiltinsAreKubesDefaults(t *testing.T) {
	served := map[GVR]*Resource{}
	for _, r := range Builtins() {
		served[gvrOf(r)] = r
	}
	doc, err := os.ReadFile("../../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := func(name string) bool { return strings.Contains(string(doc), "`"+name+"`") }
	kube := 0
	kubeScales := map[GVR]bool{}
	for _, list := range kubespec.Load().GroupVersions {
		group, version := splitGroupVersion(list.GroupVersion)
		for _, d := range list.APIResources {
			plural, sub, isSub := strings.Cut(d.Name, "/")
			if isSub {
				gvr := GVR{group, version, plural}
				kubeScales[gvr] = kubeScales[gvr] || sub == "scale"
				scale := sub == "scale" && served[gvr] != nil && served[gvr].Scale != nil
				part := served[gvr] != nil && served[gvr].WritesPart(sub)
				if !scale && !part && !slices.Contains(servedSubresources, sub) && !documented(d.Name) {
					t.Errorf("%s %s: neither served nor documented as not served", list.GroupVersion, d.Name)
				}
				continue
			}
			kube++
			gvr := GVR{group, version, plural}
			r, ok := served[gvr]
			if _, not := NotServed[gvr]; not {
				if ok || !documented(plural) {
					t.Errorf("%v: listed as not served, served %v, documented %v", gvr, ok, documented(plural))
				}
				continue
			}
			if !ok {
				t.Errorf("%v: not served", gvr)
				continue
			}
			if r.Kind != d.Kind || r.Singular != d.SingularName || r.Namespaced != d.Namespaced ||
				!slices.Equal(r.ShortNames, d.ShortNames) || !slices.Equal(r.Categories, d.Categories) || !slices.Equal(r.ServedVerbs(), d.Verbs) {
				t.Errorf("%v: served as %s %s namespaced=%v %v %v %v, kube's discovery says %+v", gvr, r.Kind, r.Singular, r.Namespaced, r.ShortNames, r.Categories, r.ServedVerbs(), d)
			}
			if r.Definition == "" || kubespec.Schema(r.Definition) == nil {
				t.Errorf("%v: no schema (definition %q)", gvr, r.Definition)
			}
		}
	}
	for gvr, r := range served {
		if r.Scale != nil && !kubeScales[gvr] {
			t.Errorf("%v: serves scale, which kube has not", gvr)
		}
	}
	if len(served)+len(NotServed) != kube {
		t.Errorf("%d served and %d not, of kube's %d", len(served), len(NotServed), kube)
	}
}

// The Go behaviours are keyed by resources kube serves: a typo would leave
// one unused.
func TestBehavioursAreServed(t *testing.T) {
	served := map[GVR]bool{}
	for _, r := range Builtins() {
		served[gvrOf(r)] = true
	}
	for _, r := range behaviours() {
		if !served[gvrOf(r)] {
			t.Errorf("behaviour of %v, which is not served", gvrOf(r))
		}
	}
	for gvr := range strategies {
		if !served[gvr] {
			t.Errorf("strategy of %v, which is not served", gvr)
		}
	}
	for gvr := range generation {
		if !served[gvr] {
			t.Errorf("generation of %v, which is not served", gvr)
		}
	}
}

// StorageVersionHash computes the hash kube publishes: for every built-in
// stored as its own version, it is the one kube's discovery documents
// carry. The others are stored as another version's kind (an earlier
// version of a kind new to GA, autoscaling/v2, core Events); the reviews,
// never stored, have none.
func TestStorageVersionHashAsKube(t *testing.T) {
	storedElsewhere := map[GVR]bool{
		{"apiextensions.k8s.io", "v1", "customresourcedefinitions"}:   true,
		{"autoscaling", "v1", "horizontalpodautoscalers"}:             true,
		{"certificates.k8s.io", "v1", "clustertrustbundles"}:          true,
		{"certificates.k8s.io", "v1", "podcertificaterequests"}:       true,
		{"events.k8s.io", "v1", "events"}:                             true,
		{"resource.k8s.io", "v1", "devicetaintrules"}:                 true,
		{"storagemigration.k8s.io", "v1", "storageversionmigrations"}: true,
	}
	for _, r := range Builtins() {
		own := StorageVersionHash(r.Group, r.Version, r.Kind) == r.StorageVersionHash
		switch {
		case r.CreateOnly:
			if r.StorageVersionHash != "" {
				t.Errorf("%v, never stored, has storageVersionHash %q", gvrOf(r), r.StorageVersionHash)
			}
		case own == storedElsewhere[gvrOf(r)]:
			t.Errorf("%v: storageVersionHash %q, computed for its own kind %q", gvrOf(r), r.StorageVersionHash, StorageVersionHash(r.Group, r.Version, r.Kind))
		}
	}
}
