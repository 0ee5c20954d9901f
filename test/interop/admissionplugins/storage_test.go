package admissionplugins

import (
	"fmt"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// claim is a claim of 1Gi of class (nil: none), the class annotated
// instead when annotation is not "".
func claim(name string, class *string, annotation string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if annotation != "" {
		c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: annotation}
	}
	return c
}

// TestStorageProtectionAsKubesPlugin creates claims, volumes and volume
// attributes classes on the binary and compares their finalizers with
// what kube's StorageObjectInUseProtection makes of them.
func TestStorageProtectionAsKubesPlugin(t *testing.T) {
	cs := start(t)
	own := []string{"example.com/keep"}
	claimed := claim("own-finalizer", nil, "")
	claimed.Finalizers = own
	claimMeta := func(c *corev1.PersistentVolumeClaim) any { return []any{c.Finalizers, c.Spec} }
	compare(t, cs, claim("plain", nil, ""), cs.CoreV1().PersistentVolumeClaims(ns), claimMeta)
	compare(t, cs, claimed, cs.CoreV1().PersistentVolumeClaims(ns), claimMeta)

	volume := func(name string, finalizers []string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		}}
	}
	volumeMeta := func(v *corev1.PersistentVolume) any { return []any{v.Finalizers, v.Spec} }
	compare(t, cs, volume("pv-plain", nil), cs.CoreV1().PersistentVolumes(), volumeMeta)
	compare(t, cs, volume("pv-own", own), cs.CoreV1().PersistentVolumes(), volumeMeta)
	compare(t, cs, volume("pv-protected", []string{"kubernetes.io/pv-protection"}), cs.CoreV1().PersistentVolumes(), volumeMeta)

	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "example.com/csi", Parameters: map[string]string{"iops": "100"}}
	compare(t, cs, vac, cs.StorageV1().VolumeAttributesClasses(), func(c *storagev1.VolumeAttributesClass) any { return []any{c.Finalizers, c.Parameters} })
}

// TestClaimResizeAsKubesPlugin grows bound claims on the binary and
// through kube's PersistentVolumeClaimResize, fed the binary's classes,
// and compares the refusals, or the stored specs.
func TestClaimResizeAsKubesPlugin(t *testing.T) {
	cs := start(t)
	for name, allow := range map[string]*bool{"grows": ptr.To(true), "fixed": ptr.To(false), "plain": nil} {
		createCached(t, cs.StorageV1().StorageClasses(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Provisioner: "example.com/p", AllowVolumeExpansion: allow})
	}
	claims := cs.CoreV1().PersistentVolumeClaims(ns)
	for _, tc := range []struct {
		name, size string
		claim      *corev1.PersistentVolumeClaim
	}{
		{"grows", "2Gi", claim("grows", ptr.To("grows"), "")},
		{"fixed", "2Gi", claim("fixed", ptr.To("fixed"), "")},
		{"plain", "2Gi", claim("plain", ptr.To("plain"), "")},
		{"missing-class", "2Gi", claim("missing-class", ptr.To("gone"), "")},
		{"no-class", "2Gi", claim("no-class", ptr.To(""), "")},
		{"annotated", "2Gi", claim("annotated", nil, "grows")},
		{"same-size", "1024Mi", claim("same-size", ptr.To("fixed"), "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := claims.Create(t.Context(), tc.claim, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
			if _, err = claims.UpdateStatus(t.Context(), c, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The leader's storage protection marks a bound claim Unused
			// (kube 1.37's condition): grow the claim it wrote.
			testwait.UntilNil(t, 10*time.Second, "the claim's Unused condition", func() error {
				if c, err = claims.Get(t.Context(), tc.name, metav1.GetOptions{}); err != nil {
					return err
				}
				for _, cond := range c.Status.Conditions {
					if cond.Type == "Unused" {
						return nil
					}
				}
				return fmt.Errorf("conditions %v", c.Status.Conditions)
			})
			grown := c.DeepCopy()
			grown.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(tc.size)
			compareUpdate(t, cs, grown, c, claims, func(c *corev1.PersistentVolumeClaim) any { return c.Spec })
		})
	}
}
