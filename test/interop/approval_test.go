package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// approvalReasons are the condition reasons kube's apiapproval controller
// gives each approval state (calculateCondition in
// pkg/controller/apiapproval/apiapproval_controller.go).
var approvalReasons = map[apihelpers.APIApprovalState]string{
	apihelpers.APIApprovalInvalid:  "InvalidAnnotation",
	apihelpers.APIApprovalMissing:  "MissingAnnotation",
	apihelpers.APIApproved:         "ApprovedAnnotation",
	apihelpers.APIApprovalBypassed: "UnapprovedAnnotation",
}

// TestAPIApprovalAsKube creates Gateway API's gateways definition in the
// binary under protected groups with each kind of approval annotation, and
// under an unprotected one. kube's ValidateCustomResourceDefinition fixes
// whether it is rejected and with which 422; when accepted, the
// KubernetesAPIApprovalPolicyConformant condition must carry kube's
// GetAPIApprovalState and its controller's reason (none outside protected
// groups). An update that keeps the state keeps being accepted.
func TestAPIApprovalAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	crds := lw.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	base := loadCRD(t, "gateways.yaml")
	annotations := []string{"", "https://github.com/kubernetes-sigs/gateway-api/pull/2466", "unapproved, experimental",
		"not a url", "http://", "/relative/path", "ftp://host", "Unapproved"}
	for i, a := range annotations {
		for _, group := range []string{fmt.Sprintf("g%d.networking.k8s.io", i), fmt.Sprintf("g%d.kubernetes.io", i), fmt.Sprintf("g%d.example.com", i)} {
			t.Run(group+"/"+a, func(t *testing.T) {
				def := base.DeepCopy()
				def.Spec.Group, def.Name = group, def.Spec.Names.Plural+"."+group
				def.Annotations = map[string]string{}
				if a != "" {
					def.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation] = a
				}
				code, body := post(t, crds, def)
				want := kubeCRDErrors(t, def)
				if want != nil {
					wantInvalid(t, want, code, body)
					return
				}
				if code != http.StatusCreated {
					t.Fatalf("%d %.500s, want 201", code, body)
				}
				var created apiextensionsv1.CustomResourceDefinition
				if err := json.Unmarshal(body, &created); err != nil {
					t.Fatal(err)
				}
				got := apihelpers.FindCRDCondition(&created, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
				if !apihelpers.IsProtectedCommunityGroup(group) {
					if got != nil {
						t.Errorf("condition %+v in an unprotected group", got)
					}
					return
				}
				state, message := apihelpers.GetAPIApprovalState(def.Annotations)
				wantStatus := apiextensionsv1.ConditionFalse
				if state == apihelpers.APIApproved {
					wantStatus = apiextensionsv1.ConditionTrue
				}
				if got == nil || got.Status != wantStatus || got.Reason != approvalReasons[state] || got.Message != message {
					t.Errorf("condition %+v, want %s %s %q", got, wantStatus, approvalReasons[state], message)
				}
				// An update keeping the approval state is accepted, whatever it is.
				created.Spec.Names.ShortNames = []string{"gw" + fmt.Sprint(i)}
				if code, body := put(t, crds+"/"+created.Name, &created); code != http.StatusOK {
					t.Errorf("update keeping the annotation: %d %s", code, body)
				}
			})
		}
	}
}

// kubeCRDErrors is the 422 kube-apiserver answers to creating def, or nil
// when its validation accepts it.
func kubeCRDErrors(t *testing.T, def *apiextensionsv1.CustomResourceDefinition) *apierrors.StatusError {
	t.Helper()
	defaulted := def.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(defaulted)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(defaulted, &internal, nil); err != nil {
		t.Fatal(err)
	}
	errs := validation.ValidateCustomResourceDefinition(t.Context(), &internal)
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, def.Name, errs)
}

func post(t *testing.T, url string, obj any) (int, []byte) { return sendJSON(t, "POST", url, obj) }

func put(t *testing.T, url string, obj any) (int, []byte) { return sendJSON(t, "PUT", url, obj) }

// sendJSON sends obj as JSON and returns the answer's code and body.
func sendJSON(t *testing.T, method, url string, obj any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return fetch(t, method, url, http.Header{"Content-Type": {"application/json"}}, b)
}
