package protobuf_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// testCase is a typed object to compare; exact says our Encode of its JSON
// must give k8s.io/api's bytes (false where the JSON form loses what the
// protobuf bytes hold, see each case).
type testCase struct {
	name  string
	obj   runtime.Object
	exact bool
}

var (
	created  = metav1.NewTime(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	deleted  = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 999_999_999, time.FixedZone("X", 3600)))
	epoch    = metav1.NewTime(time.Unix(0, 0))
	before   = metav1.NewTime(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	micro    = metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 0, 123_456_789, time.UTC))
	fullMeta = metav1.ObjectMeta{
		Name: "name", GenerateName: "gen-", Namespace: "ns", SelfLink: "/api/v1/x", UID: "0b3f-uid",
		ResourceVersion: "12345", Generation: 7, CreationTimestamp: created, DeletionTimestamp: &deleted,
		DeletionGracePeriodSeconds: ptr[int64](30),
		Labels:                     map[string]string{"app": "web", "tier": "", "ünï/cödé": "✓", "a.b/c": "d"},
		Annotations:                map[string]string{"note": "multi\nline \"quoted\" <html> & \x00 nul"},
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1", Controller: ptr(true), BlockOwnerDeletion: ptr(false)},
			{},
		},
		Finalizers: []string{"kubernetes.io/pv-protection", ""},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &created,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:a":{},"k:{\"x\":1}":{}},"f:metadata":{}}`)},
				Subresource: "status"},
			{Manager: "m", Time: &epoch},
			{},
		},
	}
)

// cases returns every object the equivalence tests try.
func cases() []testCase {
	var cs []testCase
	add := func(name string, obj runtime.Object) { cs = append(cs, testCase{name, obj, true}) }
	addInexact := func(name string, obj runtime.Object) { cs = append(cs, testCase{name, obj, false}) }

	add("namespace/empty", &corev1.Namespace{})
	add("namespace/full", &corev1.Namespace{ObjectMeta: fullMeta,
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", ""}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
			{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, LastTransitionTime: created, Reason: "r", Message: "m"},
			{},
		}}})
	add("namespace/empty slices and maps", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{}, Annotations: map[string]string{}, Finalizers: []string{},
		OwnerReferences: []metav1.OwnerReference{}, ManagedFields: []metav1.ManagedFieldsEntry{}},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{}}})
	add("namespace/zero pointers", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		DeletionGracePeriodSeconds: ptr[int64](0), CreationTimestamp: epoch, DeletionTimestamp: &before}})
	add("namespace/extreme ints", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Generation: 1 << 53, DeletionGracePeriodSeconds: ptr[int64](-(1 << 53))}})

	add("configmap/empty", &corev1.ConfigMap{})
	add("configmap/full", &corev1.ConfigMap{ObjectMeta: fullMeta, Immutable: ptr(false),
		Data:       map[string]string{"a": "1", "": "empty key", "b": "", "日本": "語"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2, 0xfe, 0xff}, "empty": {}}})
	add("configmap/large maps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Labels: bigMap(500, 10)},
		Data: bigMap(2000, 300), BinaryData: map[string][]byte{"blob": randomBytes(1, 1<<17)}})
	add("configmap/immutable", &corev1.ConfigMap{Immutable: ptr(true)})

	add("secret/empty", &corev1.Secret{})
	add("secret/full", &corev1.Secret{ObjectMeta: fullMeta, Immutable: ptr(true), Type: corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": randomBytes(2, 700), "tls.key": randomBytes(3, 300), "zero": {0}, "empty": {}},
		StringData: map[string]string{"password": "hunter2", "": ""}})
	add("secret/binary", &corev1.Secret{Data: map[string][]byte{"all": allBytes()}})

	add("event/empty", &corev1.Event{})
	add("event/full", fullEvent())
	add("event/series without time", &corev1.Event{Series: &corev1.EventSeries{}, Related: &corev1.ObjectReference{},
		Count: math.MinInt32, EventTime: metav1.NewMicroTime(time.Unix(-1, 999_999_000))})
	add("event/micro epoch", &corev1.Event{EventTime: metav1.NewMicroTime(time.Unix(0, 0)), Count: math.MaxInt32})

	add("serviceaccount/empty", &corev1.ServiceAccount{})
	add("serviceaccount/full", &corev1.ServiceAccount{ObjectMeta: fullMeta, AutomountServiceAccountToken: ptr(false),
		Secrets: []corev1.ObjectReference{{Name: "token"}, {Kind: "Secret", Namespace: "ns", Name: "n", UID: "u", APIVersion: "v1",
			ResourceVersion: "7", FieldPath: "data"}, {}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}, {}}})
	add("serviceaccountlist", &corev1.ServiceAccountList{Items: []corev1.ServiceAccount{{AutomountServiceAccountToken: ptr(true)}, {}}})

	add("tokenrequest/empty", &authenticationv1.TokenRequest{})
	add("tokenrequest/full", &authenticationv1.TokenRequest{ObjectMeta: fullMeta,
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api", ""}, ExpirationSeconds: ptr[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s", UID: "u"}},
		Status: authenticationv1.TokenRequestStatus{Token: "a.b.c", ExpirationTimestamp: created}})
	add("tokenrequest/zero values", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences: []string{}, ExpirationSeconds: ptr[int64](0), BoundObjectRef: &authenticationv1.BoundObjectReference{}}})

	add("scale/empty", &autoscalingv1.Scale{})
	add("scale/full", &autoscalingv1.Scale{ObjectMeta: fullMeta, Spec: autoscalingv1.ScaleSpec{Replicas: 3},
		Status: autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=web,tier in (a,b)"}})
	add("scale/extremes", &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: math.MinInt32},
		Status: autoscalingv1.ScaleStatus{Replicas: math.MaxInt32}})

	add("events.k8s.io event/empty", &eventsv1.Event{})
	add("events.k8s.io event/full", fullEventV1())
	add("events.k8s.io event/zero values", &eventsv1.Event{Series: &eventsv1.EventSeries{}, Related: &corev1.ObjectReference{},
		DeprecatedCount: math.MinInt32, EventTime: metav1.NewMicroTime(time.Unix(-1, 999_999_000))})
	add("events.k8s.io eventlist", &eventsv1.EventList{Items: []eventsv1.Event{*fullEventV1(), {}}})

	add("lease/empty", &coordinationv1.Lease{})
	add("lease/full", fullLease())
	add("lease/zero values", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr(""),
		LeaseDurationSeconds: ptr[int32](0), LeaseTransitions: ptr[int32](math.MinInt32),
		AcquireTime: &metav1.MicroTime{Time: time.Unix(0, 0)}, RenewTime: &metav1.MicroTime{Time: time.Unix(-1, 999_999_000)}}})
	add("leaselist", &coordinationv1.LeaseList{Items: []coordinationv1.Lease{*fullLease(), {}}})

	add("role/empty", &rbacv1.Role{})
	add("role/full", &rbacv1.Role{ObjectMeta: fullMeta, Rules: fullRules()})
	add("role/empty rules", &rbacv1.Role{Rules: []rbacv1.PolicyRule{}})
	add("rolelist", &rbacv1.RoleList{Items: []rbacv1.Role{{Rules: fullRules()}, {}}})
	add("clusterrole/empty", &rbacv1.ClusterRole{})
	add("clusterrole/full", fullClusterRole())
	add("clusterrole/empty aggregation", &rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}})
	add("clusterrolelist", &rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{*fullClusterRole(), {}}})
	add("rolebinding/empty", &rbacv1.RoleBinding{})
	add("rolebinding/full", &rbacv1.RoleBinding{ObjectMeta: fullMeta, Subjects: fullSubjects(),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}})
	add("rolebindinglist", &rbacv1.RoleBindingList{Items: []rbacv1.RoleBinding{{Subjects: fullSubjects()}, {}}})
	add("clusterrolebinding/empty", &rbacv1.ClusterRoleBinding{})
	add("clusterrolebinding/full", &rbacv1.ClusterRoleBinding{ObjectMeta: fullMeta, Subjects: fullSubjects(),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:controller:x"}})
	add("clusterrolebinding/empty subjects", &rbacv1.ClusterRoleBinding{Subjects: []rbacv1.Subject{}})
	add("clusterrolebindinglist", &rbacv1.ClusterRoleBindingList{Items: []rbacv1.ClusterRoleBinding{{Subjects: fullSubjects()}, {}}})

	add("namespacelist/nil items", &corev1.NamespaceList{})
	add("namespacelist/empty items", &corev1.NamespaceList{Items: []corev1.Namespace{}})
	add("namespacelist/full", &corev1.NamespaceList{
		ListMeta: metav1.ListMeta{SelfLink: "/api/v1/namespaces", ResourceVersion: "99", Continue: "eyJ2IjoxfQ",
			RemainingItemCount: ptr[int64](0), ShardInfo: &metav1.ShardInfo{Selector: "shard=1"}},
		Items: []corev1.Namespace{{}, {ObjectMeta: fullMeta}}})
	add("configmaplist", &corev1.ConfigMapList{ListMeta: metav1.ListMeta{RemainingItemCount: ptr[int64](-5)},
		Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, {}}})
	add("secretlist", &corev1.SecretList{Items: []corev1.Secret{{Data: map[string][]byte{"k": {1}}}, {Type: "Opaque"}}})
	add("eventlist", &corev1.EventList{ListMeta: metav1.ListMeta{ShardInfo: &metav1.ShardInfo{}},
		Items: []corev1.Event{*fullEvent(), {}}})

	add("status/empty", &metav1.Status{})
	add("status/full", &metav1.Status{
		ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Status: metav1.StatusFailure, Message: "configmaps \"x\" not found",
		Reason: metav1.StatusReasonNotFound, Code: 404, Details: &metav1.StatusDetails{
			Name: "x", Group: "", Kind: "configmaps", UID: "u", RetryAfterSeconds: -3,
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: "bad", Field: "metadata.name"}, {}}}})
	add("status/empty details", &metav1.Status{Details: &metav1.StatusDetails{}})

	add("deleteoptions/empty", &metav1.DeleteOptions{})
	add("deleteoptions/full", &metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0),
		Preconditions:    &metav1.Preconditions{UID: ptr(types.UID("u")), ResourceVersion: ptr("")},
		OrphanDependents: ptr(false), PropagationPolicy: ptr(metav1.DeletePropagationForeground),
		DryRun: []string{metav1.DryRunAll, ""},
		IgnoreStoreReadErrorWithClusterBreakingPotential: ptr(true)})
	add("deleteoptions/empty preconditions", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{},
		PropagationPolicy: ptr[metav1.DeletionPropagation](""), DryRun: []string{}})

	// What a client asking for metadata only gets; a list's items carry
	// their type in JSON, which protobuf leaves out.
	partialItems := []metav1.PartialObjectMetadata{
		{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: fullMeta}, {}}
	add("partialobjectmetadata/empty", &metav1.PartialObjectMetadata{})
	add("partialobjectmetadata/full", &metav1.PartialObjectMetadata{ObjectMeta: fullMeta})
	add("partialobjectmetadatalist", &metav1.PartialObjectMetadataList{
		ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "c", RemainingItemCount: ptr[int64](2)}, Items: partialItems})
	add("partialobjectmetadatalist/empty", &metav1.PartialObjectMetadataList{})
	add("partialobjectmetadatalist/v1beta1", &metav1beta1.PartialObjectMetadataList{
		ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: partialItems})

	// Not exact: the JSON form cannot carry these differences.
	addInexact("configmap/nil binary value", &corev1.ConfigMap{BinaryData: map[string][]byte{"nil": nil}})
	addInexact("namespace/unsorted fieldsV1", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec": {}, "f:metadata": {"<": 1.50}}`)}}}}})
	addInexact("namespace/invalid utf-8", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a\xffb",
		Labels: map[string]string{"k\xfe": "v\xc3"}}})
	addInexact("namespace/zero deletion time", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		DeletionTimestamp: &metav1.Time{}, ManagedFields: []metav1.ManagedFieldsEntry{{Time: &metav1.Time{}, FieldsV1: &metav1.FieldsV1{}}}}})
	return append(cs, crdCases()...)
}

func ptr[T any](v T) *T { return &v }

func fullEvent() *corev1.Event {
	return &corev1.Event{ObjectMeta: fullMeta,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "u", APIVersion: "v1",
			ResourceVersion: "5", FieldPath: "spec.containers{app}"},
		Reason: "BackOff", Message: "Back-off restarting failed container ✗", Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: created, LastTimestamp: deleted, Count: 42, Type: corev1.EventTypeWarning, EventTime: micro,
		Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 1, 1_000, time.UTC))},
		Action: "Restart", Related: &corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		ReportingController: "kubelet", ReportingInstance: "node-1"}
}

func fullEventV1() *eventsv1.Event {
	e := fullEvent()
	return &eventsv1.Event{ObjectMeta: e.ObjectMeta, EventTime: micro,
		Series:              &eventsv1.EventSeries{Count: 3, LastObservedTime: e.Series.LastObservedTime},
		ReportingController: "example.com/controller", ReportingInstance: "controller-0", Action: "Restart",
		Reason: e.Reason, Regarding: e.InvolvedObject, Related: e.Related, Note: e.Message, Type: e.Type,
		DeprecatedSource: e.Source, DeprecatedFirstTimestamp: created, DeprecatedLastTimestamp: deleted, DeprecatedCount: 42}
}

func fullLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: fullMeta, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr("host_0b3f"), LeaseDurationSeconds: ptr[int32](15), AcquireTime: &micro,
		RenewTime: ptr(metav1.NewMicroTime(time.Date(2024, 1, 1, 0, 0, 1, 1_000, time.UTC))), LeaseTransitions: ptr[int32](3),
		Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("other")}}
}

func fullRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods", "pods/log"},
			ResourceNames: []string{"a", ""}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"/healthz", "/metrics/*"}},
		{Verbs: []string{}, APIGroups: []string{}, Resources: []string{}},
		{},
	}
}

func fullClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: fullMeta, Rules: fullRules(), AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.example.com/aggregate-to-view": "true", "": ""}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
				{Key: "x", Operator: metav1.LabelSelectorOpExists, Values: []string{}},
				{},
			}},
			{},
		}}}
}

func fullSubjects() []rbacv1.Subject {
	return []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.com"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"},
		{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "kube-system"},
		{},
	}
}

func bigMap(n, valueLen int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("key-%05d", i)] = strings.Repeat(string(rune('a'+i%26)), valueLen%(i+1))
	}
	return m
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
