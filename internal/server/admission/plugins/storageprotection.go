package plugins

import (
	"context"
	"slices"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// protectionFinalizers are the finalizers StorageObjectInUseProtection
// puts on each new object it protects, by group and plural (kube's
// pkg/volume/util/finalizer.go). VolumeAttributesClasses are protected as
// their gate, VolumeAttributesClass, is on (GA since 1.34).
var protectionFinalizers = map[[2]string]string{
	{"", "persistentvolumeclaims"}:                "kubernetes.io/pvc-protection",
	{"", "persistentvolumes"}:                     "kubernetes.io/pv-protection",
	{"storage.k8s.io", "volumeattributesclasses"}: "kubernetes.io/vac-protection",
}

// storageProtection is kube's StorageObjectInUseProtection plugin: a new
// claim, volume or volume attributes class gets its protection finalizer,
// which kube's protection controllers remove once nothing uses it.
type storageProtection struct{}

func (storageProtection) admit(_ context.Context, a *webhook.Attributes) error {
	finalizer, ok := protectionFinalizers[[2]string{a.Resource.Group, a.Resource.Resource}]
	if !ok || a.Operation != webhook.Create || a.Subresource != "" {
		return nil
	}
	meta := a.Object.EnsureMetadata()
	finalizers, _ := meta["finalizers"].([]any)
	if slices.Contains(finalizers, any(finalizer)) {
		return nil
	}
	meta["finalizers"] = append(finalizers, finalizer)
	return nil
}

func (storageProtection) validate(context.Context, *webhook.Attributes) error { return nil }
