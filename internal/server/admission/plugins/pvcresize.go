package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// storageClassAnnotation names a claim's class before its spec field, as
// kube's GetPersistentVolumeClaimClass reads it.
const storageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// claimResize is kube's PersistentVolumeClaimResize plugin: an update
// growing a claim's storage request is refused unless the claim is bound
// and its class, unchanged, allows volume expansion.
type claimResize struct{ src Source }

func (*claimResize) admit(context.Context, *webhook.Attributes) error { return nil }

func (p *claimResize) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Update || a.Resource.Group != "" || a.Resource.Resource != "persistentvolumeclaims" ||
		a.Subresource != "" || a.OldObject == nil {
		return nil
	}
	size, old := storageRequest(a.Object), storageRequest(a.OldObject)
	if size.Cmp(old) <= 0 {
		return nil
	}
	status, _ := a.OldObject["status"].(map[string]any)
	if str(status, "phase") != "Bound" {
		return Forbidden(a, "Only bound persistent volume claims can be expanded")
	}
	if !p.allowed(ctx, a) {
		return Forbidden(a, "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")
	}
	return nil
}

// allowed says whether the claim's class, the same before and after,
// allows volume expansion; a class that cannot be read does not.
func (p *claimResize) allowed(ctx context.Context, a *webhook.Attributes) bool {
	class := claimClass(a.Object)
	if class == "" || class != claimClass(a.OldObject) {
		return false
	}
	sc, err := p.src.Get(ctx, StorageClasses, "", class)
	if sc == nil || err != nil {
		return false
	}
	allow, _ := sc["allowVolumeExpansion"].(bool)
	return allow
}

// storageRequest is a claim's spec.resources.requests.storage, zero when
// it has none.
func storageRequest(claim api.Object) resource.Quantity {
	spec, _ := claim["spec"].(map[string]any)
	resources, _ := spec["resources"].(map[string]any)
	return quota.Read(resources, "requests")["storage"]
}

// claimClass is the class a claim names: its annotation, else its spec's
// storageClassName.
func claimClass(claim api.Object) string {
	if class, ok := claim.Annotations()[storageClassAnnotation]; ok {
		return class
	}
	spec, _ := claim["spec"].(map[string]any)
	return str(spec, "storageClassName")
}
