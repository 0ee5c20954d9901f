// Package plugins is kube-apiserver's built-in admission plugins that
// change or refuse what users write without a controller behind them, in
// kube's order (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go,
// AllOrderedPlugins): LimitRanger, ServiceAccount, TaintNodesByCondition, PodSecurity, Priority,
// DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection,
// PersistentVolumeClaimResize, RuntimeClass, the certificate plugins
// (CertificateApproval, CertificateSigning, ClusterTrustBundleAttest,
// CertificateSubjectRestriction), DefaultIngressClass, PodTopologyLabels and
// PodResizeValidator (plugin/pkg/admission/*), with kube's messages.
//
// Each plugin has a mutating half (Chain.Mutate), which the server runs
// before the mutating policies and webhooks, and once more with them when
// they changed the object, as kube's reinvoker runs every in-tree plugin
// again; and a validating half (Chain.Validate), run in the registry's
// admission step, after its validation and before the validating policies
// and webhooks. Objects are the JSON forms of the v1 kinds, defaulted;
// fields of the wrong type are left to validation.
//
// # Caveats
//
// The plugins read accounts and classes through a Source
// (the server's watch caches, else the store), as kube's read listers: a
// class made a default a moment ago may not be seen yet, as in kube.
package plugins

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	psa "github.com/listwatch/listwatch/internal/server/admission/podsecurity"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Ref names a resource the plugins read.
type Ref struct{ Group, Version, Plural string }

// The resources the plugins read.
var (
	ServiceAccounts = Ref{Version: "v1", Plural: "serviceaccounts"}
	PriorityClasses = Ref{Group: "scheduling.k8s.io", Version: "v1", Plural: "priorityclasses"}
)

// Source reads the objects the plugins decide by.
type Source interface {
	// Get returns the object, or nil when there is none. The objects Get
	// and List return may be shared, as kube's listers' are: read them only.
	Get(ctx context.Context, r Ref, namespace, name string) (api.Object, error)
	// List returns the objects of a resource in a namespace ("": all).
	List(ctx context.Context, r Ref, namespace string) ([]api.Object, error)
	// NamespaceLabels returns a namespace's labels; an error if it
	// cannot be read.
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// plugin is one of kube's admission plugins.
type plugin interface {
	admit(ctx context.Context, a *webhook.Attributes) error
	validate(ctx context.Context, a *webhook.Attributes) error
}

// Chain runs the plugins in kube's order.
type Chain struct {
	plugins []plugin
}

var _ webhook.Mutator = (*Chain)(nil)

// New returns the plugins reading from src, PodSecurity with ps (nil:
// kube's defaults).
func New(src Source, ps *psa.Config) *Chain {
	return &Chain{plugins: []plugin{
		&limitRanger{src: src},
		&serviceAccount{src: src, generateName: generateName},
		nodeTaint{},
		newPodSecurity(src, ps),
		&priority{src: src},
		defaultTolerations{},
		newDefaultStorageClass(src),
		storageProtection{},
		&claimResize{src: src},
		&runtimeClass{src: src},
		certificates{},
		newDefaultIngressClass(src),
		&podTopology{src: src},
		&podResize{src: src},
	}}
}

// handled are the resources (group and plural) whose writes the plugins
// act on.
var handled = map[[2]string]bool{
	{"", "pods"}: true, {PriorityClasses.Group, PriorityClasses.Plural}: true,
	{"", "persistentvolumeclaims"}: true, {"networking.k8s.io", "ingresses"}: true, {"", "nodes"}: true,
	{"", "namespaces"}: true, {"", "persistentvolumes"}: true, {"storage.k8s.io", "volumeattributesclasses"}: true,
}

// handledSubresources are the subresources whose writes the plugins act
// on: a pod's binding, a CSR's approval and status.
var handledSubresources = map[[3]string]bool{
	{"", "pods", "binding"}:               true,
	{certificatesGroup, csrs, "approval"}: true, {certificatesGroup, csrs, "status"}: true,
}

func init() {
	for gr := range podTemplatePaths {
		handled[gr] = true
	}
}

// Handles says whether a write of the resource may meet a plugin: the
// plugins act on nothing else, so the server skips them for the rest.
func Handles(group, plural string) bool { return handled[[2]string{group, plural}] }

// HandlesWrite says whether a write of the resource, or of its subresource
// sub ("": none), may meet a plugin.
func HandlesWrite(group, plural, sub string) bool {
	if sub != "" {
		return handledSubresources[[3]string{group, plural, sub}]
	}
	return Handles(group, plural)
}

// Mutate runs each plugin's mutating half on a.Object, changing it in
// place. It never reports a change: kube's in-tree plugins never ask the
// chain for a second round, but run in it when a webhook or policy did.
func (c *Chain) Mutate(ctx context.Context, a *webhook.Attributes, _ *webhook.Reinvocation) (bool, error) {
	if a.Object == nil || !HandlesWrite(a.Resource.Group, a.Resource.Resource, a.Subresource) {
		return false, nil
	}
	for _, p := range c.plugins {
		if err := p.admit(ctx, a); err != nil {
			return false, err
		}
	}
	return false, nil
}

// Validate runs each plugin's validating half; the first refusal is the
// answer.
func (c *Chain) Validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Object == nil || !HandlesWrite(a.Resource.Group, a.Resource.Resource, a.Subresource) {
		return nil
	}
	for _, p := range c.plugins {
		if err := p.validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Forbidden is kube's admission.NewForbidden: the object named by the
// request, else by its name or generateName, else "Unknown".
func Forbidden(a *webhook.Attributes, why string) error {
	name := a.Name
	if name == "" {
		name = "Unknown"
		if n := a.Object.Name(); n != "" {
			name = n
		} else if g := a.Object.MetaString("generateName"); g != "" {
			name = g
		}
	}
	return apierror.ForbiddenTo(apierror.Target{Group: a.Resource.Group, Resource: a.Resource.Resource, Name: name}, why)
}

// podSpec is the spec of the pod a writes, nil unless a writes a pod
// itself (not a subresource) with a spec.
func podSpec(a *webhook.Attributes) map[string]any {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "" || a.Object == nil {
		return nil
	}
	spec, _ := a.Object["spec"].(map[string]any)
	return spec
}

// str reads a string field; anything else reads as "".
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// objects are the objects of the list m[key]; what is not an object is
// skipped.
func objects(m map[string]any, key string) []map[string]any {
	l, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		if e, ok := e.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}

// integer reads an integer field: a json.Number in an object read from
// JSON, a float64 in one read from protobuf.
func integer(m map[string]any, key string) (int64, bool) {
	switch n := m[key].(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), float64(int64(n)) == n
	}
	return 0, false
}

// number is n as the JSON number decoded objects hold.
func number(n int64) json.Number { return json.Number(fmt.Sprint(n)) }
