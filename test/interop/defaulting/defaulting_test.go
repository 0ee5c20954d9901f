// Package defaulting proves listwatch's defaulting of built-in kinds equal
// to kube-apiserver's: for real manifests and for randomly filled objects of
// every kind, the object kube's scheme defaults (its generated
// SetObjectDefaults_* with the feature gates at their 1.37 defaults) and the
// object ours defaults are the same once both go through the typed Go struct,
// as kube's stored object does.
package defaulting

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiappsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"
	admissionregistrationv1 "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"
	appsv1 "k8s.io/kubernetes/pkg/apis/apps/v1"
	authenticationv1 "k8s.io/kubernetes/pkg/apis/authentication/v1"
	autoscalingv1 "k8s.io/kubernetes/pkg/apis/autoscaling/v1"
	autoscalingv2 "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	batchv1 "k8s.io/kubernetes/pkg/apis/batch/v1"
	certificatesv1 "k8s.io/kubernetes/pkg/apis/certificates/v1"
	kubecorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	discoveryv1 "k8s.io/kubernetes/pkg/apis/discovery/v1"
	flowcontrolv1 "k8s.io/kubernetes/pkg/apis/flowcontrol/v1"
	networkingv1 "k8s.io/kubernetes/pkg/apis/networking/v1"
	rbacv1 "k8s.io/kubernetes/pkg/apis/rbac/v1"
	kuberesourcev1 "k8s.io/kubernetes/pkg/apis/resource/v1"
	schedulingv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	storagev1 "k8s.io/kubernetes/pkg/apis/storage/v1"
	"k8s.io/kubernetes/pkg/features"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/defaulting"
	lwresource "github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/test/interop/manifests"
)

// kube is a scheme with every k8s.io/api type and kube's defaulters of the
// versions kube-apiserver 1.37 serves by default.
var kube = func() *runtime.Scheme {
	s := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	for _, register := range []func(*runtime.Scheme) error{
		kubecorev1.RegisterDefaults, appsv1.RegisterDefaults, batchv1.RegisterDefaults,
		autoscalingv1.RegisterDefaults, autoscalingv2.RegisterDefaults,
		admissionregistrationv1.RegisterDefaults, authenticationv1.RegisterDefaults,
		certificatesv1.RegisterDefaults, discoveryv1.RegisterDefaults, flowcontrolv1.RegisterDefaults,
		networkingv1.RegisterDefaults, rbacv1.RegisterDefaults, kuberesourcev1.RegisterDefaults,
		schedulingv1.RegisterDefaults, storagev1.RegisterDefaults,
	} {
		must(register(s))
	}
	return s
}()

// served are the group versions whose kinds the random test fills: those
// kube-apiserver 1.37 serves by default (autoscaling/v2 beside v1).
var served = []schema.GroupVersion{
	{Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "batch", Version: "v1"},
	{Group: "autoscaling", Version: "v1"}, {Group: "autoscaling", Version: "v2"},
	{Group: "admissionregistration.k8s.io", Version: "v1"}, {Group: "authentication.k8s.io", Version: "v1"},
	{Group: "certificates.k8s.io", Version: "v1"}, {Group: "coordination.k8s.io", Version: "v1"},
	{Group: "discovery.k8s.io", Version: "v1"}, {Group: "events.k8s.io", Version: "v1"},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}, {Group: "networking.k8s.io", Version: "v1"},
	{Group: "node.k8s.io", Version: "v1"}, {Group: "policy", Version: "v1"},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}, {Group: "resource.k8s.io", Version: "v1"},
	{Group: "scheduling.k8s.io", Version: "v1"}, {Group: "storage.k8s.io", Version: "v1"},
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// TestFeatureGates pins the gates kube's defaulting reads to the 1.37
// defaults ours assumes.
func TestFeatureGates(t *testing.T) {
	for gate, want := range map[featuregate.Feature]bool{
		features.ImageVolume: true, features.PodLevelResources: true,
		features.PodLevelResourcesFixDefaulting: true, features.H2CContainerProbe: false,
		features.MaxUnavailableStatefulSet: true, features.SELinuxMountReadWriteOncePod: true,
		features.VolumeLimitScaling: true,
	} {
		if got := utilfeature.DefaultFeatureGate.Enabled(gate); got != want {
			t.Errorf("feature gate %s = %v, want %v", gate, got, want)
		}
	}
}

// TestManifests defaults every object of testdata/manifests (see its README)
// both ways.
func TestManifests(t *testing.T) {
	var n int
	manifests.Each(t, "../testdata/manifests", func(name string, tm metav1.TypeMeta, js []byte) {
		gvk := tm.GroupVersionKind()
		if !kube.Recognizes(gvk) {
			return // a custom resource
		}
		n++
		t.Run(name, func(t *testing.T) { compare(t, gvk, js) })
	})
	if n < 100 {
		t.Fatalf("%d objects in the manifests, want at least 100", n)
	}
}

// TestRandom defaults randomly filled objects of every kind of the served
// group versions both ways: kinds kube does not default must come out
// unchanged from ours too.
func TestRandom(t *testing.T) {
	const perKind = 40
	r := rand.New(rand.NewSource(1))
	f := filler(r)
	kinds := 0
	for _, gv := range served {
		for kind, typ := range kube.KnownTypes(gv) {
			if !isStored(typ) {
				continue
			}
			kinds++
			gvk := gv.WithKind(kind)
			t.Run(gvk.String(), func(t *testing.T) {
				for range perKind {
					obj := reflect.New(typ).Interface().(runtime.Object)
					f.Fill(obj)
					plain(reflect.ValueOf(obj), r)
					obj.GetObjectKind().SetGroupVersionKind(gvk)
					js, err := json.Marshal(obj)
					if err != nil {
						t.Fatal(err)
					}
					if !compare(t, gvk, js) {
						return // one object's diff says enough
					}
				}
			})
		}
	}
	if kinds < 50 {
		t.Fatalf("%d kinds filled, want at least 50", kinds)
	}
}

// isStored reports a type with ObjectMeta that is not a list.
func isStored(typ reflect.Type) bool {
	_, ok := typ.FieldByName("ObjectMeta")
	return ok && !strings.HasSuffix(typ.Name(), "List")
}

// compare defaults the JSON object js of kind gvk with kube's scheme and with
// ours and reports their difference; it returns whether they are equal.
func compare(t *testing.T, gvk schema.GroupVersionKind, js []byte) bool {
	t.Helper()
	want := typedRoundTrip(t, gvk, js, true)

	obj, err := api.ParseObject(js)
	if err != nil {
		t.Fatal(err)
	}
	d := defaulting.For(gvk.Group, gvk.Version, gvk.Kind)
	if d != nil {
		d(obj)
	}
	ours, err := api.MarshalObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	// Defaulting a defaulted object changes nothing: the server may
	// default on write and again on read.
	if d != nil {
		d(obj)
		if again, err := api.MarshalObject(obj); err != nil || !bytes.Equal(again, ours) {
			t.Errorf("%s: defaulting twice differs from once (%v):\n%s\n%s", gvk.Kind, err, ours, again)
		}
	}
	got := typedRoundTrip(t, gvk, ours, false)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: kube's defaulting (-) and ours (+) differ:\n%s", gvk.Kind, diff)
		return false
	}
	return true
}

// typedRoundTrip decodes js into kind's Go type as kube-apiserver does,
// applies kube's defaulting when asked, and returns the re-encoded object as
// generic JSON.
func typedRoundTrip(t *testing.T, gvk schema.GroupVersionKind, js []byte, kubeDefaults bool) any {
	t.Helper()
	obj, err := kube.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, obj); err != nil {
		t.Fatalf("decode %s: %v\n%s", gvk.Kind, err, js)
	}
	if kubeDefaults {
		kube.Default(obj)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(out, &generic); err != nil {
		t.Fatal(err)
	}
	return generic
}

// images are references that reach each branch of the pull policy's
// parsing: tags, digests, registries, and references kube rejects.
var images = []string{
	"", "nginx", "nginx:latest", "nginx:1.25", "library/nginx:latest", "docker.io/nginx",
	"localhost:5000/app", "localhost/app:latest", "registry.k8s.io/pause:3.10",
	"nginx@sha256:" + strings.Repeat("a", 64), "nginx:latest@sha256:" + strings.Repeat("b", 64),
	"nginx:latest@sha256:abc", "nginx:latest@md5:" + strings.Repeat("c", 32), "Nginx:latest",
	"Registry.example.com/app", "[::1]:5000/app:latest", strings.Repeat("d", 64), "a//b", "nginx:",
	"example.com:99/a__b--c.d/e:v1_2.3-x", "index.docker.io/app:latest", "app:" + strings.Repeat("t", 129),
	strings.Repeat("e", 250) + ":latest", "a/" + strings.Repeat("e", 254) + ":latest", "localhost/" + strings.Repeat("e", 250) + ":latest", "x.io/" + strings.Repeat("e", 256) + ":latest",
}

// quantities are resource quantities, some finer than the milli-unit kube's
// ResourceList defaulting rounds up to.
var quantities = []string{"0", "1", "100m", "1500m", "2Gi", "512Mi", "1e3", "1.5", "10k", "3Ti",
	"100u", "1.0001", "-1.0001", "1n", "1.5e-5", "1.0001Ki", "0.9999999Ki", "-0.9999999Ki", "2e-7"}

// filler fills objects that JSON can carry: bounded sizes, valid times,
// raw JSON that is JSON, quantities from the list above, enumerations that
// defaults read.
func filler(r *rand.Rand) *randfill.Filler {
	pick := func(c randfill.Continue, l []string) string { return l[c.Intn(len(l))] }
	return randfill.New().RandSource(r).NilChance(0.4).NumElements(0, 2).MaxDepth(24).Funcs(
		func(q *resource.Quantity, c randfill.Continue) { *q = resource.MustParse(pick(c, quantities)) },
		func(v *intstr.IntOrString, c randfill.Continue) {
			switch c.Intn(4) {
			case 0:
				*v = intstr.FromInt32(0)
			case 1:
				*v = intstr.FromString("")
			case 2:
				*v = intstr.FromInt32(c.Int31n(100))
			default:
				*v = intstr.FromString("http")
			}
		},
		func(v *metav1.Time, c randfill.Continue) { *v = metav1.Unix(c.Int63n(1<<32), 0) },
		func(v *metav1.MicroTime, c randfill.Continue) {
			*v = metav1.NewMicroTime(time.Unix(c.Int63n(1<<32), 0))
		},
		func(v *metav1.FieldsV1, c randfill.Continue) { v.Raw = []byte(`{}`) },
		func(v *runtime.RawExtension, c randfill.Continue) { v.Raw = []byte(`{"a":1}`) },
		// kube's taint time is the clock's: given here so that both agree.
		func(v *resourcev1.DeviceTaint, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.TimeAdded == nil {
				v.TimeAdded = &metav1.Time{Time: time.Unix(1, 0)}
			}
		},
		enum(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName),
		enum(corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP),
		enum(corev1.ProtocolTCP, corev1.ProtocolUDP),
		enum(corev1.LimitTypeContainer, corev1.LimitTypePod),
		enum(corev1.PullAlways, corev1.PullNever),
		enum(corev1.ConditionTrue, corev1.ConditionFalse),
		enum(apiappsv1.RollingUpdateDeploymentStrategyType, apiappsv1.RecreateDeploymentStrategyType),
		enum(apiappsv1.RollingUpdateDaemonSetStrategyType, apiappsv1.OnDeleteDaemonSetStrategyType),
		enum(apiappsv1.RollingUpdateStatefulSetStrategyType, apiappsv1.OnDeleteStatefulSetStrategyType),
		enum(resourcev1.DeviceAllocationModeExactCount, resourcev1.DeviceAllocationModeAll),
		func(v *corev1.PodSpec, c randfill.Continue) {
			c.FillNoCustom(v)
			if c.Intn(2) == 0 {
				v.Volumes = append(v.Volumes, corev1.Volume{Name: "none"}) // no source: an emptyDir
			}
		},
	)
}

// enum fills a string type with one of values or "", so that the defaults
// that depend on it are reached.
func enum[T ~string](values ...T) func(*T, randfill.Continue) {
	return func(v *T, c randfill.Continue) {
		if i := c.Intn(len(values) + 1); i < len(values) {
			*v = values[i]
		} else {
			*v = ""
		}
	}
}

// plain sets every string and int32 or int64 of v, pointed to or not,
// to a value defaulting cares about: zero a third of the time, else a word
// of a small alphabet (equal strings likely, as defaults compare them) or a
// small number, negative one time in six. Named types keep what the filler
// gave them; randfill's own custom functions for string would also allocate
// every *string, where kube's defaults look for nil ones.
func plain(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			plain(v.Elem(), r)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[intstr.IntOrString]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				plain(v.Field(i), r)
			}
		}
		if !v.CanAddr() {
			return
		}
		switch x := v.Addr().Interface().(type) {
		case *corev1.Container:
			x.Image = images[r.Intn(len(images))]
		case *corev1.EphemeralContainerCommon:
			x.Image = images[r.Intn(len(images))]
		case *corev1.ImageVolumeSource:
			x.Reference = images[r.Intn(len(images))]
		}
	case reflect.Slice:
		for i := range v.Len() {
			plain(v.Index(i), r)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			plain(e, r)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() && v.CanSet() {
			v.SetString(words[r.Intn(len(words))])
		}
	case reflect.Int32, reflect.Int64:
		if t := v.Type(); (t == reflect.TypeFor[int32]() || t == reflect.TypeFor[int64]()) && v.CanSet() {
			switch n := r.Intn(6); {
			case n < 2:
				v.SetInt(0)
			case n == 2:
				v.SetInt(-1)
			default:
				v.SetInt(int64(r.Intn(99) + 1))
			}
		}
	}
}

var words = []string{"", "", "", "", "", "", "", "", "", "", "",
	"a", "TCP", "UDP", "None", "ClientIP", "ClusterIP", "NodePort", "LoadBalancer", "ExternalName",
	"RollingUpdate", "OnDelete", "Recreate", "Container", "Pod", "User", "Group", "ServiceAccount",
	"ExactCount", "All", "Always", "1.2.3.4", "10%"}

// TestQuantityRoundUp compares the text of every quantity a ResourceList
// holds after defaulting with kube's: rounded up to a milli-unit and
// written as kube's Quantity encodes it (the typed round trip of the other
// tests would hide a value written in another form). A text kube cannot
// parse is left to validation; one that spans more places than ours
// parses is left as written (kube's parser would take minutes on it).
func TestQuantityRoundUp(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var texts []string
	for range 20000 {
		texts = append(texts, randomQuantity(r))
	}
	texts = append(texts, " 1.0001 ", "1e-40", "1e4294967292", "1e-4294967292", "+0.0001", "1.0000", "0.0001Ei",
		"1023.9999999999999999999Ei", "1.G", ".0001", "-.0001m", "1e+3", "5E-4", "1E", "1e", "1.0000000000000000000001E", "0.9999999Ki", "-0.9999999Ki", "1.9999999Ki",
		"1e-9223372036854775807", "1e9223372036854775808") // kube keeps an exponent's low 32 bits of an int64
	tooLong := []string{"1e-2147483648", "1e2147483647", "-7e-2147483647"}
	d := defaulting.For("", "v1", "ResourceQuota")
	changed := 0
	for _, text := range append(texts, tooLong...) {
		obj := api.Object{"spec": map[string]any{"hard": map[string]any{"q": text}}}
		d(obj)
		ours := obj["spec"].(map[string]any)["hard"].(map[string]any)["q"]
		if slices.Contains(tooLong, text) {
			if ours != text {
				t.Errorf("%q, past the bound, became %q", text, ours)
			}
			continue
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(text))
		if err != nil {
			if ours != text {
				t.Errorf("%q: kube rejects it, ours made it %q", text, ours)
			}
			continue
		}
		q.RoundUp(-3)
		if ours != text {
			changed++
		}
		if want := q.String(); ours != want {
			t.Errorf("%q: kube writes %q, ours %q", text, want, ours)
		}
	}
	t.Logf("%d of %d quantities rewritten", changed, len(texts))
	if changed < 5000 {
		t.Errorf("%d quantities rewritten, want at least 5000", changed)
	}
}

// TestQuantitiesStoredAsKube writes objects of every kind with quantities
// outside resource lists, their texts random, through the server's write
// path for built-ins (schema pruning, defaulting, quantities in kube's
// encoding) and compares the stored JSON, as it is, with kube's decoding,
// defaulting and encoding of the same object.
func TestQuantitiesStoredAsKube(t *testing.T) {
	rs := lwresource.Builtins()
	crd.PruneBuiltins(rs)
	write := map[string]func(api.Object) []string{}
	for _, res := range rs {
		write[res.APIVersion()+"/"+res.Kind] = res.PruneAndDefault
	}
	templates := map[string]string{
		"v1/Pod": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
			"overhead":{"cpu":@Q},"resources":{"limits":{"cpu":@Q}},
			"containers":[{"name":"a","image":"i","resources":{"requests":{"memory":@Q},"limits":{"memory":@Q}}}],
			"volumes":[{"name":"v","emptyDir":{"sizeLimit":@Q}},{"name":"e","ephemeral":{"volumeClaimTemplate":{"spec":{"resources":{"requests":{"storage":@Q}}}}}}]},
			"status":{"containerStatuses":[{"name":"a","image":"i","imageID":"","ready":false,"restartCount":0,"allocatedResources":{"cpu":@Q}}]}}`,
		"v1/PersistentVolumeClaim":             `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c"},"spec":{"resources":{"requests":{"storage":@Q}}},"status":{"capacity":{"storage":@Q},"allocatedResources":{"storage":@Q}}}`,
		"v1/PersistentVolume":                  `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"v"},"spec":{"capacity":{"storage":@Q},"hostPath":{"path":"/x"}}}`,
		"v1/LimitRange":                        `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","max":{"cpu":@Q},"min":{"cpu":@Q},"default":{"cpu":@Q},"defaultRequest":{"cpu":@Q},"maxLimitRequestRatio":{"cpu":@Q}}]}}`,
		"v1/ResourceQuota":                     `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"pods":@Q}},"status":{"hard":{"pods":@Q},"used":{"pods":@Q}}}`,
		"v1/Node":                              `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"capacity":{"cpu":@Q},"allocatable":{"cpu":@Q}}}`,
		"storage.k8s.io/v1/CSIStorageCapacity": `{"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity","metadata":{"name":"s"},"storageClassName":"x","capacity":@Q,"maximumVolumeSize":@Q}`,
	}
	r := rand.New(rand.NewSource(3))
	for kind, template := range templates {
		t.Run(kind, func(t *testing.T) {
			for range 300 {
				js := template
				for strings.Contains(js, "@Q") {
					q := randomQuantity(r)
					if _, err := resource.ParseQuantity(q); err != nil {
						continue // kube's decoder refuses the object
					}
					js = strings.Replace(js, "@Q", strconv.Quote(q), 1)
				}
				gvk := schema.FromAPIVersionAndKind(kind[:strings.LastIndex(kind, "/")], kind[strings.LastIndex(kind, "/")+1:])
				want := typedRoundTrip(t, gvk, []byte(js), true)
				obj, err := api.ParseObject([]byte(js))
				if err != nil {
					t.Fatal(err)
				}
				write[kind](obj)
				var got any
				if b, err := api.MarshalObject(obj); err != nil || json.Unmarshal(b, &got) != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("kube's stored object (-) and ours (+) differ:\n%s\n%s", diff, js)
				}
			}
		})
	}
}

// randomQuantity is a quantity's text of random sign, digits, fraction
// and suffix, sometimes malformed.
func randomQuantity(r *rand.Rand) string {
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.Intn(10))
		}
		return string(b)
	}
	s := []string{"", "", "-", "+"}[r.Intn(4)] + digits(r.Intn(6))
	if r.Intn(2) == 0 {
		s += "." + digits(r.Intn(14))
	}
	suffixes := []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
		"e-4", "e-7", "E-10", "e3", "e-1", "e0", "e+2", "x", "K"}
	return s + suffixes[r.Intn(len(suffixes))]
}

// TestEmptiesStoredAsKube writes objects whose empty fields kube's Go
// types omit (json:",omitempty": an empty list, map or string, false, 0)
// and compares the object ours stores (the schema's pruning and defaults,
// then OmitEmpty) with kube's typed round trip; fields without omitempty,
// and those whose Go field is a pointer, stay as written.
func TestEmptiesStoredAsKube(t *testing.T) {
	rs := lwresource.Builtins()
	crd.PruneBuiltins(rs)
	byKind := map[string]*lwresource.Resource{}
	for _, res := range rs {
		byKind[res.APIVersion()+"/"+res.Kind] = res
	}
	for _, js := range []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{},"finalizers":[]},"spec":{"paused":false,"minReadySeconds":0,
			"selector":{"matchLabels":{"a":"b"},"matchExpressions":[]},"template":{"metadata":{"labels":{"a":"b"},"annotations":{}},
			"spec":{"nodeName":"","hostNetwork":false,"volumes":[],"containers":[{"name":"c","image":"i","args":[],"env":[],"command":[],"ports":[],"workingDir":""}]}}},
			"status":{"conditions":[],"replicas":0,"observedGeneration":0,"collisionCount":0}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","stdin":false}],"tolerations":[]},
			"status":{"conditions":[],"podIPs":[],"hostIP":"","message":"","containerStatuses":[{"name":"c","image":"i","imageID":"","ready":false,"restartCount":0,"started":false}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{},"binaryData":{},"immutable":false}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"name":""}],"externalIPs":[],"selector":{}},"status":{"loadBalancer":{"ingress":[]},"conditions":[]}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"taints":[],"unschedulable":false},"status":{"addresses":[],"capacity":{},"images":[],"volumesInUse":[]}}`,
		`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b"},"status":{"conditions":[],"disruptedPods":{},"disruptionsAllowed":0,"observedGeneration":0}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}},"status":{"conditions":[],"active":0,"completedIndexes":""}}`,
	} {
		obj, err := api.ParseObject([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		kind := obj.APIVersion() + "/" + obj.Kind()
		t.Run(kind, func(t *testing.T) {
			want := typedRoundTrip(t, schema.FromAPIVersionAndKind(obj.APIVersion(), obj.Kind()), []byte(js), true)
			res := byKind[kind]
			res.PruneAndDefault(obj)
			res.OmitEmpty(obj)
			var got any
			if b, err := api.MarshalObject(obj); err != nil || json.Unmarshal(b, &got) != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kube's stored object (-) and ours (+) differ:\n%s", diff)
			}
		})
	}
}
