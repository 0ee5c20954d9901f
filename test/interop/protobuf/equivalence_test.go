// Package protobuf_test proves listwatch's internal/protobuf against
// k8s.io/api and apimachinery's protobuf serializer: for a wide set of typed
// objects, Encode of their JSON form gives the serializer's bytes, Decode of
// the serializer's bytes gives the JSON k8s.io/api writes for what those
// bytes decode to, and watch frames match apimachinery's framer.
package protobuf_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sprotobuf "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/listwatch/listwatch/internal/protobuf"
)

// newScheme registers core/v1 (which brings the meta/v1 kinds under v1),
// coordination/v1, rbac/v1, apiextensions/v1, authentication/v1,
// autoscaling/v1 and the meta kinds under
// meta.k8s.io/v1 (and v1beta1's PartialObjectMetadataList).
func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, add := range []func(*runtime.Scheme) error{coordinationv1.AddToScheme, eventsv1.AddToScheme, rbacv1.AddToScheme, apiextensionsv1.AddToScheme, admissionregistrationv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, add := range []func(*runtime.Scheme) error{authenticationv1.AddToScheme, autoscalingv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"})
	// PartialObjectMetadata(List), v1 first: v1beta1's object is the same
	// Go type, which then takes v1's kind.
	for _, add := range []func(*runtime.Scheme) error{metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// theirs returns the serializer's bytes for obj, after setting its kind
// from the scheme.
func theirs(t *testing.T, s *runtime.Scheme, obj runtime.Object) []byte {
	t.Helper()
	kinds, _, err := s.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(kinds[0])
	var buf bytes.Buffer
	if err := k8sprotobuf.NewSerializer(s, s).Encode(obj, &buf); err != nil {
		t.Fatalf("serializer Encode: %v", err)
	}
	var streamed bytes.Buffer
	opts := k8sprotobuf.SerializerOptions{StreamingCollectionsEncoding: true}
	if err := k8sprotobuf.NewSerializerWithOptions(s, s, opts).Encode(obj, &streamed); err != nil {
		t.Fatalf("streaming serializer Encode: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), streamed.Bytes()) {
		t.Errorf("streaming collections encoding differs from the plain one")
	}
	return buf.Bytes()
}

// jsonOf returns obj as encoding/json writes it, read back into any.
func jsonOf(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	return m
}

// decodeTheirs decodes data with the serializer into a new object of obj's
// type.
func decodeTheirs(t *testing.T, s *runtime.Scheme, data []byte, obj runtime.Object) runtime.Object {
	t.Helper()
	into := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	got, _, err := k8sprotobuf.NewSerializer(s, s).Decode(data, nil, into)
	if err != nil {
		t.Fatalf("serializer Decode: %v", err)
	}
	return got
}

// TestEncode: our Encode of the JSON form equals the serializer's bytes.
func TestEncode(t *testing.T) {
	s := newScheme(t)
	for _, tc := range cases() {
		if !tc.exact {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			want := theirs(t, s, tc.obj)
			got, err := protobuf.Encode(jsonOf(t, tc.obj))
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("Encode differs from k8s.io/api\nwant %s\n got %s", hex.EncodeToString(want), hex.EncodeToString(got))
			}
		})
	}
}

// TestDecode: our Decode of the serializer's bytes equals the JSON of the
// object the serializer decodes from them, and encodes back to the same
// bytes where the JSON form carries everything.
func TestDecode(t *testing.T) {
	s := newScheme(t)
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			data := theirs(t, s, tc.obj)
			got, err := protobuf.Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := jsonOf(t, decodeTheirs(t, s, data, tc.obj))
			if diff := cmp.Diff(want, jsonOf(t, got)); diff != "" {
				t.Errorf("Decode (-k8s.io/api +ours):\n%s", diff)
			}
			again, err := protobuf.Encode(got)
			if err != nil {
				t.Fatalf("Encode(Decode): %v", err)
			}
			if tc.exact && !bytes.Equal(again, data) {
				t.Errorf("Encode(Decode(data)) != data")
			}
		})
	}
}

// TestSupports: every kind tried is supported under the apiVersion the
// scheme gives it.
func TestSupports(t *testing.T) {
	s := newScheme(t)
	for _, tc := range cases() {
		kinds, _, err := s.ObjectKinds(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		if gvk := kinds[0]; !protobuf.Supports(gvk.GroupVersion().String(), gvk.Kind) {
			t.Errorf("%s: Supports(%s) = false", tc.name, gvk)
		}
	}
}

// TestDeleteOptionsMetaGroup: DeleteOptions as meta.k8s.io/v1, as sent to
// APIs outside the core group.
func TestDeleteOptionsMetaGroup(t *testing.T) {
	s := newScheme(t)
	obj := &metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](5), DryRun: []string{"All"}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "DeleteOptions"})
	var want bytes.Buffer
	if err := k8sprotobuf.NewSerializer(s, s).Encode(obj, &want); err != nil {
		t.Fatal(err)
	}
	got, err := protobuf.Encode(jsonOf(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Bytes(), got) {
		t.Errorf("Encode differs\nwant %x\n got %x", want.Bytes(), got)
	}
}
