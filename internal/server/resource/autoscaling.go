package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/defaulting"
)

// HorizontalPodAutoscalers are stored once, in autoscaling/v2's form (kube's
// storage version for both versions: discovery gives both v2's
// storageVersionHash), and autoscaling/v1 reads and writes them converted
// as kube's pkg/apis/autoscaling/v1 conversion does through the internal
// type: v1's targetCPUUtilizationPercentage is v2's first Resource metric of
// cpu utilization, and what v1 has no field for (the other metrics, the
// current metrics, behavior and conditions) travels in v1 in annotations.
// The conversion works on typed mirrors of the two versions' Go types, so
// that the annotations' JSON is encoding/json's of kube's types: their
// fields in kube's order, behavior under the internal type's Go names.
// Quantities and times keep their text, as everywhere in the server (kube
// writes them canonical).

// kube's round-trip annotations (pkg/apis/autoscaling/annotations.go).
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// hpaRoundTripAnnotations are those DropRoundTripHorizontalPodAutoscalerAnnotations
// removes from every object converted from or to either version.
var hpaRoundTripAnnotations = []string{
	hpaMetricsAnnotation, hpaBehaviorAnnotation,
	"autoscaling.alpha.kubernetes.io/scale-down-tolerance", "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
	hpaCurrentMetricsAnnotation, hpaConditionsAnnotation,
}

// hpaDefaultCPUUtilization is kube's DefaultCPUUtilization: the metric of a
// v1 HPA with none.
const hpaDefaultCPUUtilization = 80

// horizontalPodAutoscalers are autoscaling/v2 HPAs, the stored form, and
// autoscaling/v1 ones converted from and to it, both printed as kube prints
// its internal type.
func horizontalPodAutoscalers() []*Resource {
	columns := hpaColumns(hpaTargets)
	v2 := &Resource{
		Group: "autoscaling", Version: "v2", Plural: "horizontalpodautoscalers",
		Prepare: dropHPARoundTrip,
		Columns: columns,
	}
	v1 := &Resource{
		Group: "autoscaling", Version: "v1", Plural: "horizontalpodautoscalers",
		Storage: v2, FromStorage: hpaFromV2, ToStorage: hpaToV2,
		Prepare: prepareHPAv1,
		Columns: convertedColumns(columns, hpaV2View), PrintStored: true,
	}
	return []*Resource{v2, v1}
}

// prepareHPAv1 keeps the status kube's strategies keep, in the annotations
// that hold the part of it v1 has no field for: none on create (status is
// reset), the stored object's on update (status is kept; a status write
// keeps the stored metadata). It bumps the generation when only the spec's
// annotations changed (kube compares internal specs; the registry compares
// v1's fields).
func prepareHPAv1(obj, old api.Object) {
	ann, _ := obj.Metadata()["annotations"].(map[string]any)
	var was map[string]any
	if old != nil {
		was, _ = old.Metadata()["annotations"].(map[string]any)
	}
	for _, k := range []string{hpaCurrentMetricsAnnotation, hpaConditionsAnnotation} {
		if v, ok := was[k]; ok {
			if ann == nil {
				ann = map[string]any{}
				obj.Metadata()["annotations"] = ann
			}
			ann[k] = v
		} else {
			delete(ann, k)
		}
	}
	if old == nil || !sameJSON(obj["spec"], old["spec"]) {
		return // the registry bumps a v1 spec's change
	}
	next, errNext := hpaToV2(context.Background(), obj)
	cur, errCur := hpaToV2(context.Background(), old)
	if errNext == nil && errCur == nil && !sameJSON(next["spec"], cur["spec"]) {
		obj.Metadata()["generation"] = GenerationOf(old) + 1
	}
}

// dropHPARoundTrip removes kube's round-trip annotations from obj, a v2
// object about to be written, in place (the registry holds its metadata),
// as kube's v2 conversion drops them.
func dropHPARoundTrip(obj, _ api.Object) {
	md := obj.Metadata()
	ann, _ := md["annotations"].(map[string]any)
	for _, k := range hpaRoundTripAnnotations {
		delete(ann, k)
	}
	if ann != nil && len(ann) == 0 {
		delete(md, "annotations")
	}
}

// hpaMetadata is a copy of o's metadata, its annotations a new map without
// kube's round-trip annotations (nil when none are left).
func hpaMetadata(o api.Object) (md, ann map[string]any) {
	md = copyMap(o.Metadata())
	delete(md, "annotations")
	was, _ := o.Metadata()["annotations"].(map[string]any)
	for k, v := range was {
		if !slices.Contains(hpaRoundTripAnnotations, k) {
			if ann == nil {
				ann = map[string]any{}
			}
			ann[k] = v
		}
	}
	if ann != nil {
		md["annotations"] = ann
	}
	return md, ann
}

// hpaV2View is a v1 HPA as v2, for the printers: o itself if it is a v2
// one (the stored form) or does not convert (a served v1 object came from
// a v2 one, so it does).
func hpaV2View(o api.Object) api.Object {
	if o["apiVersion"] == "autoscaling/v2" {
		return o
	}
	v2, err := hpaToV2(context.Background(), o)
	if err != nil {
		return o
	}
	return v2
}

// hpaToV2 is kube's conversion of a v1 HPA to the internal type and on to
// v2, with v2's defaults, which kube applies to every v2 object it reads.
func hpaToV2(_ context.Context, o api.Object) (api.Object, error) {
	var spec hpaV1Spec
	var status hpaV1Status
	if err := remarshal(o["spec"], &spec); err != nil {
		return nil, fmt.Errorf("converting HorizontalPodAutoscaler spec: %w", err)
	}
	if err := remarshal(o["status"], &status); err != nil {
		return nil, fmt.Errorf("converting HorizontalPodAutoscaler status: %w", err)
	}
	md, _ := hpaMetadata(o)
	ann := o.Annotations()

	s := hpaSpec{ScaleTargetRef: spec.ScaleTargetRef, MinReplicas: spec.MinReplicas, MaxReplicas: spec.MaxReplicas}
	if spec.TargetCPUUtilizationPercentage != nil {
		s.Metrics = []hpaMetricSpec{cpuUtilization(*spec.TargetCPUUtilizationPercentage)}
	}
	if enc, ok := ann[hpaMetricsAnnotation]; ok {
		var other []hpaV1MetricSpec
		if json.Unmarshal([]byte(enc), &other) == nil {
			metrics := make([]hpaMetricSpec, 0, len(other)+len(s.Metrics))
			for _, m := range other {
				metrics = append(metrics, m.toV2())
			}
			s.Metrics = append(metrics, s.Metrics...)
		}
	}
	if enc, ok := ann[hpaBehaviorAnnotation]; ok {
		var b hpaInternalBehavior
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			s.Behavior = &hpaBehavior{ScaleUp: b.ScaleUp.toV2(), ScaleDown: b.ScaleDown.toV2()}
		}
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []hpaMetricSpec{cpuUtilization(hpaDefaultCPUUtilization)}
	}

	st := hpaStatus{
		ObservedGeneration: status.ObservedGeneration, LastScaleTime: status.LastScaleTime,
		CurrentReplicas: status.CurrentReplicas, DesiredReplicas: status.DesiredReplicas,
	}
	if cpu := status.CurrentCPUUtilizationPercentage; cpu != nil {
		st.CurrentMetrics = []hpaMetricStatus{{Type: "Resource", Resource: &hpaResourceMetricStatus{Name: "cpu", Current: hpaValueStatus{AverageUtilization: cpu}}}}
	}
	if enc, ok := ann[hpaCurrentMetricsAnnotation]; ok {
		var current []hpaV1MetricStatus
		if json.Unmarshal([]byte(enc), &current) == nil {
			st.CurrentMetrics = make([]hpaMetricStatus, len(current))
			for i, m := range current {
				st.CurrentMetrics[i] = m.toV2()
			}
		}
	}
	if enc, ok := ann[hpaConditionsAnnotation]; ok {
		var conditions []hpaCondition
		if json.Unmarshal([]byte(enc), &conditions) == nil {
			st.Conditions = conditions
		}
	}
	out, err := hpaObject(o, "autoscaling/v2", md, s, st)
	if err != nil {
		return nil, err
	}
	hpaV2Defaults(out)
	return out, nil
}

var hpaV2Defaults = defaulting.For("autoscaling", "v2", "HorizontalPodAutoscaler")

// hpaFromV2 is kube's conversion of a v2 HPA to the internal type and on to
// v1. A v1 object is already converted: the watch cache decodes an object
// again from the JSON it served.
func hpaFromV2(_ context.Context, o api.Object) (api.Object, error) {
	if o.APIVersion() == "autoscaling/v1" {
		return o, nil
	}
	var spec hpaSpec
	var status hpaStatus
	if err := remarshal(o["spec"], &spec); err != nil {
		return nil, fmt.Errorf("converting HorizontalPodAutoscaler spec: %w", err)
	}
	if err := remarshal(o["status"], &status); err != nil {
		return nil, fmt.Errorf("converting HorizontalPodAutoscaler status: %w", err)
	}
	md, ann := hpaMetadata(o)
	if ann == nil {
		ann = map[string]any{}
	}

	s := hpaV1Spec{ScaleTargetRef: spec.ScaleTargetRef, MinReplicas: spec.MinReplicas, MaxReplicas: spec.MaxReplicas}
	var other []hpaV1MetricSpec
	for _, m := range spec.Metrics {
		if m.isCPUUtilization() {
			if s.TargetCPUUtilizationPercentage == nil {
				s.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
			}
			continue
		}
		other = append(other, m.toV1())
	}
	st := hpaV1Status{
		ObservedGeneration: status.ObservedGeneration, LastScaleTime: status.LastScaleTime,
		CurrentReplicas: status.CurrentReplicas, DesiredReplicas: status.DesiredReplicas,
	}
	current := make([]hpaV1MetricStatus, len(status.CurrentMetrics))
	for i, m := range status.CurrentMetrics {
		// The last cpu utilization wins, as in kube's loop.
		if m.Type == "Resource" && m.Resource != nil && m.Resource.Name == "cpu" && m.Resource.Current.AverageUtilization != nil {
			st.CurrentCPUUtilizationPercentage = m.Resource.Current.AverageUtilization
		}
		current[i] = m.toV1()
	}

	annotate := func(key string, v any) error {
		b, err := json.Marshal(v)
		ann[key] = string(b)
		return err
	}
	var err error
	if len(other) > 0 {
		err = annotate(hpaMetricsAnnotation, other)
	}
	if len(current) > 0 && err == nil {
		err = annotate(hpaCurrentMetricsAnnotation, current)
	}
	if spec.Behavior != nil && err == nil {
		err = annotate(hpaBehaviorAnnotation, hpaInternalBehavior{spec.Behavior.ScaleUp.toInternal(), spec.Behavior.ScaleDown.toInternal()})
	}
	if len(status.Conditions) > 0 && err == nil {
		err = annotate(hpaConditionsAnnotation, status.Conditions)
	}
	if err != nil {
		return nil, fmt.Errorf("converting HorizontalPodAutoscaler: %w", err)
	}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	return hpaObject(o, "autoscaling/v1", md, s, st)
}

// hpaObject is o in apiVersion with metadata md, spec and status.
func hpaObject(o api.Object, apiVersion string, md map[string]any, spec, status any) (api.Object, error) {
	out := api.Object{"apiVersion": apiVersion, "kind": o["kind"], "metadata": md}
	for k, v := range map[string]any{"spec": spec, "status": status} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("converting HorizontalPodAutoscaler %s: %w", k, err)
		}
		obj, err := api.ParseObject(b)
		if err != nil {
			return nil, fmt.Errorf("converting HorizontalPodAutoscaler %s: %w", k, err)
		}
		out[k] = map[string]any(obj)
	}
	return out, nil
}

// remarshal decodes v, a decoded object's value, into out as encoding/json
// decodes it (nil leaves out as it is).
func remarshal(v, out any) error {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cpuUtilization(percent int32) hpaMetricSpec {
	return hpaMetricSpec{Type: "Resource", Resource: &hpaResourceMetricSource{
		Name: "cpu", Target: hpaMetricTarget{Type: "Utilization", AverageUtilization: &percent},
	}}
}

func (m hpaMetricSpec) isCPUUtilization() bool {
	return m.Type == "Resource" && m.Resource != nil && m.Resource.Name == "cpu" && m.Resource.Target.AverageUtilization != nil
}

// hpaQuantity is a resource.Quantity in JSON: a string or a number, null for
// zero, its text kept; zero is written "0", as kube writes a zero Quantity.
type hpaQuantity string

func (q hpaQuantity) MarshalJSON() ([]byte, error) {
	if q == "" {
		return []byte(`"0"`), nil
	}
	return json.Marshal(string(q))
}

func (q *hpaQuantity) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*q = ""
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	if _, ok := defaulting.ParseQuantity(s); !ok {
		return fmt.Errorf("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	}
	*q = hpaQuantity(s)
	return nil
}

func (q hpaQuantity) isZero() bool {
	v, ok := defaulting.ParseQuantity(string(q))
	return q == "" || ok && v.IsZero()
}

// ptrTo is a pointer to a copy of q.
func ptrTo(q hpaQuantity) *hpaQuantity { return &q }

// deref is *q, or zero for nil.
func deref(q *hpaQuantity) hpaQuantity {
	if q == nil {
		return ""
	}
	return *q
}

// The Go types of autoscaling/v2 (k8s.io/api/autoscaling/v2) that conversion
// reads and writes, with their JSON tags.

type hpaRef struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type hpaLabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

type hpaLabelSelector struct {
	MatchLabels      map[string]string             `json:"matchLabels,omitempty"`
	MatchExpressions []hpaLabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

type hpaSpec struct {
	ScaleTargetRef hpaRef          `json:"scaleTargetRef"`
	MinReplicas    *int32          `json:"minReplicas,omitempty"`
	MaxReplicas    int32           `json:"maxReplicas"`
	Metrics        []hpaMetricSpec `json:"metrics,omitempty"`
	Behavior       *hpaBehavior    `json:"behavior,omitempty"`
}

type hpaBehavior struct {
	ScaleUp   *hpaScalingRules `json:"scaleUp,omitempty"`
	ScaleDown *hpaScalingRules `json:"scaleDown,omitempty"`
}

type hpaScalingRules struct {
	StabilizationWindowSeconds *int32             `json:"stabilizationWindowSeconds,omitempty"`
	SelectPolicy               *string            `json:"selectPolicy,omitempty"`
	Policies                   []hpaScalingPolicy `json:"policies,omitempty"`
	Tolerance                  *hpaQuantity       `json:"tolerance,omitempty"`
}

type hpaScalingPolicy struct {
	Type          string `json:"type"`
	Value         int32  `json:"value"`
	PeriodSeconds int32  `json:"periodSeconds"`
}

type hpaMetricSpec struct {
	Type              string                            `json:"type"`
	Object            *hpaObjectMetricSource            `json:"object,omitempty"`
	Pods              *hpaPodsMetricSource              `json:"pods,omitempty"`
	Resource          *hpaResourceMetricSource          `json:"resource,omitempty"`
	ContainerResource *hpaContainerResourceMetricSource `json:"containerResource,omitempty"`
	External          *hpaExternalMetricSource          `json:"external,omitempty"`
}

type hpaMetricIdentifier struct {
	Name     string            `json:"name"`
	Selector *hpaLabelSelector `json:"selector,omitempty"`
}

type hpaMetricTarget struct {
	Type               string       `json:"type"`
	Value              *hpaQuantity `json:"value,omitempty"`
	AverageValue       *hpaQuantity `json:"averageValue,omitempty"`
	AverageUtilization *int32       `json:"averageUtilization,omitempty"`
}

type hpaObjectMetricSource struct {
	DescribedObject hpaRef              `json:"describedObject"`
	Target          hpaMetricTarget     `json:"target"`
	Metric          hpaMetricIdentifier `json:"metric"`
}

type hpaPodsMetricSource struct {
	Metric hpaMetricIdentifier `json:"metric"`
	Target hpaMetricTarget     `json:"target"`
}

type hpaResourceMetricSource struct {
	Name   string          `json:"name"`
	Target hpaMetricTarget `json:"target"`
}

type hpaContainerResourceMetricSource struct {
	Name      string          `json:"name"`
	Target    hpaMetricTarget `json:"target"`
	Container string          `json:"container"`
}

type hpaExternalMetricSource struct {
	Metric hpaMetricIdentifier `json:"metric"`
	Target hpaMetricTarget     `json:"target"`
}

type hpaStatus struct {
	ObservedGeneration *int64            `json:"observedGeneration,omitempty"`
	LastScaleTime      *string           `json:"lastScaleTime,omitempty"`
	CurrentReplicas    int32             `json:"currentReplicas,omitempty"`
	DesiredReplicas    int32             `json:"desiredReplicas"`
	CurrentMetrics     []hpaMetricStatus `json:"currentMetrics"`
	Conditions         []hpaCondition    `json:"conditions,omitempty"`
}

// hpaCondition is a condition of either version (their fields are alike); a
// zero lastTransitionTime is null, as kube writes a zero Time.
type hpaCondition struct {
	Type               string  `json:"type"`
	Status             string  `json:"status"`
	LastTransitionTime *string `json:"lastTransitionTime"`
	Reason             string  `json:"reason,omitempty"`
	Message            string  `json:"message,omitempty"`
	ObservedGeneration *int64  `json:"observedGeneration,omitempty"`
}

type hpaMetricStatus struct {
	Type              string                            `json:"type"`
	Object            *hpaObjectMetricStatus            `json:"object,omitempty"`
	Pods              *hpaPodsMetricStatus              `json:"pods,omitempty"`
	Resource          *hpaResourceMetricStatus          `json:"resource,omitempty"`
	ContainerResource *hpaContainerResourceMetricStatus `json:"containerResource,omitempty"`
	External          *hpaExternalMetricStatus          `json:"external,omitempty"`
}

type hpaValueStatus struct {
	Value              *hpaQuantity `json:"value,omitempty"`
	AverageValue       *hpaQuantity `json:"averageValue,omitempty"`
	AverageUtilization *int32       `json:"averageUtilization,omitempty"`
}

type hpaObjectMetricStatus struct {
	Metric          hpaMetricIdentifier `json:"metric"`
	Current         hpaValueStatus      `json:"current"`
	DescribedObject hpaRef              `json:"describedObject"`
}

type hpaPodsMetricStatus struct {
	Metric  hpaMetricIdentifier `json:"metric"`
	Current hpaValueStatus      `json:"current"`
}

type hpaResourceMetricStatus struct {
	Name    string         `json:"name"`
	Current hpaValueStatus `json:"current"`
}

type hpaContainerResourceMetricStatus struct {
	Name      string         `json:"name"`
	Current   hpaValueStatus `json:"current"`
	Container string         `json:"container"`
}

type hpaExternalMetricStatus struct {
	Metric  hpaMetricIdentifier `json:"metric"`
	Current hpaValueStatus      `json:"current"`
}

// The internal type's behavior (k8s.io/kubernetes pkg/apis/autoscaling), as
// kube writes it to the behavior annotation: no JSON tags, so its Go names.

type hpaInternalBehavior struct {
	ScaleUp, ScaleDown *hpaInternalRules
}

type hpaInternalRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *string
	Policies                   []hpaInternalPolicy
	Tolerance                  *hpaQuantity
}

type hpaInternalPolicy struct {
	Type                 string
	Value, PeriodSeconds int32
}

func (r *hpaScalingRules) toInternal() *hpaInternalRules {
	if r == nil {
		return nil
	}
	out := &hpaInternalRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, hpaInternalPolicy(p))
	}
	return out
}

func (r *hpaInternalRules) toV2() *hpaScalingRules {
	if r == nil {
		return nil
	}
	out := &hpaScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, hpaScalingPolicy(p))
	}
	return out
}

// The Go types of autoscaling/v1 (k8s.io/api/autoscaling/v1), with their
// JSON tags: its fields, and the metrics its annotations hold.

type hpaV1Spec struct {
	ScaleTargetRef                 hpaRef `json:"scaleTargetRef"`
	MinReplicas                    *int32 `json:"minReplicas,omitempty"`
	MaxReplicas                    int32  `json:"maxReplicas"`
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

type hpaV1Status struct {
	ObservedGeneration              *int64  `json:"observedGeneration,omitempty"`
	LastScaleTime                   *string `json:"lastScaleTime,omitempty"`
	CurrentReplicas                 int32   `json:"currentReplicas"`
	DesiredReplicas                 int32   `json:"desiredReplicas"`
	CurrentCPUUtilizationPercentage *int32  `json:"currentCPUUtilizationPercentage,omitempty"`
}

type hpaV1MetricSpec struct {
	Type              string                              `json:"type"`
	Object            *hpaV1ObjectMetricSource            `json:"object,omitempty"`
	Pods              *hpaV1PodsMetricSource              `json:"pods,omitempty"`
	Resource          *hpaV1ResourceMetricSource          `json:"resource,omitempty"`
	ContainerResource *hpaV1ContainerResourceMetricSource `json:"containerResource,omitempty"`
	External          *hpaV1ExternalMetricSource          `json:"external,omitempty"`
}

type hpaV1ObjectMetricSource struct {
	Target       hpaRef            `json:"target"`
	MetricName   string            `json:"metricName"`
	TargetValue  hpaQuantity       `json:"targetValue"`
	Selector     *hpaLabelSelector `json:"selector,omitempty"`
	AverageValue *hpaQuantity      `json:"averageValue,omitempty"`
}

type hpaV1PodsMetricSource struct {
	MetricName         string            `json:"metricName"`
	TargetAverageValue hpaQuantity       `json:"targetAverageValue"`
	Selector           *hpaLabelSelector `json:"selector,omitempty"`
}

type hpaV1ResourceMetricSource struct {
	Name                     string       `json:"name"`
	TargetAverageUtilization *int32       `json:"targetAverageUtilization,omitempty"`
	TargetAverageValue       *hpaQuantity `json:"targetAverageValue,omitempty"`
}

type hpaV1ContainerResourceMetricSource struct {
	Name                     string       `json:"name"`
	TargetAverageUtilization *int32       `json:"targetAverageUtilization,omitempty"`
	TargetAverageValue       *hpaQuantity `json:"targetAverageValue,omitempty"`
	Container                string       `json:"container"`
}

type hpaV1ExternalMetricSource struct {
	MetricName         string            `json:"metricName"`
	MetricSelector     *hpaLabelSelector `json:"metricSelector,omitempty"`
	TargetValue        *hpaQuantity      `json:"targetValue,omitempty"`
	TargetAverageValue *hpaQuantity      `json:"targetAverageValue,omitempty"`
}

type hpaV1MetricStatus struct {
	Type              string                              `json:"type"`
	Object            *hpaV1ObjectMetricStatus            `json:"object,omitempty"`
	Pods              *hpaV1PodsMetricStatus              `json:"pods,omitempty"`
	Resource          *hpaV1ResourceMetricStatus          `json:"resource,omitempty"`
	ContainerResource *hpaV1ContainerResourceMetricStatus `json:"containerResource,omitempty"`
	External          *hpaV1ExternalMetricStatus          `json:"external,omitempty"`
}

type hpaV1ObjectMetricStatus struct {
	Target       hpaRef            `json:"target"`
	MetricName   string            `json:"metricName"`
	CurrentValue hpaQuantity       `json:"currentValue"`
	Selector     *hpaLabelSelector `json:"selector,omitempty"`
	AverageValue *hpaQuantity      `json:"averageValue,omitempty"`
}

type hpaV1PodsMetricStatus struct {
	MetricName          string            `json:"metricName"`
	CurrentAverageValue hpaQuantity       `json:"currentAverageValue"`
	Selector            *hpaLabelSelector `json:"selector,omitempty"`
}

type hpaV1ResourceMetricStatus struct {
	Name                      string      `json:"name"`
	CurrentAverageUtilization *int32      `json:"currentAverageUtilization,omitempty"`
	CurrentAverageValue       hpaQuantity `json:"currentAverageValue"`
}

type hpaV1ContainerResourceMetricStatus struct {
	Name                      string      `json:"name"`
	CurrentAverageUtilization *int32      `json:"currentAverageUtilization,omitempty"`
	CurrentAverageValue       hpaQuantity `json:"currentAverageValue"`
	Container                 string      `json:"container"`
}

type hpaV1ExternalMetricStatus struct {
	MetricName          string            `json:"metricName"`
	MetricSelector      *hpaLabelSelector `json:"metricSelector,omitempty"`
	CurrentValue        hpaQuantity       `json:"currentValue"`
	CurrentAverageValue *hpaQuantity      `json:"currentAverageValue,omitempty"`
}

// utilizationOrValue is the target type of a v1 resource metric: kube's
// Utilization when it has a utilization, else AverageValue.
func utilizationOrValue(utilization *int32) string {
	if utilization == nil {
		return "AverageValue"
	}
	return "Utilization"
}

// toV2 is kube's Convert_v1_MetricSpec_To_autoscaling_MetricSpec.
func (m hpaV1MetricSpec) toV2() hpaMetricSpec {
	out := hpaMetricSpec{Type: m.Type}
	if s := m.Object; s != nil {
		t := hpaMetricTarget{Type: "Value", Value: ptrTo(s.TargetValue), AverageValue: s.AverageValue}
		if s.AverageValue != nil {
			// kube keeps a non-zero value only: v1 cannot omit it.
			t.Type, t.Value = "AverageValue", nil
			if !s.TargetValue.isZero() {
				t.Value = ptrTo(s.TargetValue)
			}
		}
		out.Object = &hpaObjectMetricSource{DescribedObject: s.Target, Target: t, Metric: hpaMetricIdentifier{s.MetricName, s.Selector}}
	}
	if s := m.Pods; s != nil {
		out.Pods = &hpaPodsMetricSource{
			Metric: hpaMetricIdentifier{s.MetricName, s.Selector},
			Target: hpaMetricTarget{Type: "AverageValue", AverageValue: ptrTo(s.TargetAverageValue)},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &hpaResourceMetricSource{Name: s.Name, Target: hpaMetricTarget{
			Type: utilizationOrValue(s.TargetAverageUtilization), AverageValue: s.TargetAverageValue, AverageUtilization: s.TargetAverageUtilization,
		}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &hpaContainerResourceMetricSource{Name: s.Name, Container: s.Container, Target: hpaMetricTarget{
			Type: utilizationOrValue(s.TargetAverageUtilization), AverageValue: s.TargetAverageValue, AverageUtilization: s.TargetAverageUtilization,
		}}
	}
	if s := m.External; s != nil {
		typ := "Value"
		if s.TargetValue == nil {
			typ = "AverageValue"
		}
		out.External = &hpaExternalMetricSource{
			Metric: hpaMetricIdentifier{s.MetricName, s.MetricSelector},
			Target: hpaMetricTarget{Type: typ, Value: s.TargetValue, AverageValue: s.TargetAverageValue},
		}
	}
	return out
}

// toV1 is kube's Convert_autoscaling_MetricSpec_To_v1_MetricSpec.
func (m hpaMetricSpec) toV1() hpaV1MetricSpec {
	out := hpaV1MetricSpec{Type: m.Type}
	if s := m.Object; s != nil {
		out.Object = &hpaV1ObjectMetricSource{
			Target: s.DescribedObject, MetricName: s.Metric.Name, Selector: s.Metric.Selector,
			TargetValue: deref(s.Target.Value), AverageValue: s.Target.AverageValue,
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &hpaV1PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector, TargetAverageValue: deref(s.Target.AverageValue)}
	}
	if s := m.Resource; s != nil {
		out.Resource = &hpaV1ResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &hpaV1ContainerResourceMetricSource{
			Name: s.Name, Container: s.Container, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue,
		}
	}
	if s := m.External; s != nil {
		out.External = &hpaV1ExternalMetricSource{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue,
		}
	}
	return out
}

// toV2 is kube's Convert_v1_MetricStatus_To_autoscaling_MetricStatus.
func (m hpaV1MetricStatus) toV2() hpaMetricStatus {
	out := hpaMetricStatus{Type: m.Type}
	if s := m.Object; s != nil {
		out.Object = &hpaObjectMetricStatus{
			Metric: hpaMetricIdentifier{s.MetricName, s.Selector}, DescribedObject: s.Target,
			Current: hpaValueStatus{Value: ptrTo(s.CurrentValue), AverageValue: s.AverageValue},
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &hpaPodsMetricStatus{Metric: hpaMetricIdentifier{s.MetricName, s.Selector}, Current: hpaValueStatus{AverageValue: ptrTo(s.CurrentAverageValue)}}
	}
	if s := m.Resource; s != nil {
		out.Resource = &hpaResourceMetricStatus{Name: s.Name, Current: hpaValueStatus{AverageValue: ptrTo(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &hpaContainerResourceMetricStatus{
			Name: s.Name, Container: s.Container,
			Current: hpaValueStatus{AverageValue: ptrTo(s.CurrentAverageValue), AverageUtilization: s.CurrentAverageUtilization},
		}
	}
	if s := m.External; s != nil {
		out.External = &hpaExternalMetricStatus{
			Metric:  hpaMetricIdentifier{s.MetricName, s.MetricSelector},
			Current: hpaValueStatus{Value: ptrTo(s.CurrentValue), AverageValue: s.CurrentAverageValue},
		}
	}
	return out
}

// toV1 is kube's Convert_autoscaling_MetricStatus_To_v1_MetricStatus.
func (m hpaMetricStatus) toV1() hpaV1MetricStatus {
	out := hpaV1MetricStatus{Type: m.Type}
	if s := m.Object; s != nil {
		out.Object = &hpaV1ObjectMetricStatus{
			Target: s.DescribedObject, MetricName: s.Metric.Name, Selector: s.Metric.Selector,
			CurrentValue: deref(s.Current.Value), AverageValue: s.Current.AverageValue,
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &hpaV1PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector, CurrentAverageValue: deref(s.Current.AverageValue)}
	}
	if s := m.Resource; s != nil {
		out.Resource = &hpaV1ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization, CurrentAverageValue: deref(s.Current.AverageValue)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &hpaV1ContainerResourceMetricStatus{
			Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization, CurrentAverageValue: deref(s.Current.AverageValue),
		}
	}
	if s := m.External; s != nil {
		out.External = &hpaV1ExternalMetricStatus{
			MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentValue: deref(s.Current.Value), CurrentAverageValue: s.Current.AverageValue,
		}
	}
	return out
}
