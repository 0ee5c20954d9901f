package interop

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fld "k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
)

// TestRBACValidationDifferential writes invalid RBAC objects with client-go
// (protobuf) to the real binary and compares the 422 with the one kube
// answers. kube's pkg/apis/rbac/validation is not importable without
// replacing every staging module, so each case's expected errors are the
// calls that file (k8s.io/kubernetes v1.37, validation.go) makes for it,
// made here with apimachinery's own field, validation and content packages,
// and turned into the Status by apimachinery's NewInvalid: the wording,
// quoting, value rendering and aggregation are apimachinery's, not ours.
func TestRBACValidationDifferential(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cs := typedClientset(t, lw.URL)
	ctx := t.Context()
	rbacGroup := schema.GroupKind{Group: rbacv1.GroupName}
	kind := func(k string) schema.GroupKind { g := rbacGroup; g.Kind = k; return g }
	rules := fld.NewPath("rules")
	sel := fld.NewPath("aggregationRule", "clusterRoleSelectors").Index(0)
	roleRef := fld.NewPath("roleRef")
	subjects := fld.NewPath("subjects")
	invalidSelector := func(errs fld.ErrorList) fld.ErrorList {
		return append(errs, fld.Invalid(sel, nil, "invalid label selector."))
	}
	labelSelector := func(s metav1.LabelSelector) fld.ErrorList {
		return invalidSelector(metav1validation.ValidateLabelSelector(&s, metav1validation.LabelSelectorValidationOptions{}, sel))
	}
	badSelector := metav1.LabelSelector{MatchLabels: map[string]string{"-bad/key": "b c"}, MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "k", Operator: metav1.LabelSelectorOpIn},
		{Key: "a/b/c", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}},
		{Key: "k", Operator: "Near", Values: []string{"ok", "not ok"}},
	}}
	saName := "Bad_Name"

	tests := []struct {
		name   string
		create func(context.Context, *kubernetes.Clientset) error
		kind   string
		errs   fld.ErrorList
	}{
		{"role name", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a%b"}}, metav1.CreateOptions{})
			return err
		}, "Role", nameErrs("a%b")},
		{"role rules", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role-rules"}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}},
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/a<b>&"}},
				{Verbs: []string{"get"}},
			}}, metav1.CreateOptions{})
			return err
		}, "Role", fld.ErrorList{
			fld.Required(rules.Index(0).Child("verbs"), "verbs must contain at least one value"),
			fld.Invalid(rules.Index(1).Child("nonResourceURLs"), []string{"/healthz", "/a<b>&"}, "namespaced rules cannot apply to non-resource URLs"),
			fld.Required(rules.Index(2).Child("apiGroups"), "resource rules must supply at least one api group"),
			fld.Required(rules.Index(2).Child("resources"), "resource rules must supply at least one resource"),
		}},
		{"cluster role rules", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ".."}, Rules: []rbacv1.PolicyRule{
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, ResourceNames: []string{"n"}},
			}}, metav1.CreateOptions{})
			return err
		}, "ClusterRole", append(nameErrs(".."),
			fld.Invalid(rules.Index(0).Child("nonResourceURLs"), []string{"/x"}, "rules cannot apply to both regular resources and non-resource URLs"))},
		{"aggregation of no selectors", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"},
				AggregationRule: &rbacv1.AggregationRule{}}, metav1.CreateOptions{})
			return err
		}, "ClusterRole", fld.ErrorList{fld.Required(fld.NewPath("aggregationRule", "clusterRoleSelectors"), "at least one clusterRoleSelector required if aggregationRule is non-nil")}},
		{"aggregation selector", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"},
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{badSelector}}}, metav1.CreateOptions{})
			return err
		}, "ClusterRole", labelSelector(badSelector)},
		{"role binding", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb"},
				RoleRef: rbacv1.RoleRef{APIGroup: "apps", Kind: "Deployment", Name: "a/b%"},
				Subjects: []rbacv1.Subject{
					{Kind: "ServiceAccount", Name: saName, APIGroup: "v1"},
					{Kind: "User", APIGroup: "example.com", Name: "u"},
					{Kind: "Group"},
					{Kind: "Robot", Name: "r"},
				}}, metav1.CreateOptions{})
			return err
		}, "RoleBinding", append(append(fld.ErrorList{
			fld.NotSupported(roleRef.Child("apiGroup"), "apps", []string{rbacv1.GroupName}),
			fld.NotSupported(roleRef.Child("kind"), "Deployment", []string{"Role", "ClusterRole"}),
		}, invalids(roleRef.Child("name"), "a/b%", content.IsPathSegmentName("a/b%"))...),
			append(invalids(subjects.Index(0).Child("name"), saName, apimachineryvalidation.ValidateServiceAccountName(saName, false)),
				fld.NotSupported(subjects.Index(0).Child("apiGroup"), "v1", []string{""}),
				fld.NotSupported(subjects.Index(1).Child("apiGroup"), "example.com", []string{rbacv1.GroupName}),
				fld.Required(subjects.Index(2).Child("name"), ""),
				fld.NotSupported(subjects.Index(3).Child("kind"), "Robot", []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}),
			)...)},
		{"cluster role binding", func(ctx context.Context, cs *kubernetes.Clientset) error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"},
				RoleRef:  rbacv1.RoleRef{Kind: "Role"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}}, metav1.CreateOptions{})
			return err
		}, "ClusterRoleBinding", fld.ErrorList{
			fld.NotSupported(roleRef.Child("kind"), "Role", []string{"ClusterRole"}),
			fld.Required(roleRef.Child("name"), ""),
			fld.Required(subjects.Index(0).Child("namespace"), ""),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.create(ctx, cs)
			got, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("create: %v, want a Status error", err)
			}
			want := apierrors.NewInvalid(kind(tt.kind), nameOf(t, err), tt.errs).ErrStatus
			if diff := cmp.Diff(want.Message, got.Status().Message); diff != "" {
				t.Errorf("message (-kube +ours):\n%s", diff)
			}
			if diff := cmp.Diff(want.Details, got.Status().Details); diff != "" {
				t.Errorf("details (-kube +ours):\n%s", diff)
			}
		})
	}

	t.Run("roleRef immutable", func(t *testing.T) {
		rb, err := cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fixed"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}}, metav1.CreateOptions{})
		if err != nil || rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName {
			t.Fatalf("create (kube's defaults fill the apiGroups): %v %+v", err, rb)
		}
		rb.RoleRef.Name = "edit"
		_, err = cs.RbacV1().RoleBindings("default").Update(ctx, rb, metav1.UpdateOptions{})
		// kube's ValidateImmutableField on its internal RoleRef, which has no JSON tags.
		internal := struct{ APIGroup, Kind, Name string }{rbacv1.GroupName, "ClusterRole", "edit"}
		want := apierrors.NewInvalid(kind("RoleBinding"), "fixed", fld.ErrorList{fld.Invalid(roleRef, internal, apimachineryvalidation.FieldImmutableErrorMsg)})
		if got, ok := err.(apierrors.APIStatus); !ok || got.Status().Message != want.ErrStatus.Message {
			t.Errorf("update of roleRef: %v\nwant %s", err, want.ErrStatus.Message)
		}
	})
}

// nameErrs are ValidateObjectMeta's errors for an RBAC name
// (ValidateRBACName is content.IsPathSegmentName).
func nameErrs(name string) fld.ErrorList {
	return invalids(fld.NewPath("metadata", "name"), name, content.IsPathSegmentName(name))
}

func invalids(p *fld.Path, value string, msgs []string) fld.ErrorList {
	var errs fld.ErrorList
	for _, m := range msgs {
		errs = append(errs, fld.Invalid(p, value, m))
	}
	return errs
}

// nameOf is the name a Status error names (the object's, from its details).
func nameOf(t *testing.T, err error) string {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		t.Fatalf("no Status details in %v", err)
	}
	return st.Status().Details.Name
}
