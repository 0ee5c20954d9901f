package admissionplugins

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"

	"github.com/listwatch/listwatch/test/interop"
)

// limitRanges are the LimitRanges of namespace "limited": one with every
// kind of Container and Pod limit, one for claims.
var limitRanges = []string{`{"metadata":{"name":"compute"},"spec":{"limits":[
	{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"100m"},
	 "min":{"cpu":"50m"},"max":{"cpu":"2","memory":"1Gi"},"maxLimitRequestRatio":{"cpu":"10"}},
	{"type":"Container","defaultRequest":{"memory":"64Mi"}},
	{"type":"Pod","max":{"cpu":"3","memory":"2Gi"},"min":{"memory":"10Mi"},"maxLimitRequestRatio":{"memory":"4"}}]}}`,
	`{"metadata":{"name":"storage"},"spec":{"limits":[{"type":"PersistentVolumeClaim","min":{"storage":"1Gi"},"max":{"storage":"10Gi"}}]}}`,
}

// limitPods are pods to create in "limited", by name.
var limitPods = map[string]string{
	"defaulted":      `{"spec":{"containers":[{"name":"c","image":"nginx"}]}}`,
	"own-limits":     `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1","memory":"512Mi"}}}]}}`,
	"own-requests":   `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"200m","memory":"128Mi"}}}]}}`,
	"init-and-more":  `{"spec":{"initContainers":[{"name":"i","image":"busybox"}],"containers":[{"name":"a","image":"nginx"},{"name":"b","image":"nginx","resources":{"limits":{"cpu":"800m"}}}]}}`,
	"sidecar":        `{"spec":{"initContainers":[{"name":"s","image":"envoy","restartPolicy":"Always","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}],"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1500m","memory":"1Gi"}}}]}}`,
	"over-max":       `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"3","memory":"2Gi"}}}]}}`,
	"under-min":      `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"10m"}}}]}}`,
	"ratio":          `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"50m"},"limits":{"cpu":"1"}}}]}}`,
	"zero-request":   `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"0"},"limits":{"cpu":"1"}}}]}}`,
	"pod-over-max":   `{"spec":{"containers":[{"name":"a","image":"nginx","resources":{"limits":{"cpu":"2"}}},{"name":"b","image":"nginx","resources":{"limits":{"cpu":"2"}}}]}}`,
	"pod-level":      `{"spec":{"resources":{"limits":{"cpu":"2500m","memory":"1Gi"}},"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1"}}}]}}`,
	"pod-memory-mix": `{"spec":{"containers":[{"name":"a","image":"nginx","resources":{"requests":{"memory":"100Mi"},"limits":{"memory":"900Mi"}}},{"name":"b","image":"nginx","resources":{"requests":{"memory":"100Mi"}}}]}}`,
	"many-errors":    `{"spec":{"initContainers":[{"name":"i","image":"busybox","resources":{"requests":{"cpu":"1m"},"limits":{"cpu":"5","memory":"4Gi"}}}],"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"1m"},"limits":{"cpu":"5","memory":"4Gi"}}}]}}`,
	"huge":           `{"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"1","memory":"9223372036854775807"}}}]}}`,
}

// limitClaims are claims to create in "limited", by name: their storage
// requests.
var limitClaims = map[string]string{"small": "500Mi", "fits": "5Gi", "big": "20Gi", "exact-min": "1Gi"}

// TestLimitRangerAsKubes creates pods and claims in a namespace with
// LimitRanges on the binary and through kube's LimitRanger plugin, and
// compares the containers' resources and the annotation the plugin sets,
// or the refusals (their parts in any order: kube's come in map order).
func TestLimitRangerAsKubes(t *testing.T) {
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const limited = "limited"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: limited}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var stored []runtime.Object
	for _, lr := range limitRanges {
		var obj corev1.LimitRange
		if err := json.Unmarshal([]byte(lr), &obj); err != nil {
			t.Fatal(err)
		}
		createCached(t, cs.CoreV1().LimitRanges(limited), &obj)
		got, err := cs.CoreV1().LimitRanges(limited).Get(ctx, obj.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got)
	}
	kube := newKubeLimitRanger(t, stored)
	resources := func(p *corev1.Pod) any {
		var rs []corev1.ResourceRequirements
		for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
			rs = append(rs, c.Resources)
		}
		return struct {
			Note      string
			Resources []corev1.ResourceRequirements
			Pod       *corev1.ResourceRequirements
		}{p.Annotations["kubernetes.io/limit-ranger"], rs, p.Spec.Resources}
	}
	refused := 0
	for name, spec := range limitPods {
		var pod corev1.Pod
		if err := json.Unmarshal([]byte(spec), &pod); err != nil {
			t.Fatal(err)
		}
		pod.Name = name
		want, wantErr := kube.admit(t, &pod, limited)
		_, err := cs.CoreV1().Pods(limited).Create(ctx, &pod, metav1.CreateOptions{})
		if compareRefusal(t, name, err, wantErr) {
			refused++
			continue
		}
		got, err := cs.CoreV1().Pods(limited).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resources(want.(*corev1.Pod)), resources(got)); diff != "" {
			t.Errorf("%s: (-kube +listwatch):\n%s", name, diff)
		}
	}
	for name, storage := range limitClaims {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)}}}}
		_, wantErr := kube.admit(t, claim, limited)
		_, err := cs.CoreV1().PersistentVolumeClaims(limited).Create(ctx, claim, metav1.CreateOptions{})
		if compareRefusal(t, name, err, wantErr) {
			refused++
		}
	}
	// The cases are meant to be refused by kube for 11 of the 18 writes.
	if refused != 11 {
		t.Errorf("kube refused %d writes, want 11", refused)
	}
}

// compareRefusal compares the binary's answer to a create with kube's
// refusal, if any, and says whether kube refused it.
func compareRefusal(t *testing.T, name string, err, wantErr error) bool {
	t.Helper()
	if wantErr == nil {
		if err != nil {
			t.Errorf("%s: kube admits it, the binary: %v", name, err)
		}
		return false
	}
	if err == nil || apierrors.ReasonForError(err) != apierrors.ReasonForError(wantErr) || parts(err.Error()) != parts(wantErr.Error()) {
		t.Errorf("%s:\n got %v\nwant %v", name, err, wantErr)
	}
	return true
}

// parts is a message with its comma-separated parts sorted, after its
// "...: " prefix, which the first part would otherwise carry.
func parts(msg string) string {
	prefix, rest, ok := strings.Cut(msg, "forbidden: ")
	if !ok {
		prefix, rest = "", msg
	}
	p := strings.Split(strings.NewReplacer("[", "", "]", "").Replace(rest), ", ")
	slices.Sort(p)
	return prefix + strings.Join(p, ", ")
}

// kubeLimitRanger is kube's LimitRanger plugin reading the LimitRanges
// given.
type kubeLimitRanger struct{ chain admission.Interface }

func newKubeLimitRanger(t *testing.T, ranges []runtime.Object) *kubeLimitRanger {
	client := fake.NewClientset(ranges...)
	factory := informers.NewSharedInformerFactory(client, 0)
	for _, r := range ranges {
		if err := factory.Core().V1().LimitRanges().Informer().GetIndexer().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	plugins := admission.NewPlugins()
	limitranger.Register(plugins)
	chain, err := plugins.NewFromPlugins([]string{limitranger.PluginName}, noConfig{}, initializer{client, factory}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &kubeLimitRanger{chain}
}

// admit runs the plugin on the create of obj (of the v1 API) in namespace
// ns, defaulted and converted as kube-apiserver decodes it, and returns it
// as kube stores it, or the refusal.
func (k *kubeLimitRanger) admit(t *testing.T, obj runtime.Object, ns string) (runtime.Object, error) {
	t.Helper()
	internal, gvk := decodeAsKube(t, obj)
	a := admission.NewAttributesRecord(internal, nil, gvk, ns, obj.(metav1.Object).GetName(), kindResource(t, obj), "", admission.Create,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"})
	if err := k.chain.(admission.MutationInterface).Admit(context.Background(), a, nil); err != nil {
		return nil, err
	}
	if err := k.chain.(admission.ValidationInterface).Validate(context.Background(), a, nil); err != nil {
		return nil, err
	}
	return readAsKube(t, internal, gvk), nil
}
