package plugins

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

func TestStorageProtection(t *testing.T) {
	tests := []struct{ name, group, plural, sub, op, obj, want string }{
		{"claim", "", "persistentvolumeclaims", "", webhook.Create, `{"spec": {}}`,
			`{"metadata": {"finalizers": ["kubernetes.io/pvc-protection"]}, "spec": {}}`},
		{"volume after its own finalizer", "", "persistentvolumes", "", webhook.Create, `{"metadata": {"finalizers": ["example.com/keep"]}}`,
			`{"metadata": {"finalizers": ["example.com/keep", "kubernetes.io/pv-protection"]}}`},
		{"attributes class", "storage.k8s.io", "volumeattributesclasses", "", webhook.Create, `{"driverName": "d"}`,
			`{"metadata": {"finalizers": ["kubernetes.io/vac-protection"]}, "driverName": "d"}`},
		{"finalizer there already", "", "persistentvolumeclaims", "", webhook.Create, `{"metadata": {"finalizers": ["kubernetes.io/pvc-protection", "x.io/y"]}}`,
			`{"metadata": {"finalizers": ["kubernetes.io/pvc-protection", "x.io/y"]}}`},
		{"update", "", "persistentvolumeclaims", "", webhook.Update, `{"metadata": {}}`, `{"metadata": {}}`},
		{"status", "", "persistentvolumes", "status", webhook.Create, `{"metadata": {}}`, `{"metadata": {}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: tt.op, Resource: webhook.GVR{Group: tt.group, Version: "v1", Resource: tt.plural},
				Subresource: tt.sub, Object: parse(t, tt.obj), OldObject: parse(t, tt.obj)}
			if err := (storageProtection{}).admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(parse(t, tt.want), a.Object); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestClaimResize(t *testing.T) {
	src := source{StorageClasses: {
		"/grows": parse(t, `{"metadata": {"name": "grows"}, "allowVolumeExpansion": true}`),
		"/fixed": parse(t, `{"metadata": {"name": "fixed"}, "allowVolumeExpansion": false}`),
		"/plain": parse(t, `{"metadata": {"name": "plain"}}`),
	}}
	claim := func(class, storage, phase string) string {
		return `{"metadata": {"name": "c"}, "spec": {"storageClassName": "` + class + `", "resources": {"requests": {"storage": "` +
			storage + `"}}}, "status": {"phase": "` + phase + `"}}`
	}
	const (
		unbound = `persistentvolumeclaims "c" is forbidden: Only bound persistent volume claims can be expanded`
		fixed   = `persistentvolumeclaims "c" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	)
	tests := []struct{ name, old, obj, refused string }{
		{"grown, class allows", claim("grows", "1Gi", "Bound"), claim("grows", "2Gi", "Bound"), ""},
		{"same size in other units", claim("fixed", "1Gi", "Bound"), claim("fixed", "1024Mi", "Bound"), ""},
		{"shrunk", claim("fixed", "2Gi", "Bound"), claim("fixed", "1Gi", "Bound"), ""},
		{"grown, unbound", claim("grows", "1Gi", "Pending"), claim("grows", "2Gi", "Bound"), unbound},
		{"grown, class forbids", claim("fixed", "1Gi", "Bound"), claim("fixed", "2Gi", "Bound"), fixed},
		{"grown, class silent", claim("plain", "1Gi", "Bound"), claim("plain", "2Gi", "Bound"), fixed},
		{"grown, class missing", claim("gone", "1Gi", "Bound"), claim("gone", "2Gi", "Bound"), fixed},
		{"grown, no class", claim("", "1Gi", "Bound"), claim("", "2Gi", "Bound"), fixed},
		{"grown, class changed", claim("plain", "1Gi", "Bound"), claim("grows", "2Gi", "Bound"), fixed},
		{"grown from nothing", `{"metadata": {"name": "c"}, "spec": {"storageClassName": "fixed"}, "status": {"phase": "Bound"}}`,
			claim("fixed", "1Gi", "Bound"), fixed},
		{"annotation names the class", `{"metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "grows"}},
			"spec": {"storageClassName": "fixed", "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}}`,
			`{"metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "grows"}},
			"spec": {"storageClassName": "fixed", "resources": {"requests": {"storage": "2Gi"}}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: webhook.Update, Resource: webhook.GVR{Version: "v1", Resource: "persistentvolumeclaims"},
				Namespace: "ns", Name: "c", Object: parse(t, tt.obj), OldObject: parse(t, tt.old)}
			err := chain(src).Validate(context.Background(), a)
			if tt.refused == "" && err != nil || tt.refused != "" && (err == nil || err.Error() != tt.refused) {
				t.Errorf("got %v, want %q", err, tt.refused)
			}
		})
	}
}
