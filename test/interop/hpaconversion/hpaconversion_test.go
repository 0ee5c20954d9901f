// Package hpaconversion proves listwatch's autoscaling/v1 HorizontalPodAutoscalers,
// stored in autoscaling/v2's form and converted both ways, equal to what
// kube-apiserver serves: each case's expected objects are computed with
// kube's own defaulting and conversion (k8s.io/kubernetes pkg/apis/autoscaling
// v1 and v2, through the internal type, as kube's codecs convert), and the
// objects listwatch answers, written in one version and read or watched in
// the other through client-go's typed clients, must equal them.
package hpaconversion

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/test/interop"
)

const timeout = 60 * time.Second

// Quantities are written canonical, as kube writes them (listwatch keeps a
// quantity's text: "0.05" stays "0.05" where kube answers "50m").

// v2Cases are autoscaling/v2 HPAs from the Kubernetes documentation
// (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale-walkthrough/:
// php-apache, its multiple and external metrics;
// https://kubernetes.io/docs/concepts/workloads/autoscaling/horizontal-pod-autoscale/:
// container resource, behavior, tolerance), each with a status as the HPA
// controller writes it, and a few edges of kube's conversion.
var v2Cases = []string{`
metadata: {name: php-apache}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
status:
  currentReplicas: 1
  desiredReplicas: 1
  currentMetrics:
  - type: Resource
    resource: {name: cpu, current: {averageUtilization: 0, averageValue: 1m}}
  conditions:
  - {type: AbleToScale, status: "True", lastTransitionTime: "2026-01-02T03:04:05Z", reason: ReadyForNewScale, message: recommended size matches current size}
  - {type: ScalingActive, status: "True", lastTransitionTime: "2026-01-02T03:04:05Z", reason: ValidMetricFound}
`, `
metadata: {name: multiple-metrics, annotations: {team: web}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  - type: Pods
    pods:
      metric: {name: packets-per-second}
      target: {type: AverageValue, averageValue: 1k}
  - type: Object
    object:
      metric: {name: requests-per-second}
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main-route}
      target: {type: Value, value: 10k}
status:
  observedGeneration: 1
  lastScaleTime: "2026-01-02T03:04:05Z"
  currentReplicas: 3
  desiredReplicas: 4
  currentMetrics:
  - type: Resource
    resource: {name: cpu, current: {averageUtilization: 62, averageValue: 310m}}
  - type: Pods
    pods: {metric: {name: packets-per-second}, current: {averageValue: "1200"}}
  - type: Object
    object:
      metric: {name: requests-per-second}
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main-route}
      current: {value: 11k}
`, `
metadata: {name: external-queue}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  maxReplicas: 30
  metrics:
  - type: External
    external:
      metric:
        name: queue_messages_ready
        selector:
          matchLabels: {queue: worker_tasks}
          matchExpressions: [{key: tier, operator: In, values: [gold, silver]}]
      target: {type: AverageValue, averageValue: "30"}
  - type: External
    external:
      metric: {name: backlog}
      target: {type: Value, value: "100"}
  - type: Object
    object:
      metric: {name: lag, selector: {matchLabels: {topic: orders}}}
      describedObject: {kind: Service, name: kafka}
      target: {type: AverageValue, averageValue: "5"}
status:
  desiredReplicas: 2
  currentMetrics:
  - type: External
    external: {metric: {name: queue_messages_ready}, current: {averageValue: "25"}}
  - type: External
    external: {metric: {name: backlog}, current: {value: "80"}}
  - type: Object
    object: {metric: {name: lag}, describedObject: {kind: Service, name: kafka}, current: {value: "12", averageValue: "6"}}
`, `
metadata: {name: container-memory}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 8
  metrics:
  - type: ContainerResource
    containerResource: {name: cpu, container: application, target: {type: Utilization, averageUtilization: 60}}
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}
  - type: Resource
    resource: {name: cpu, target: {type: AverageValue, averageValue: 500m}}
status:
  currentReplicas: 2
  desiredReplicas: 2
  currentMetrics:
  - type: ContainerResource
    containerResource: {name: cpu, container: application, current: {averageUtilization: 40, averageValue: 200m}}
  - type: Resource
    resource: {name: memory, current: {averageValue: 300Mi}}
`, `
metadata: {name: behavior}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 20
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 300
      selectPolicy: Min
      policies:
      - {type: Pods, value: 4, periodSeconds: 60}
      - {type: Percent, value: 10, periodSeconds: 60}
    scaleUp:
      tolerance: 50m
      selectPolicy: Disabled
`, `
metadata: {name: two-cpu-utilizations}
spec:
  scaleTargetRef: {kind: StatefulSet, name: db}
  maxReplicas: 5
  metrics:
  - type: Pods
    pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: "10"}}
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 40}}
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 90}}
status:
  desiredReplicas: 1
  currentMetrics:
  - type: Resource
    resource: {name: cpu, current: {averageUtilization: 30, averageValue: 100m}}
  - type: Resource
    resource: {name: cpu, current: {averageUtilization: 35, averageValue: 120m}}
`}

// v1Cases are autoscaling/v1 HPAs: the walkthrough's `kubectl autoscale`
// output, one with no target (kube's 80% default), and objects as a v1
// client writes back what it read of a v2 HPA (kube's annotations).
var v1Cases = []string{`
metadata: {name: php-apache-v1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: php-apache}
  minReplicas: 1
  maxReplicas: 10
  targetCPUUtilizationPercentage: 50
status:
  currentReplicas: 1
  desiredReplicas: 1
  currentCPUUtilizationPercentage: 0
`, `
metadata: {name: no-target}
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  maxReplicas: 3
`, `
metadata:
  name: annotated
  annotations:
    team: web
    autoscaling.alpha.kubernetes.io/metrics: '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},{"type":"External","external":{"metricName":"backlog","targetValue":"100"}},{"type":"Object","object":{"target":{"kind":"Service","name":"kafka"},"metricName":"lag","targetValue":"0","averageValue":"5"}},{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]'
    autoscaling.alpha.kubernetes.io/behavior: '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":50,"PeriodSeconds":30}],"Tolerance":null}}'
    autoscaling.alpha.kubernetes.io/current-metrics: '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":20,"currentAverageValue":"50m"}}]'
    autoscaling.alpha.kubernetes.io/conditions: '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z","reason":"ReadyForNewScale"}]'
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 12
  targetCPUUtilizationPercentage: 75
`, `
metadata:
  name: broken-annotations
  annotations:
    autoscaling.alpha.kubernetes.io/metrics: 'not json'
    autoscaling.alpha.kubernetes.io/behavior: '{"scaleDown":{"stabilizationWindowSeconds":30}}'
    autoscaling.alpha.kubernetes.io/scale-up-tolerance: '"1"'
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  maxReplicas: 4
`}

func decode[T any](t *testing.T, doc string) *T {
	t.Helper()
	out := new(T)
	if err := yaml.UnmarshalStrict([]byte(doc), out); err != nil {
		t.Fatalf("case %s: %v", doc, err)
	}
	return out
}

// convert is kube's scheme converting in to a new out.
func convert[T any](t *testing.T, in runtime.Object) *T {
	t.Helper()
	out := new(T)
	if err := legacyscheme.Scheme.Convert(in, any(out), nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// kubeDecode is what kube makes of a request's object: its version's
// defaults, then the internal type.
func kubeDecode(t *testing.T, obj runtime.Object) *autoscaling.HorizontalPodAutoscaler {
	t.Helper()
	obj = obj.DeepCopyObject()
	legacyscheme.Scheme.Default(obj)
	return convert[autoscaling.HorizontalPodAutoscaler](t, obj)
}

// kubeRead is what kube answers for internal as stored: v2 with v2's
// defaults (its decoder's, reading storage), and v1 from that.
func kubeRead(t *testing.T, internal *autoscaling.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	v2 := convert[autoscalingv2.HorizontalPodAutoscaler](t, internal)
	legacyscheme.Scheme.Default(v2)
	v1 := convert[autoscalingv1.HorizontalPodAutoscaler](t, kubeDecode(t, v2))
	return v1, v2
}

// semantic compares quantities and times by value.
var semantic = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) }),
}

// content is the part of an HPA conversion decides: annotations (kube's
// round-trip ones included), spec and status.
type content struct {
	Annotations  map[string]string
	Spec, Status any
}

func contentV1(o *autoscalingv1.HorizontalPodAutoscaler) content {
	return content{annotations(o), o.Spec, o.Status}
}

func contentV2(o *autoscalingv2.HorizontalPodAutoscaler) content {
	return content{annotations(o), o.Spec, o.Status}
}

// annotations are o's, none as nil: JSON does not tell an empty map from none.
func annotations(o metav1.Object) map[string]string {
	if len(o.GetAnnotations()) == 0 {
		return nil
	}
	return o.GetAnnotations()
}

func check(t *testing.T, what string, want, got content) {
	t.Helper()
	if diff := cmp.Diff(want, got, semantic); diff != "" {
		t.Errorf("%s (-kube +listwatch):\n%s", what, diff)
	}
}

// viaJSON converts between a typed object and listwatch's.
func viaJSON(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

func object(t *testing.T, in any) api.Object {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	o, err := api.ParseObject(b)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestConversionAsKube converts each case with listwatch's FromStorage and
// ToStorage, status included (a write through the server resets it), and
// compares with kube's conversion: a stored v2 object read as v1, and a v1
// object stored (as v2) then read in both versions.
func TestConversionAsKube(t *testing.T) {
	v1, ctx := interop.Builtin(t, "autoscaling", "v1", "horizontalpodautoscalers"), context.Background()
	for _, doc := range v2Cases {
		in := decode[autoscalingv2.HorizontalPodAutoscaler](t, doc)
		in.APIVersion, in.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
		wantV1, stored := kubeRead(t, kubeDecode(t, in))
		got, err := v1.FromStorage(ctx, object(t, stored))
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		var gotV1 autoscalingv1.HorizontalPodAutoscaler
		viaJSON(t, got, &gotV1)
		check(t, in.Name+" read as v1", contentV1(wantV1), contentV1(&gotV1))
	}
	for _, doc := range v1Cases {
		in := decode[autoscalingv1.HorizontalPodAutoscaler](t, doc)
		in.APIVersion, in.Kind = "autoscaling/v1", "HorizontalPodAutoscaler"
		wantV1, wantV2 := kubeRead(t, kubeDecode(t, in))
		defaulted := in.DeepCopy()
		legacyscheme.Scheme.Default(defaulted) // the server defaults a request first
		stored, err := v1.ToStorage(ctx, object(t, defaulted))
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		var gotV2 autoscalingv2.HorizontalPodAutoscaler
		viaJSON(t, stored, &gotV2)
		check(t, in.Name+" stored, read as v2", contentV2(wantV2), contentV2(&gotV2))
		got, err := v1.FromStorage(ctx, stored)
		if err != nil {
			t.Fatalf("%s: %v", in.Name, err)
		}
		var gotV1 autoscalingv1.HorizontalPodAutoscaler
		viaJSON(t, got, &gotV1)
		check(t, in.Name+" stored, read as v1", contentV1(wantV1), contentV1(&gotV1))
	}
}

// clients are client-go's typed clients of the binary, in protobuf (as
// client-go asks for built-in kinds) and JSON.
func clients(t *testing.T) (proto, js *kubernetes.Clientset) {
	t.Helper()
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	var err error
	for _, c := range []struct {
		cs          **kubernetes.Clientset
		contentType string
	}{{&proto, "application/vnd.kubernetes.protobuf"}, {&js, "application/json"}} {
		cfg := &rest.Config{Host: lw.URL, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: c.contentType}}
		if *c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	return proto, js
}

// added collects the ADDED events of a watch until it has n objects.
func added[T metav1.Object](t *testing.T, w watch.Interface, n int) map[string]T {
	t.Helper()
	got := map[string]T{}
	for len(got) < n {
		e, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch ended after %d of %d objects", len(got), n)
		}
		if e.Type != watch.Added {
			t.Fatalf("watch event %s: %+v", e.Type, e.Object)
		}
		o := e.Object.(T)
		got[o.GetName()] = o
	}
	return got
}

// TestTypedClientsAcrossVersions creates every case through the binary with
// client-go's typed client of its version, and reads (get, protobuf) and
// watches (v1 in protobuf, v2 in JSON) each in both versions: every answer equals what kube
// stores for the request (its version's defaults, status reset by the
// strategy) read in that version.
func TestTypedClientsAcrossVersions(t *testing.T) {
	proto, js := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	const ns = "default"
	w1, err := proto.AutoscalingV1().HorizontalPodAutoscalers(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Stop()
	w2, err := js.AutoscalingV2().HorizontalPodAutoscalers(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	wantV1 := map[string]*autoscalingv1.HorizontalPodAutoscaler{}
	wantV2 := map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	wantCells := map[string]string{}
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	expect := func(name string, obj runtime.Object) {
		internal := kubeDecode(t, obj)
		internal.Status = autoscaling.HorizontalPodAutoscalerStatus{} // PrepareForCreate
		wantV1[name], wantV2[name] = kubeRead(t, internal)
		// kube prints what it reads from storage, whatever the version asked.
		table, err := gen.GenerateTable(kubeDecode(t, wantV2[name]), printers.GenerateOptions{Wide: true})
		if err != nil {
			t.Fatal(err)
		}
		wantCells[name] = cellsBeforeAge(t, table.Rows[0].Cells)
	}
	for _, doc := range v2Cases {
		in := decode[autoscalingv2.HorizontalPodAutoscaler](t, doc)
		expect(in.Name, in)
		if _, err := proto.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, in, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create v2 %s: %v", in.Name, err)
		}
	}
	for _, doc := range v1Cases {
		in := decode[autoscalingv1.HorizontalPodAutoscaler](t, doc)
		expect(in.Name, in)
		if _, err := proto.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, in, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create v1 %s: %v", in.Name, err)
		}
	}

	watched1 := added[*autoscalingv1.HorizontalPodAutoscaler](t, w1, len(wantV1))
	watched2 := added[*autoscalingv2.HorizontalPodAutoscaler](t, w2, len(wantV2))
	for name := range wantV1 {
		got1, err := proto.AutoscalingV1().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got2, err := proto.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, name+": get v1", contentV1(wantV1[name]), contentV1(got1))
		check(t, name+": get v2", contentV2(wantV2[name]), contentV2(got2))
		check(t, name+": watch v1", contentV1(wantV1[name]), contentV1(watched1[name]))
		check(t, name+": watch v2", contentV2(wantV2[name]), contentV2(watched2[name]))
		if got1.ResourceVersion != got2.ResourceVersion || got1.UID != got2.UID {
			t.Errorf("%s: v1 and v2 are not one object: %s/%s and %s/%s", name, got1.UID, got1.ResourceVersion, got2.UID, got2.ResourceVersion)
		}
	}
	for _, version := range []string{"v1", "v2"} {
		rows := tableRows(ctx, t, js, version)
		if len(rows) != len(wantCells) {
			t.Errorf("%s Table has %d rows, want %d", version, len(rows), len(wantCells))
		}
		for name, got := range rows {
			if want := wantCells[name]; got != want {
				t.Errorf("%s Table of %s:\nkube %s\nours %s", version, name, want, got)
			}
		}
	}
}

// tableRows are the cells but Age of the rows of the version's Table of
// HPAs, by name, as the server answers client-go's REST client.
func tableRows(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, version string) map[string]string {
	t.Helper()
	rc := cs.AutoscalingV1().RESTClient()
	if version == "v2" {
		rc = cs.AutoscalingV2().RESTClient()
	}
	raw, err := rc.Get().Namespace("default").Resource("horizontalpodautoscalers").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		t.Fatalf("%s Table: %v", version, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, r := range table.Rows {
		rows[r.Cells[0].(string)] = cellsBeforeAge(t, r.Cells)
	}
	return rows
}

// cellsBeforeAge are a row's cells but the last (Age: the two servers'
// clocks differ), as JSON.
func cellsBeforeAge(t *testing.T, cells []any) string {
	t.Helper()
	b, err := json.Marshal(cells[:len(cells)-1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWritesAcrossVersions: a status written through v2 (as kube's HPA
// controller writes it) is read through v1 as kube converts it; a v1
// update that changes only the metrics kept in its annotation changes v2's
// metrics and bumps the generation (kube compares internal specs), and
// keeps the status.
func TestWritesAcrossVersions(t *testing.T) {
	proto, _ := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	hpas1, hpas2 := proto.AutoscalingV1().HorizontalPodAutoscalers("default"), proto.AutoscalingV2().HorizontalPodAutoscalers("default")
	full := decode[autoscalingv2.HorizontalPodAutoscaler](t, v2Cases[1])
	created, err := hpas2.Create(ctx, full, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = full.Status
	written, err := hpas2.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantV1, _ := kubeRead(t, kubeDecode(t, full)) // the status strategy keeps the request's

	got1, err := hpas1.Get(ctx, full.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "status written as v2, read as v1", contentV1(wantV1), contentV1(got1))

	// The v1 client drops the Object metric from the annotation.
	var metrics []autoscalingv1.MetricSpec
	if err := json.Unmarshal([]byte(got1.Annotations[autoscaling.MetricSpecsAnnotation]), &metrics); err != nil || len(metrics) != 2 {
		t.Fatalf("metrics annotation %q: %v", got1.Annotations[autoscaling.MetricSpecsAnnotation], err)
	}
	b, _ := json.Marshal(metrics[:1])
	got1.Annotations[autoscaling.MetricSpecsAnnotation] = string(b)
	delete(got1.Annotations, autoscaling.HorizontalPodAutoscalerConditionsAnnotation) // status is the server's
	if _, err := hpas1.Update(ctx, got1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got2, err := hpas2.Get(ctx, full.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got2.Spec.Metrics) != 2 || got2.Spec.Metrics[0].Type != autoscalingv2.PodsMetricSourceType || got2.Spec.Metrics[1].Resource == nil {
		t.Errorf("v2 metrics after the v1 update: %+v", got2.Spec.Metrics)
	}
	if got2.Generation != written.Generation+1 {
		t.Errorf("generation %d after a v1 update of the metrics, want %d", got2.Generation, written.Generation+1)
	}
	if diff := cmp.Diff(written.Status, got2.Status, semantic); diff != "" {
		t.Errorf("status after a v1 update (-before +after):\n%s", diff)
	}

	// A v2 update drops v1's annotations, as kube's v2 conversion does.
	got2.Spec.MaxReplicas++
	got2.Annotations = map[string]string{autoscaling.MetricSpecsAnnotation: "[]", autoscaling.ToleranceScaleUpAnnotation: "1", "team": "web"}
	updated, err := hpas2.Update(ctx, got2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"team": "web"}; !cmp.Equal(updated.Annotations, want) || updated.Generation != got2.Generation+1 {
		t.Errorf("after a v2 update: annotations %v, generation %d; want %v, %d", updated.Annotations, updated.Generation, want, got2.Generation+1)
	}
}
