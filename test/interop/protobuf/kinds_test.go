package protobuf_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/randfill"

	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/protobuf"
)

// kindRounds is how many random objects of each served kind
// TestEveryServedKind tries: 140 kinds, some (Pod) large.
const kindRounds = 20

// servedScheme registers every served group-version: client-go's scheme
// has k8s.io/api's, kube-aggregator has apiregistration's, and
// apiextensions' is newScheme's.
func servedScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := newScheme(t)
	for _, add := range []func(*runtime.Scheme) error{scheme.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// kindFiller is filler with the types whose JSON is their own: a Quantity
// in canonical form (which both encodings write), an IntOrString of either
// type, a RawExtension of a JSON object, compact with sorted keys (the
// form Encode writes raw JSON in; an empty one behind a pointer is JSON
// null, which reads back as no pointer).
func kindFiller(seed int64) *randfill.Filler {
	return filler(seed).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31() - c.Int31())
			} else {
				*v = intstr.FromString(c.String(10))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			v := map[string]string{} // not nil: raw "null" reads back as no raw JSON
			for range c.Intn(4) {
				v[c.String(8)] = c.String(8)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				panic(err)
			}
			*r = runtime.RawExtension{Raw: raw}
		},
	)
}

// TestEveryServedKind: every kind and list the server serves from kube's
// data is supported, and for random objects of each, Encode of their JSON
// gives k8s.io/api's bytes and Decode of those bytes the JSON of what
// k8s.io/api decodes from them.
func TestEveryServedKind(t *testing.T) {
	s := servedScheme(t)
	kinds := map[schema.GroupVersionKind]bool{}
	for _, gv := range kubespec.Load().GroupVersions {
		for _, r := range gv.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource: Scale, Eviction, TokenRequest... have their own kinds
			}
			kinds[schema.FromAPIVersionAndKind(gv.GroupVersion, r.Kind)] = true
			if slices.Contains(r.Verbs, "list") {
				kinds[schema.FromAPIVersionAndKind(gv.GroupVersion, r.Kind+"List")] = true
			}
		}
	}
	for gvk := range kubespec.Load().Protobuf.Kinds {
		group, rest, _ := strings.Cut(gvk, "/")
		version, kind, _ := strings.Cut(rest, "/")
		kinds[schema.GroupVersionKind{Group: group, Version: version, Kind: kind}] = true
	}
	if len(kinds) < 130 {
		t.Fatalf("%d kinds, want the served ones", len(kinds))
	}
	i := 0
	for gvk := range kinds {
		i++
		t.Run(gvk.String(), func(t *testing.T) {
			if !protobuf.Supports(gvk.GroupVersion().String(), gvk.Kind) {
				t.Fatalf("not supported")
			}
			proto, err := s.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			f := kindFiller(int64(i))
			for round := range kindRounds {
				obj := proto.DeepCopyObject()
				f.Fill(obj)
				noEmptyBytes(reflect.ValueOf(obj))
				checkRoundTrip(t, s, fmt.Sprintf("%s/%d", gvk.Kind, round), obj)
			}
		})
	}
}
