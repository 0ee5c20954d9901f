package protobuf_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	"github.com/listwatch/listwatch/internal/protobuf"
)

// randomRounds is how many random objects of each kind TestRandomObjects
// tries.
const randomRounds = 100

// Bounds of the random values, kept where the JSON form is exact: seconds
// within years 1 to 9999 and integers within ±2^53.
const (
	minUnix     = -62135596800 + 1 // just after 0001-01-01T00:00:00Z, the zero time
	maxUnix     = 253402300799     // 9999-12-31T23:59:59Z
	maxExactInt = 1 << 53
)

// filler fills typed objects at random, within what the JSON form carries
// exactly: no nil []byte (JSON null), no zero Time behind a pointer (JSON
// null), fieldsV1 as compact JSON with sorted keys.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 4).Funcs(
		func(n *int64, c randfill.Continue) { *n = c.Int63n(2*maxExactInt+1) - maxExactInt },
		func(b *[]byte, c randfill.Continue) {
			*b = make([]byte, c.Intn(20))
			c.Read(*b)
		},
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(minUnix+c.Int63n(maxUnix-minUnix), c.Int63n(1e9)))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(minUnix+c.Int63n(maxUnix-minUnix), c.Int63n(1e9)))
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			var v map[string]map[string]string
			c.Fill(&v)
			if v == nil { // raw "null" would read back as no fieldsV1
				v = map[string]map[string]string{}
			}
			raw, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			f.Raw = raw
		},
	).Funcs(schemaFuncs()...)
}

// TestRandomObjects runs the Encode and Decode checks of TestEncode and
// TestDecode on randomly filled objects of every supported kind.
func TestRandomObjects(t *testing.T) {
	s := newScheme(t)
	kinds := []runtime.Object{&corev1.Namespace{}, &corev1.NamespaceList{}, &corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.Secret{}, &corev1.SecretList{}, &corev1.Event{}, &corev1.EventList{}, &eventsv1.Event{}, &eventsv1.EventList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{}, &authenticationv1.TokenRequest{}, &autoscalingv1.Scale{}, &metav1.Status{}, &metav1.DeleteOptions{},
		&rbacv1.Role{}, &rbacv1.RoleList{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{},
		&rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{},
		&apiextensionsv1.CustomResourceDefinition{}, &apiextensionsv1.CustomResourceDefinitionList{},
		&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}}
	for i, kind := range kinds {
		f := filler(int64(i))
		for round := range randomRounds {
			obj := kind.DeepCopyObject()
			f.Fill(obj)
			switch o := obj.(type) {
			case *authenticationv1.TokenRequest:
				o.Spec.Attestations = nil // alpha, behind a feature gate: not served
			}
			noEmptyBytes(reflect.ValueOf(obj))
			checkRoundTrip(t, s, fmt.Sprintf("%T/%d", obj, round), obj)
		}
	}
}

// noEmptyBytes sets the empty []byte fields tagged omitempty under v to
// nil, as their JSON (no field) reads back: k8s.io/api's Marshal writes an
// empty one that is not nil.
func noEmptyBytes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			noEmptyBytes(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			noEmptyBytes(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if e := v.MapIndex(k); e.Kind() == reflect.Struct {
				c := reflect.New(e.Type()).Elem()
				c.Set(e)
				noEmptyBytes(c)
				v.SetMapIndex(k, c)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f, sf := v.Field(i), v.Type().Field(i)
			switch {
			case !f.CanSet():
			case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
				if f.Len() == 0 && strings.Contains(sf.Tag.Get("json"), ",omitempty") {
					f.SetZero()
				}
			default:
				noEmptyBytes(f)
			}
		}
	}
}

// checkRoundTrip checks that our Encode of obj's JSON gives the
// serializer's bytes, and our Decode of those bytes the JSON of what the
// serializer decodes from them.
func checkRoundTrip(t *testing.T, s *runtime.Scheme, name string, obj runtime.Object) {
	t.Helper()
	data := theirs(t, s, obj)
	got, err := protobuf.Encode(jsonOf(t, obj))
	if err != nil {
		t.Fatalf("%s: Encode: %v", name, err)
	}
	if !bytes.Equal(data, got) {
		at := 0
		for at < min(len(data), len(got)) && data[at] == got[at] {
			at++
		}
		t.Fatalf("%s: Encode differs from k8s.io/api from byte %d\nwant %s\n got %s", name, at, hex.EncodeToString(data[at:min(at+64, len(data))]), hex.EncodeToString(got[at:min(at+64, len(got))]))
	}
	decoded, err := protobuf.Decode(data)
	if err != nil {
		t.Fatalf("%s: Decode: %v", name, err)
	}
	if diff := cmp.Diff(jsonOf(t, decodeTheirs(t, s, data, obj)), jsonOf(t, decoded)); diff != "" {
		t.Fatalf("%s: Decode (-k8s.io/api +ours):\n%s", name, diff)
	}
}
