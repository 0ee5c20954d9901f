package client

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Check compares r with what the server serves, rs (from Discover), so
// that a mistake fails early and clearly rather than as objects that
// decode to zero values: gvr must be served, a namespace is an error for a
// cluster-scoped resource, and when T is one of kube's API types (of
// k8s.io/api, apiextensions-apiserver or kube-aggregator), the served kind
// must be T's (an object of *corev1.Pod read from configmaps, or
// core/v1's Event from events.k8s.io, is an error). Other types (a
// program's own, Unstructured, PartialObjectMetadata) fit any kind.
func (r *Resource[T]) Check(rs APIResources) error {
	i := slices.IndexFunc(rs, func(a APIResource) bool { return a.GroupVersionResource == r.gvr })
	if i < 0 {
		return fmt.Errorf("the server does not serve %s", r.gvr)
	}
	served := rs[i]
	if r.namespace != "" && !served.Namespaced {
		return fmt.Errorf("%s is cluster-scoped: it has no namespace %q", r.gvr, r.namespace)
	}
	t := reflect.TypeFor[T]()
	label, _, _ := strings.Cut(r.gvr.Group, ".")
	if group, version, kind, ok := kubeTypeKind(t); ok && (kind != served.Kind || version != r.gvr.Version || group != label) {
		return fmt.Errorf("%s holds %s objects of %s, not %v", r.gvr, served.Kind, r.gvr.GroupVersion(), t)
	}
	return nil
}

// kubeAPIPackages hold kube's API types, a package per group version
// named <group>/<version> below these roots.
var kubeAPIPackages = []string{"k8s.io/api/", "k8s.io/apiextensions-apiserver/pkg/apis/", "k8s.io/kube-aggregator/pkg/apis/"}

var kubeVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// kubeTypeKind returns the first label of the group, the version and the
// kind of one of kube's API types (a struct or a pointer to one), ok false
// for any other type. Kube registers each type under its Go name as its
// kind (apimachinery's Scheme.AddKnownTypes), and each package's group
// (GroupName in its register.go) begins with its directory's name, but
// for core's ("") and apiserverinternal's (internal.apiserver.k8s.io).
func kubeTypeKind(t reflect.Type) (groupLabel, version, kind string, ok bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "", "", "", false
	}
	for _, root := range kubeAPIPackages {
		rest, found := strings.CutPrefix(t.PkgPath(), root)
		dir, version, two := strings.Cut(rest, "/")
		if !found || !two || !kubeVersion.MatchString(version) {
			continue
		}
		switch dir {
		case "core":
			dir = ""
		case "apiserverinternal":
			dir = "internal"
		}
		return dir, version, t.Name(), true
	}
	return "", "", "", false
}
