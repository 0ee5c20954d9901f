package admissionplugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	resourcequotaapivalidation "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota/validation"
	kubequota "k8s.io/apiserver/pkg/quota/v1"
	quotageneric "k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/utils/clock"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
)

// quotaSets are the quotas the writes are charged to, each set on its own.
var quotaSets = [][]string{{
	`{"metadata":{"name":"compute","resourceVersion":"1"},"status":{
		"hard":{"pods":"3","requests.cpu":"2","limits.memory":"2Gi","count/pods":"5","requests.hugepages-2Mi":"4Mi"},
		"used":{"pods":"2","requests.cpu":"1500m","limits.memory":"1Gi","count/pods":"2","requests.hugepages-2Mi":"0"}}}`,
	`{"metadata":{"name":"objects","resourceVersion":"1"},"status":{
		"hard":{"count/configmaps":"1","configmaps":"3","count/deployments.apps":"1"},"used":{"count/configmaps":"0","configmaps":"1","count/deployments.apps":"1"}}}`,
	`{"metadata":{"name":"network","resourceVersion":"1"},"status":{
		"hard":{"services":"2","services.nodeports":"1","services.loadbalancers":"0"},"used":{"services":"0","services.nodeports":"0","services.loadbalancers":"0"}}}`,
	`{"metadata":{"name":"over","resourceVersion":"1"},"status":{"hard":{"services.loadbalancers":"0"},"used":{"services.loadbalancers":"1"}}}`,
	`{"metadata":{"name":"storage","resourceVersion":"1"},"status":{
		"hard":{"requests.storage":"10Gi","gold.storageclass.storage.k8s.io/requests.storage":"1Gi","persistentvolumeclaims":"5"},
		"used":{"requests.storage":"9Gi","gold.storageclass.storage.k8s.io/requests.storage":"0","persistentvolumeclaims":"1"}}}`,
}, {
	`{"metadata":{"name":"fresh","resourceVersion":"1"},"status":{"hard":{"requests.memory":"1Gi","count/configmaps":"3"},"used":{"count/configmaps":"0"}}}`,
}, {
	`{"metadata":{"name":"memory","resourceVersion":"1"},"status":{"hard":{"requests.memory":"1Gi","limits.cpu":"1"},"used":{"requests.memory":"512Mi","limits.cpu":"0"}}}`,
	`{"metadata":{"name":"second","resourceVersion":"1"},"status":{"hard":{"limits.cpu":"4"},"used":{"limits.cpu":"3500m"}}}`,
}, {
	`{"metadata":{"name":"best-effort","resourceVersion":"1"},"spec":{"scopes":["BestEffort"]},"status":{"hard":{"pods":"1"},"used":{"pods":"1"}}}`,
	`{"metadata":{"name":"not-best-effort","resourceVersion":"1"},"spec":{"scopes":["NotBestEffort","NotTerminating"]},"status":{"hard":{"pods":"5","requests.cpu":"1"},"used":{"pods":"0","requests.cpu":"900m"}}}`,
	`{"metadata":{"name":"terminating","resourceVersion":"1"},"spec":{"scopes":["Terminating"]},"status":{"hard":{"count/pods":"0"},"used":{"count/pods":"0"}}}`,
	`{"metadata":{"name":"high","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}},"status":{"hard":{"pods":"0"},"used":{"pods":"0"}}}`,
	`{"metadata":{"name":"not-low","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"NotIn","values":["low"]}]}},"status":{"hard":{"limits.memory":"600Mi"},"used":{"limits.memory":"0"}}}`,
	`{"metadata":{"name":"cross","resourceVersion":"1"},"spec":{"scopes":["CrossNamespacePodAffinity"]},"status":{"hard":{"pods":"0"},"used":{"pods":"0"}}}`,
	`{"metadata":{"name":"scoped-objects","resourceVersion":"1"},"spec":{"scopes":["BestEffort"]},"status":{"hard":{"count/configmaps":"0","services":"0"},"used":{"count/configmaps":"0","services":"0"}}}`,
}, {
	`{"metadata":{"name":"vac-gold","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"VolumeAttributesClass","operator":"In","values":["gold"]}]}},
		"status":{"hard":{"requests.storage":"1Gi","persistentvolumeclaims":"1"},"used":{"requests.storage":"0","persistentvolumeclaims":"0"}}}`,
	`{"metadata":{"name":"vac-any","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"VolumeAttributesClass","operator":"Exists"}]}},
		"status":{"hard":{"persistentvolumeclaims":"5","count/persistentvolumeclaims":"5"},"used":{"persistentvolumeclaims":"0","count/persistentvolumeclaims":"0"}}}`,
	`{"metadata":{"name":"vac-not-fast","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"VolumeAttributesClass","operator":"NotIn","values":["fast"]}]}},
		"status":{"hard":{"requests.storage":"3Gi"},"used":{"requests.storage":"2Gi"}}}`,
	`{"metadata":{"name":"vac-none","resourceVersion":"1"},"spec":{"scopeSelector":{"matchExpressions":[{"scopeName":"VolumeAttributesClass","operator":"DoesNotExist"}]}},
		"status":{"hard":{"persistentvolumeclaims":"9"},"used":{"persistentvolumeclaims":"0"}}}`,
}, {
	`{"metadata":{"name":"gpu","resourceVersion":"1"},"status":{"hard":{"requests.example.com/gpu":"2","requests.deviceclass.resource.kubernetes.io/gpu.example.com":"1",
		"example.com/gpu":"9","requests.example.com/fpga":"1"},"used":{"requests.example.com/gpu":"1","requests.deviceclass.resource.kubernetes.io/gpu.example.com":"0",
		"example.com/gpu":"0","requests.example.com/fpga":"0"}}}`,
}, {}}

// quotaLimited is the ResourceQuota plugin's configuration the writes
// are also checked under: resources limited by name and by scope.
const quotaLimited = `apiVersion: apiserver.config.k8s.io/v1
kind: ResourceQuotaConfiguration
limitedResources:
- resource: pods
  matchContains: ["requests.cpu", "hugepages"]
- resource: persistentvolumeclaims
  matchContains: [".storageclass.storage.k8s.io/requests.storage"]
- resource: configmaps
  matchContains: ["configmaps"]
- apiGroup: apps
  resource: deployments
  matchContains: ["count/"]
- resource: pods
  matchScopes:
  - {scopeName: PriorityClass, operator: In, values: [high, low]}
  - {scopeName: BestEffort, operator: Exists}
- resource: services
  matchScopes:
  - {scopeName: VolumeAttributesClass, operator: Exists}
`

// quotaLimits are, for each configuration the writes are checked
// under, kube's limited resources and ours.
func quotaLimits(t *testing.T) [][2]any {
	kube, err := resourcequota.LoadConfiguration(strings.NewReader(quotaLimited))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := quota.LoadConfig([]byte(quotaLimited))
	if err != nil {
		t.Fatal(err)
	}
	return [][2]any{{[]resourcequotaapi.LimitedResource(nil), []quota.Limited(nil)}, {kube.LimitedResources, ours}}
}

// quotaWrite is a write of a v1 object, over old on update.
type quotaWrite struct {
	name     string
	sub      string // the subresource written
	obj, old runtime.Object
}

func quotaWrites(t *testing.T) []quotaWrite {
	pod := func(s string) runtime.Object {
		var p corev1.Pod
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatal(err)
		}
		p.Name = "p"
		return &p
	}
	svc := func(typ corev1.ServiceType, ports int) runtime.Object {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "5"}, Spec: corev1.ServiceSpec{Type: typ}}
		for i := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
		}
		return s
	}
	claim := func(class *string, annotation, storage string) runtime.Object {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "5"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(storage)}}}}
		if annotation != "" {
			c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: annotation}
		}
		return c
	}
	// vacClaim is a stored claim of 1Gi, with the given JSON over it.
	vacClaim := func(s string) runtime.Object {
		c := claim(nil, "", "1Gi").(*corev1.PersistentVolumeClaim)
		if err := json.Unmarshal([]byte(s), c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	gold, silver := "gold", "silver"
	return []quotaWrite{
		{name: "pod within", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m","memory":"1Mi"},"limits":{"cpu":"1","memory":"512Mi"}}}]}}`)},
		{name: "pod over cpu", obj: pod(`{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"300m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Gi"}}},
			{"name":"b","resources":{"requests":{"cpu":"300m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Gi"}}}]}}`)},
		{name: "pod missing requests", obj: pod(`{"spec":{"initContainers":[{"name":"i"}],"containers":[{"name":"b"},{"name":"a","resources":{"limits":{"memory":"1Mi"}}}]}}`)},
		{name: "pod-level resources", obj: pod(`{"spec":{"resources":{"requests":{"cpu":"100m","memory":"10Mi"},"limits":{"cpu":"1","memory":"100Mi"}},"containers":[{"name":"c"}]}}`)},
		{name: "pod sidecar and overhead", obj: pod(`{"spec":{"overhead":{"cpu":"100m","memory":"10Mi"},"initContainers":[{"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"memory":"100Mi","cpu":"1"}}}],
			"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"memory":"100Mi","cpu":"1"}}}]}}`)},
		{name: "pod hugepages", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi","hugepages-2Mi":"6Mi"},"limits":{"cpu":"10m","memory":"1Mi","hugepages-2Mi":"6Mi"}}}]}}`)},
		{name: "pod done", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"10","memory":"1Mi"},"limits":{"cpu":"10","memory":"10Gi"}}}]},"status":{"phase":"Succeeded"}}`)},
		{name: "pod best effort", obj: pod(`{"spec":{"containers":[{"name":"c"}]}}`)},
		{name: "pod terminating", obj: pod(`{"spec":{"activeDeadlineSeconds":10,"containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi"},"limits":{"cpu":"10m","memory":"1Mi"}}}]}}`)},
		{name: "pod high", obj: pod(`{"spec":{"priorityClassName":"high","containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi"},"limits":{"cpu":"10m","memory":"1Mi"}}}]}}`)},
		{name: "pod low", obj: pod(`{"spec":{"priorityClassName":"low","containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi"},"limits":{"cpu":"10m","memory":"1Gi"}}}]}}`)},
		{name: "pod cross-namespace affinity", obj: pod(`{"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,
			"podAffinityTerm":{"topologyKey":"zone","namespaces":["other"]}}]}},"containers":[{"name":"c"}]}}`)},
		{name: "pod made terminating", obj: withRV(pod(`{"spec":{"activeDeadlineSeconds":30,"containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi"},"limits":{"cpu":"10m","memory":"1Mi"}}}]}}`)),
			old: withRV(pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"10m","memory":"1Mi"},"limits":{"cpu":"10m","memory":"1Mi"}}}]}}`))},
		{name: "pod no longer terminating", obj: withRV(pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}}]}}`)),
			old: withRV(pod(`{"spec":{"activeDeadlineSeconds":30,"containers":[{"name":"c","resources":{"requests":{"cpu":"200m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}}]}}`))},
		{name: "pod updated in scope", obj: withRV(pod(`{"spec":{"containers":[{"name":"c","image":"b"}]}}`)), old: withRV(pod(`{"spec":{"containers":[{"name":"c","image":"a"}]}}`))},
		{name: "pod qos from status", obj: pod(`{"spec":{"containers":[{"name":"c"}]},"status":{"qosClass":"Burstable"}}`)},
		{name: "pod resized", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}}]},
			"status":{"containerStatuses":[{"name":"c","allocatedResources":{"cpu":"300m"},"resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"2"}}}]}}`)},
		{name: "pod resize infeasible", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"400m","memory":"1Mi"},"limits":{"cpu":"3","memory":"1Mi"}}}]},
			"status":{"conditions":[{"type":"PodResizePending","status":"True","reason":"Infeasible"}],
			"containerStatuses":[{"name":"c","allocatedResources":{"cpu":"150m"},"resources":{"limits":{"cpu":"500m"}}}]}}`)},
		{name: "pod init containers around a sidecar", obj: pod(`{"spec":{"initContainers":[{"name":"i1","resources":{"requests":{"cpu":"300m","memory":"1Mi"},"limits":{"cpu":"1","memory":"2Mi"}}},
			{"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}},
			{"name":"i2","resources":{"requests":{"cpu":"250m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}}],
			"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"cpu":"1","memory":"1Mi"}}}]}}`)},
		{name: "pod-level requests and overhead", obj: pod(`{"spec":{"overhead":{"cpu":"50m"},"resources":{"requests":{"cpu":"150m"}},
			"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"1Mi"},"limits":{"memory":"1Mi"}}}]}}`)},
		{name: "pod one gpu", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"example.com/gpu":"1"},"limits":{"example.com/gpu":"1"}}}]}}`)},
		{name: "pod over gpu", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"example.com/gpu":"2"},"limits":{"example.com/gpu":"2"}}}]}}`)},
		{name: "pod device class", obj: pod(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"deviceclass.resource.kubernetes.io/gpu.example.com":"1"},
			"limits":{"deviceclass.resource.kubernetes.io/gpu.example.com":"1"}}}]}}`)},
		{name: "configmap", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}},
		{name: "deployment", obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}},
		{name: "service", obj: svc(corev1.ServiceTypeClusterIP, 2)},
		{name: "nodeport service", obj: svc(corev1.ServiceTypeNodePort, 2)},
		{name: "load balancer", obj: svc(corev1.ServiceTypeLoadBalancer, 1)},
		{name: "service made a nodeport", obj: svc(corev1.ServiceTypeNodePort, 1), old: svc(corev1.ServiceTypeClusterIP, 1)},
		{name: "nodeport service shrunk", obj: svc(corev1.ServiceTypeNodePort, 1), old: svc(corev1.ServiceTypeNodePort, 3)},
		{name: "claim", obj: claim(&silver, "", "1Gi")},
		{name: "claim over", obj: claim(nil, "", "1500Mi")},
		{name: "gold claim", obj: claim(&gold, "", "500Mi")},
		{name: "annotated gold claim", obj: claim(&silver, "gold", "1100Mi")},
		{name: "claim fraction", obj: claim(nil, "", "0.5")},
		{name: "claim grown", obj: claim(&gold, "", "900Mi"), old: claim(&gold, "", "200Mi")},
		{name: "claim of attributes class gold", obj: vacClaim(`{"spec":{"volumeAttributesClassName":"gold"}}`)},
		{name: "claim of attributes class fast", obj: vacClaim(`{"spec":{"volumeAttributesClassName":"fast"}}`)},
		{name: "claim being modified to gold", obj: vacClaim(`{"spec":{"volumeAttributesClassName":"fast"},"status":{"currentVolumeAttributesClassName":"fast",
			"modifyVolumeStatus":{"targetVolumeAttributesClassName":"gold","status":"InProgress"}}}`)},
		{name: "claim moved to attributes class gold", obj: vacClaim(`{"spec":{"volumeAttributesClassName":"gold"}}`), old: vacClaim(`{}`)},
		{name: "claim status allocated more", sub: "status", obj: vacClaim(`{"status":{"allocatedResources":{"storage":"5Gi"}}}`), old: vacClaim(`{}`)},
		{name: "claim status unchanged", sub: "status", obj: vacClaim(`{"spec":{"volumeAttributesClassName":"gold"}}`),
			old: vacClaim(`{"spec":{"volumeAttributesClassName":"gold"}}`)},
		{name: "pod status", sub: "status", obj: withRV(pod(`{"spec":{"containers":[{"name":"c"}]}}`)), old: withRV(pod(`{"spec":{"containers":[{"name":"c"}]}}`))},
	}
}

// TestQuotaAsKubes charges writes of each kind to sets of quotas with
// kube's CheckRequest and its evaluators and with ours, and compares the
// refusals and the quotas' new usage.
func TestQuotaAsKubes(t *testing.T) {
	evaluators := map[string]kubequota.Evaluator{
		"pods":                   core.NewPodEvaluator(nil, clock.RealClock{}),
		"services":               core.NewServiceEvaluator(nil),
		"persistentvolumeclaims": core.NewPersistentVolumeClaimEvaluator(nil),
		"configmaps":             quotageneric.NewObjectCountEvaluator(corev1.Resource("configmaps"), nil, corev1.ResourceConfigMaps),
		"deployments":            quotageneric.NewObjectCountEvaluator(appsv1.Resource("deployments"), nil, ""),
	}
	refused, uncovered := 0, 0
	for l, limits := range quotaLimits(t) {
		for _, w := range quotaWrites(t) {
			for i, set := range quotaSets {
				var kubeQuotas []corev1.ResourceQuota
				var ours []quota.Quota
				for _, s := range set {
					var q corev1.ResourceQuota
					if err := json.Unmarshal([]byte(s), &q); err != nil {
						t.Fatal(err)
					}
					kubeQuotas = append(kubeQuotas, q)
					obj, err := api.ParseObject([]byte(s))
					if err != nil {
						t.Fatal(err)
					}
					ours = append(ours, quota.Parse(obj))
				}
				obj, old := defaulted(t, w.obj), defaulted(t, w.old)
				gvr := kindResource(t, obj)
				op := admission.Create
				if old != nil {
					op = admission.Update
				}
				a := admission.NewAttributesRecord(obj, old, kindOf(t, obj), "ns", "x", gvr, w.sub, op, nil, false, nil)
				want, wantErr := resourcequota.CheckRequest(kubeQuotas, a, evaluators[gvr.Resource], limits[0].([]resourcequotaapi.LimitedResource))
				changed, err := quota.Check(ours, quota.Write{Op: string(op), Group: gvr.Group, Plural: gvr.Resource, Subresource: w.sub,
					Object: jsonForm(t, obj), Old: jsonForm(t, old)}, limits[1].([]quota.Limited), time.Now())
				what := fmt.Sprintf("%s on set %d, limits %d", w.name, i, l)
				var r *quota.Refused
				var u *quota.Uncovered
				switch {
				case wantErr == nil:
				case !apierrors.IsForbidden(wantErr): // kube's plain error, a 500
					uncovered++
					if !errors.As(err, &u) || u.Error() != wantErr.Error() {
						t.Errorf("%s: got %v, want %v", what, err, wantErr)
					}
					continue
				default:
					refused++
					// kube's error is the plugin's 403: `<what> "x" is forbidden: <reason>`.
					if !errors.As(err, &r) || !strings.HasSuffix(wantErr.Error(), `"x" is forbidden: `+r.Reason) {
						t.Errorf("%s: got %v, want %v", what, err, wantErr)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: kube admits it, we: %v", what, err)
					continue
				}
				for j, q := range ours {
					for _, c := range changed {
						if c.Name == q.Name {
							q = c
						}
					}
					got := quota.Encode(q.Used)
					kube := map[string]any{}
					for name, v := range want[j].Status.Used {
						kube[string(name)] = v.String()
					}
					if !equalJSON(got, kube) {
						t.Errorf("%s: quota %s used %v, kube's %v", what, q.Name, got, kube)
					}
				}
			}
		}
	}
	if refused < 10 || uncovered == 0 {
		t.Errorf("only %d writes refused by kube, %d for scopes: the cases are meant to cross every kind of refusal", refused, uncovered)
	}
}

// withRV gives a pod the resourceVersion of a stored one.
func withRV(obj runtime.Object) runtime.Object {
	obj.(*corev1.Pod).ResourceVersion = "5"
	return obj
}

// defaulted is a v1 object defaulted as kube-apiserver decodes it.
func defaulted(t *testing.T, obj runtime.Object) runtime.Object {
	if obj == nil {
		return nil
	}
	obj = obj.DeepCopyObject()
	legacyscheme.Scheme.Default(obj)
	return obj
}

// jsonForm is an object as the server holds it.
func jsonForm(t *testing.T, obj runtime.Object) api.Object {
	if obj == nil {
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	o, err := api.ParseObject(b)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestQuotaConfigAsKubes reads ResourceQuota plugin configurations with
// kube's LoadConfiguration and ValidateConfiguration and with ours: the
// same are refused, and the same limited resources read from the rest.
func TestQuotaConfigAsKubes(t *testing.T) {
	for name, config := range map[string]string{
		"v1":                  quotaLimited,
		"v1beta1":             "apiVersion: resourcequota.admission.k8s.io/v1beta1\nkind: Configuration\nlimitedResources: [{resource: pods, matchContains: [cpu]}]",
		"v1alpha1 json":       `{"apiVersion":"resourcequota.admission.k8s.io/v1alpha1","kind":"Configuration","limitedResources":[{"apiGroup":"apps","resource":"deployments"}]}`,
		"none limited":        "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration",
		"unknown field":       "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{resource: pods, foo: bar}]",
		"field of wrong case": "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{Resource: pods}]",
		"duplicate field":     "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n- resource: pods\n  resource: pods",
		"no resource":         "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{matchContains: [cpu]}, {resource: pods}, {apiGroup: apps}]",
		"no kind":             "apiVersion: apiserver.config.k8s.io/v1\nlimitedResources: []",
		"v1 kind of v1beta1":  "apiVersion: apiserver.config.k8s.io/v1\nkind: Configuration",
		"v1beta1 kind of v1":  "apiVersion: resourcequota.admission.k8s.io/v1beta1\nkind: ResourceQuotaConfiguration",
		"unknown version":     "apiVersion: resourcequota.admission.k8s.io/v1\nkind: Configuration",
		"wrong type":          "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: {resource: pods}",
		"empty":               "",
	} {
		kube, kubeErr := resourcequota.LoadConfiguration(strings.NewReader(config))
		if kubeErr == nil {
			kubeErr = resourcequotaapivalidation.ValidateConfiguration(kube).ToAggregate()
		}
		ours, err := quota.LoadConfig([]byte(config))
		switch {
		case kubeErr != nil || err != nil:
			if (kubeErr == nil) != (err == nil) {
				t.Errorf("%s: got %v, kube's %v", name, err, kubeErr)
			}
			continue
		}
		b, err := json.Marshal(kube.LimitedResources)
		if err != nil {
			t.Fatal(err)
		}
		var want []quota.Limited
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, ours, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: (-kube's +ours):\n%s", name, diff)
		}
	}
}

// TestQuotaUsageAsKubes recomputes each quota's usage over the writes'
// objects, stored in one namespace, with kube's resourcequota
// controller's CalculateUsage and its evaluators and with ours.
func TestQuotaUsageAsKubes(t *testing.T) {
	indexers := map[schema.GroupVersionResource]cache.Indexer{}
	raw := map[schema.GroupVersionResource][][]byte{}
	for i, w := range quotaWrites(t) {
		obj := defaulted(t, w.obj)
		obj.(metav1.Object).SetName(fmt.Sprint("o", i))
		obj.(metav1.Object).SetNamespace("ns")
		gvr := kindResource(t, obj)
		if indexers[gvr] == nil {
			indexers[gvr] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		if err := indexers[gvr].Add(obj); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		raw[gvr] = append(raw[gvr], b)
	}
	listers := func(gvr schema.GroupVersionResource) (cache.GenericLister, error) {
		return cache.NewGenericLister(indexers[gvr], gvr.GroupResource()), nil
	}
	registry := quotageneric.NewRegistry([]kubequota.Evaluator{
		core.NewPodEvaluator(listers, clock.RealClock{}),
		core.NewServiceEvaluator(listers),
		core.NewPersistentVolumeClaimEvaluator(listers),
		quotageneric.NewObjectCountEvaluator(corev1.Resource("configmaps"),
			quotageneric.ListResourceUsingListerFunc(listers, corev1.SchemeGroupVersion.WithResource("configmaps")), corev1.ResourceConfigMaps),
		quotageneric.NewObjectCountEvaluator(appsv1.Resource("deployments"),
			quotageneric.ListResourceUsingListerFunc(listers, appsv1.SchemeGroupVersion.WithResource("deployments")), ""),
	})
	served := func(group, plural string) bool {
		_, ok := indexers[schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}]
		return ok
	}
	compared := 0
	for _, set := range quotaSets {
		for _, s := range set {
			var kq corev1.ResourceQuota
			if err := json.Unmarshal([]byte(s), &kq); err != nil {
				t.Fatal(err)
			}
			kube, err := kubequota.CalculateUsage("ns", kq.Spec.Scopes, kq.Status.Hard, registry, kq.Spec.ScopeSelector)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := api.ParseObject([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			q := quota.Parse(obj)
			ours := quota.List{}
			for _, gr := range quota.Resources(q.Hard, served) {
				u, err := quota.Usage([]quota.Quota{q}, gr[0], gr[1], raw[schema.GroupVersionResource{Group: gr[0], Version: "v1", Resource: gr[1]}], time.Now())
				if err != nil {
					t.Fatal(err)
				}
				maps.Copy(ours, u[0])
			}
			want := map[string]any{}
			for name, v := range kube {
				want[string(name)] = v.String()
			}
			if got := quota.Encode(ours); !equalJSON(got, want) {
				t.Errorf("quota %s: used %v, kube's %v", q.Name, got, want)
			}
			compared++
		}
	}
	if compared < 20 {
		t.Errorf("only %d quotas compared", compared)
	}
}
