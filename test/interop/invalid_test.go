package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	validationfield "k8s.io/apimachinery/pkg/util/validation/field"
)

// TestCustomResourceInvalidAsKube creates invalid custom resources of
// real-world definitions in the binary and wants kube-apiserver's 422:
// the message and the causes, in order, that kube's custom resource
// strategy (k8s.io/apiextensions-apiserver/pkg/registry/customresource,
// Validate after defaulting) computes for the same object.
func TestCustomResourceInvalidAsKube(t *testing.T) {
	cases := []struct {
		file   string
		object string
	}{
		{"cert-manager.io_certificates.yaml", `{"metadata":{"name":"types"},"spec":{"secretName":1,"issuerRef":{"name":true},"duration":7,"dnsNames":"a.example.com"}}`},
		{"cert-manager.io_certificates.yaml", `{"metadata":{"name":"missing"},"spec":{"dnsNames":["a"]}}`},
		{"cert-manager.io_certificates.yaml", `{"metadata":{"name":"enum"},"spec":{"secretName":"s","issuerRef":{"name":"i"},"privateKey":{"algorithm":"DSA","size":"big"},"usages":["flying"]}}`},
		{"cert-manager.io_certificates.yaml", `{"metadata":{"name":"order"},"spec":{"secretName":"s","issuerRef":{"name":"i"},"usages":["x"],"dnsNames":[1],"commonName":2,"revisionHistoryLimit":0}}`},
		{"cert-manager.io_certificates.yaml", `{"metadata":{"name":"Bad_Name"},"spec":{"secretName":"s","issuerRef":{"name":"i"},"renewBeforePercentage":"x"}}`},
		{"prometheusrules.yaml", `{"metadata":{"name":"nested"},"spec":{"groups":[{"rules":[{"expr":"up","for":"x","labels":{"a":1}}]},{"name":"h","interval":"bad"}]}}`},
	}
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	installed := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range cases {
		def := installed[c.file]
		if def == nil {
			def = loadCRD(t, c.file)
			if code, body := post(t, lw.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", def); code != http.StatusCreated {
				t.Fatalf("install %s: %d %.300s", c.file, code, body)
			}
			installed[c.file] = def
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.object), &obj); err != nil {
			t.Fatal(err)
		}
		name := obj["metadata"].(map[string]any)["name"].(string)
		t.Run(c.file+"/"+name, func(t *testing.T) {
			version := storageVersion(def)
			obj["apiVersion"], obj["kind"] = def.Spec.Group+"/"+version, def.Spec.Names.Kind
			path := fmt.Sprintf("%s/apis/%s/%s/namespaces/default/%s", lw.URL, def.Spec.Group, version, def.Spec.Names.Plural)
			waitServed(t, path)
			code, body := post(t, path, obj)
			var got metav1.Status
			if err := json.Unmarshal(body, &got); err != nil || got.Details == nil {
				t.Fatalf("%d %s, want 422", code, body)
			}
			want := kubeInvalid(t, def, version, obj, got.Details.Causes)
			if want == nil {
				t.Fatalf("kube accepts %s", c.object)
			}
			wantInvalid(t, want, code, body)
		})
	}
}

// wantInvalid fails t unless an answer is the 422 want: its message and
// its causes, in order.
func wantInvalid(t *testing.T, want *apierrors.StatusError, code int, body []byte) {
	t.Helper()
	var got metav1.Status
	if err := json.Unmarshal(body, &got); err != nil || code != http.StatusUnprocessableEntity || got.Details == nil {
		t.Fatalf("%d %.300s, want 422 %s", code, body, want.ErrStatus.Message)
	}
	if diff := cmp.Diff(want.ErrStatus.Message, got.Message); diff != "" {
		t.Errorf("message (-kube +ours):\n%s", diff)
	}
	if diff := cmp.Diff(want.ErrStatus.Details.Causes, got.Details.Causes); diff != "" {
		t.Errorf("causes (-kube +ours):\n%s", diff)
	}
}

// storageVersion is the name of def's storage version.
func storageVersion(def *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range def.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// kubeInvalid is kube-apiserver's 422 for creating obj, a custom resource
// of def's version: its strategy's validation after the schema's defaults,
// or nil when it accepts obj. kube's causes are put in our order where they
// are ours (orderLike), so that messages compare.
func kubeInvalid(t *testing.T, def *apiextensionsv1.CustomResourceDefinition, version string, obj map[string]any, ours []metav1.StatusCause) *apierrors.StatusError {
	t.Helper()
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(def, &internal, nil); err != nil {
		t.Fatal(err)
	}
	k := newKubeStrategy(t, &internal, version)
	u := &unstructured.Unstructured{Object: runtimeCopy(t, obj)}
	u.SetNamespace("default")
	structuraldefaulting.Default(u.Object, k.structural)
	errs := k.strategy.Validate(t.Context(), u)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(k.gvk.GroupKind(), u.GetName(), orderLike(errs, ours))
}

// kubeStrategy is kube's custom resource strategy for one version of a
// definition, with the version's schema and subresources.
type kubeStrategy struct {
	strategy interface {
		PrepareForCreate(context.Context, runtime.Object)
		Validate(context.Context, runtime.Object) validationfield.ErrorList
		PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
		ValidateUpdate(ctx context.Context, obj, old runtime.Object) validationfield.ErrorList
	}
	structural *structuralschema.Structural
	gvk        schema.GroupVersionKind
}

func newKubeStrategy(t testing.TB, def *apiextensions.CustomResourceDefinition, version string) kubeStrategy {
	t.Helper()
	v, err := apiextensions.GetSchemaForVersion(def, version)
	if err != nil {
		t.Fatal(err)
	}
	validator, _, err := validation.NewSchemaValidator(v.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(v.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := apiextensions.GetSubresourcesForVersion(def, version)
	if err != nil {
		t.Fatal(err)
	}
	var status *apiextensions.CustomResourceSubresourceStatus
	var scale *apiextensions.CustomResourceSubresourceScale
	if sub != nil {
		status, scale = sub.Status, sub.Scale
	}
	gvk := schema.GroupVersionKind{Group: def.Spec.Group, Version: version, Kind: def.Spec.Names.Kind}
	namespaced := def.Spec.Scope == apiextensions.NamespaceScoped
	return kubeStrategy{customresource.NewStrategy(nil, namespaced, gvk, validator, nil, structural, status, scale, nil), structural, gvk}
}

// orderLike puts errs, kube's, in the order of ours where they are equal,
// then the rest in kube's order: kube's schema validation lists causes in
// Go map order, which changes from run to run.
func orderLike(errs validationfield.ErrorList, ours []metav1.StatusCause) validationfield.ErrorList {
	ordered := make(validationfield.ErrorList, 0, len(errs))
	for _, c := range ours {
		if i := slices.IndexFunc(errs, func(e *validationfield.Error) bool { return e.Field == c.Field && e.ErrorBody() == c.Message }); i >= 0 {
			ordered = append(ordered, errs[i])
			errs = slices.Delete(errs, i, i+1)
		}
	}
	return append(ordered, errs...)
}

// runtimeCopy is obj as kube decodes it: numbers int64 or float64.
func runtimeCopy(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := unstructured.UnstructuredJSONScheme.Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u.(*unstructured.Unstructured).Object
}
