package plugins

import (
	"context"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// The classes the default class plugins read.
var (
	StorageClasses = Ref{Group: "storage.k8s.io", Version: "v1", Plural: "storageclasses"}
	IngressClasses = Ref{Group: "networking.k8s.io", Version: "v1", Plural: "ingressclasses"}
)

// defaultClass is kube's DefaultStorageClass and DefaultIngressClass
// plugins: a new object of the resource that names no class (in its spec
// field or its annotation) gets the default class, the newest one
// annotated as it (by name among those made in the same second), if any.
type defaultClass struct {
	src              Source
	group, plural    string
	field            string // the spec field naming the class
	annotation       string // the object's annotation naming the class
	classes          Ref
	isDefaultAnnotes []string // an annotation "true" on a class makes it a default
}

func newDefaultStorageClass(src Source) *defaultClass {
	return &defaultClass{src: src, plural: "persistentvolumeclaims", field: "storageClassName",
		annotation: "volume.beta.kubernetes.io/storage-class", classes: StorageClasses,
		isDefaultAnnotes: []string{"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"}}
}

func newDefaultIngressClass(src Source) *defaultClass {
	return &defaultClass{src: src, group: "networking.k8s.io", plural: "ingresses", field: "ingressClassName",
		annotation: "kubernetes.io/ingress.class", classes: IngressClasses,
		isDefaultAnnotes: []string{"ingressclass.kubernetes.io/is-default-class"}}
}

func (p *defaultClass) admit(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Create || a.Resource.Group != p.group || a.Resource.Resource != p.plural || a.Subresource != "" {
		return nil
	}
	spec, _ := a.Object["spec"].(map[string]any)
	if _, named := a.Object.Annotations()[p.annotation]; named || spec == nil || spec[p.field] != nil {
		return nil
	}
	classes, err := p.src.List(ctx, p.classes, "")
	if err != nil {
		return Forbidden(a, err.Error())
	}
	var defaults []api.Object
	for _, c := range classes {
		if slices.ContainsFunc(p.isDefaultAnnotes, func(k string) bool { return c.Annotations()[k] == "true" }) {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	// Newest first; creationTimestamps are RFC 3339 in UTC, ordered as
	// strings.
	newest := slices.MinFunc(defaults, func(x, y api.Object) int {
		if c := strings.Compare(y.MetaString("creationTimestamp"), x.MetaString("creationTimestamp")); c != 0 {
			return c
		}
		return strings.Compare(x.Name(), y.Name())
	})
	spec[p.field] = newest.Name()
	return nil
}

func (p *defaultClass) validate(context.Context, *webhook.Attributes) error { return nil }
