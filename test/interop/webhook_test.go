package interop

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestWebhookReviewAsKube: client-go creates a ValidatingWebhookConfiguration
// (read back with kube's v1 defaults) and writes ConfigMaps; the
// AdmissionReview the binary sends the webhook for each write equals the
// one kube-apiserver builds with its own package
// (k8s.io/apiserver/pkg/admission/plugin/webhook/request) from the same
// attributes: user, kind, resource, name, namespace, operation, options,
// dryRun, and the objects as sent.
func TestWebhookReviewAsKube(t *testing.T) {
	tokens := writeFile(t, t.TempDir(), "tokens.csv", "alice-token,alice,alice-uid,\"system:masters,devs\"\n")
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync", "--token-auth-file", tokens)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: "alice-token", QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	reviews := make(chan []byte, 8)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reviews <- body
		var rv admissionv1.AdmissionReview
		_ = json.Unmarshal(body, &rv)
		rv.Response = &admissionv1.AdmissionResponse{UID: rv.Request.UID, Allowed: true}
		rv.Request = nil
		_ = json.NewEncoder(w).Encode(&rv)
	}))
	t.Cleanup(hook.Close)

	ctx := t.Context()
	url, none := hook.URL+"/review", admissionregistrationv1.SideEffectClassNone
	cfg, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "review"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "review.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: hookCA(hook)},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Fatalf("kube's v1 defaults: %+v", w)
	}

	alice := &user.DefaultInfo{Name: "alice", UID: "alice-uid", Groups: []string{"system:masters", "devs", "system:authenticated"}}
	gvk, gvr := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps")
	// check compares the review the webhook got with kube's for op.
	check := func(op admission.Operation, name string, options runtime.Object, dryRun bool) {
		t.Helper()
		body := <-reviews
		var got admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &got); err != nil || got.Request == nil {
			t.Fatalf("review %s: %v", body, err)
		}
		if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" {
			t.Errorf("review type %s %s", got.APIVersion, got.Kind)
		}
		obj, old := decodeConfigMap(t, got.Request.Object.Raw), decodeConfigMap(t, got.Request.OldObject.Raw)
		attrs := admission.NewAttributesRecord(obj, old, gvk, "default", name, gvr, "", op, options, dryRun, alice)
		va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk}
		if obj != nil {
			va.VersionedObject = admission.NewLazyObject(obj)
		}
		if old != nil {
			va.VersionedOldObject = admission.NewLazyObject(old)
		}
		want := webhookrequest.CreateV1AdmissionReview(got.Request.UID, va, &generic.WebhookInvocation{Resource: gvr, Kind: gvk})
		if d := cmp.Diff(asJSON(t, want.Request), requestJSON(t, body)); d != "" {
			t.Errorf("%s review (-kube +ours):\n%s", op, d)
		}
	}
	opts := func(kind string, o runtime.Object) runtime.Object {
		o.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind)) // as kube's handlers
		return o
	}

	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}},
		metav1.CreateOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	check(admission.Create, "x", opts("CreateOptions", &metav1.CreateOptions{FieldManager: "tester"}), false)
	cm.Data["k"] = "w"
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{DryRun: []string{"All"}}); err != nil {
		t.Fatal(err)
	}
	check(admission.Update, "x", opts("UpdateOptions", &metav1.UpdateOptions{DryRun: []string{"All"}}), true)
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check(admission.Delete, "x", opts("DeleteOptions", &metav1.DeleteOptions{}), false)
}

func decodeConfigMap(t *testing.T, raw []byte) runtime.Object {
	if len(raw) == 0 {
		return nil
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// asJSON is v as the JSON value kube's encoder writes.
func asJSON(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// requestJSON is the request of a review body as a JSON value.
func requestJSON(t *testing.T, body []byte) any {
	var rv struct{ Request any }
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatal(err)
	}
	return rv.Request
}

// TestKubectlWebhooks: kubectl applies a ValidatingWebhookConfiguration,
// lists it with kube's columns, and shows the webhook's denial of a create
// as kube's error.
func TestKubectlWebhooks(t *testing.T) { eachKubectl(t, webhookScenario) }

func webhookScenario(t *testing.T, k kubectl) {
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&rv)
		rv.Response = &admissionv1.AdmissionResponse{UID: rv.Request.UID, Allowed: false, Result: &metav1.Status{Message: "no configmaps named bad"}}
		rv.Request = nil
		_ = json.NewEncoder(w).Encode(&rv)
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(hookCA(hook))
	manifest := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny-bad
webhooks:
- name: deny-bad.example.com
  clientConfig:
    url: ` + hook.URL + `/validate
    caBundle: ` + ca + `
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  matchConditions:
  - name: bad-only
    expression: object.metadata.name == 'bad'
  sideEffects: None
  admissionReviewVersions: ["v1"]
`
	file := writeFile(t, t.TempDir(), "webhook.yaml", manifest)
	contains(t, k.must(t, "apply", "-f", file), `validatingwebhookconfiguration.admissionregistration.k8s.io/deny-bad created`)
	// Again: kubectl's three-way patch replaces the rules, an atomic list
	// that the server's default scope makes differ from the file's.
	contains(t, k.must(t, "apply", "-f", file), `validatingwebhookconfiguration.admissionregistration.k8s.io/deny-bad configured`)
	contains(t, k.must(t, "get", "validatingwebhookconfigurations"), `NAME\s+WEBHOOKS\s+AGE\n`, `deny-bad\s+1\s+\d+s\n`)
	contains(t, k.must(t, "create", "configmap", "good"), `configmap/good created`)
	out, err := k.run(t, nil, "create", "configmap", "bad")
	if err == nil {
		t.Fatalf("created what the webhook denies:\n%s", out)
	}
	contains(t, out, `admission webhook "deny-bad.example.com" denied the request: no configmaps named bad`)
	contains(t, k.must(t, "delete", "validatingwebhookconfiguration", "deny-bad"), `deleted`)
	contains(t, k.must(t, "create", "configmap", "bad"), `configmap/bad created`)
}

// TestWebhookDenialAsKube: the Status a client gets when a validating
// webhook denies a create is kube's (k8s.io/apiserver's ToStatusErr) of
// the status the webhook answered: none, a message alone, a reason, a
// code under 400, a 500, details of its own.
func TestWebhookDenialAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]*metav1.Status{ // by the name of the ConfigMap denied
		"none":     nil,
		"message":  {Message: "no way"},
		"reason":   {Code: 422, Reason: metav1.StatusReasonInvalid},
		"low-code": {Status: metav1.StatusSuccess, Code: 200, Message: "fine?"},
		"internal": {Code: 500, Message: "boom"},
		"details":  {Code: 409, Reason: metav1.StatusReasonConflict, Message: "taken", Details: &metav1.StatusDetails{Name: "other", Kind: "things"}},
	}
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv admissionv1.AdmissionReview
		_ = json.NewDecoder(r.Body).Decode(&rv)
		rv.Response = &admissionv1.AdmissionResponse{UID: rv.Request.UID, Result: results[rv.Request.Name]}
		rv.Request = nil
		_ = json.NewEncoder(w).Encode(&rv)
	}))
	t.Cleanup(hook.Close)
	ctx := t.Context()
	url, none := hook.URL+"/review", admissionregistrationv1.SideEffectClassNone
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "deny.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: hookCA(hook)},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, result := range results {
		t.Run(name, func(t *testing.T) {
			_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			var got *apierrors.StatusError
			if !errors.As(err, &got) {
				t.Fatalf("created, or not a Status: %v", err)
			}
			want := webhookerrors.ToStatusErr("deny.example.com", result.DeepCopy()).ErrStatus
			if d := cmp.Diff(want, got.ErrStatus); d != "" {
				t.Errorf("(-kube +ours):\n%s", d)
			}
		})
	}
}
