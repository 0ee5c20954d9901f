package plugins

import (
	"context"
	"slices"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// The protection finalizers (kube's pkg/volume/util/finalizer.go), which
// the server's protection controllers remove.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
	VACProtectionFinalizer = "kubernetes.io/vac-protection"
)

// protectionFinalizers are the finalizers StorageObjectInUseProtection
// puts on each new object it protects, by group and plural.
// VolumeAttributesClasses are protected as their gate,
// VolumeAttributesClass, is on (GA since 1.34).
var protectionFinalizers = map[[2]string]string{
	{"", "persistentvolumeclaims"}:                PVCProtectionFinalizer,
	{"", "persistentvolumes"}:                     PVProtectionFinalizer,
	{"storage.k8s.io", "volumeattributesclasses"}: VACProtectionFinalizer,
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
