package protobuf_test

import (
	"fmt"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listwatch/listwatch/internal/protobuf"
)

// TestReviews runs the checks of TestEncode, TestDecode and TestSupports
// on the access reviews, written and randomly filled.
func TestReviews(t *testing.T) {
	s := newScheme(t)
	if err := authorizationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := authenticationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	attrs := &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "list", Group: "apps", Version: "v1", Resource: "deployments",
		Subresource: "scale", Name: "web",
		FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: []metav1.FieldSelectorRequirement{
			{Key: "metadata.name", Operator: metav1.FieldSelectorOpIn, Values: []string{"x", ""}}, {}}},
		LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}
	extra := map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}, "empty": {}, "nil": nil, "": {""}}
	status := authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true, Reason: "r", EvaluationError: "e"}
	objs := []runtime.Object{
		&authorizationv1.SelfSubjectAccessReview{},
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}, Status: status},
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes:    &authorizationv1.ResourceAttributes{},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
		&authorizationv1.SubjectAccessReview{ObjectMeta: fullMeta, Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attrs,
			User: "bob", Groups: []string{"ops", ""}, Extra: extra, UID: "u"}, Status: status},
		&authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: authorizationv1.SubjectAccessReviewSpec{
			Groups: []string{"ops"}, Extra: map[string]authorizationv1.ExtraValue{}}},
		&authorizationv1.SelfSubjectRulesReview{},
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"},
			Status: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"},
					ResourceNames: []string{"a"}}, {}},
				NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, {}},
				Incomplete:       true, EvaluationError: "e"}},
		&authenticationv1.SelfSubjectReview{},
		&authenticationv1.SelfSubjectReview{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
			Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "alice", UID: "1",
				Groups: []string{"devs"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}, "none": nil}}}},
		&authenticationv1.TokenReview{},
		&authenticationv1.TokenReview{ObjectMeta: fullMeta, Spec: authenticationv1.TokenReviewSpec{Token: "t", Audiences: []string{"a", ""}},
			Status: authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "u"},
				Audiences: []string{"a"}, Error: "e"}},
	}
	for i, kind := range slices.Clone(objs) {
		f := filler(int64(100 + i))
		for range randomRounds / 4 {
			obj := kind.DeepCopyObject()
			f.Fill(obj)
			objs = append(objs, obj)
		}
	}
	for i, obj := range objs {
		name := fmt.Sprintf("%T/%d", obj, i)
		kinds, _, _ := s.ObjectKinds(obj)
		if gvk := kinds[0]; !protobuf.Supports(gvk.GroupVersion().String(), gvk.Kind) {
			t.Fatalf("%s: Supports(%s) = false", name, gvk)
		}
		checkRoundTrip(t, s, name, obj)
	}
}
