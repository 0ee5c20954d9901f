package interop

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// widgetDefaulter gives a Widget without a color blue.
type widgetDefaulter struct{}

func (widgetDefaulter) Default(_ context.Context, w *Widget) error {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	return nil
}

// widgetValidator refuses red Widgets.
type widgetValidator struct{}

func (widgetValidator) ValidateCreate(_ context.Context, w *Widget) (admission.Warnings, error) {
	if w.Spec.Color == "red" {
		return nil, errors.New("red widgets are not allowed")
	}
	return admission.Warnings{"checked by the widget validator"}, nil
}

func (v widgetValidator) ValidateUpdate(ctx context.Context, _, w *Widget) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, w)
}

func (widgetValidator) ValidateDelete(context.Context, *Widget) (admission.Warnings, error) {
	return nil, nil
}

// TestControllerRuntimeWebhooks: a kubebuilder project's webhooks, made
// with controller-runtime's admission package (WithDefaulter,
// WithValidator), default and validate a custom resource written through
// the binary with controller-runtime's client.
func TestControllerRuntimeWebhooks(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cfg := &rest.Config{Host: lw.URL, QPS: -1}
	installWidgetDefinition(t, cfg)
	scheme := operatorScheme()
	mux := http.NewServeMux()
	mux.Handle("/mutate", admission.WithDefaulter[*Widget](scheme, widgetDefaulter{}))
	mux.Handle("/validate", admission.WithValidator[*Widget](scheme, widgetValidator{}))
	hook := httptest.NewTLSServer(mux)
	t.Cleanup(hook.Close)

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ca := hookCA(hook)
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{widgetGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
	}}
	url := func(path string) *string { u := hook.URL + path; return &u }
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mwidget.kb.io", Rules: rules, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/mutate"), CABundle: ca}, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vwidget.kb.io", Rules: rules, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/validate"), CABundle: ca}, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}
	if w.Spec.Color != "blue" {
		t.Fatalf("defaulted color %q, want blue", w.Spec.Color)
	}
	red := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "red", Namespace: "default"}, Spec: WidgetSpec{Color: "red"}}
	err = c.Create(ctx, red)
	want := `admission webhook "vwidget.kb.io" denied the request: red widgets are not allowed`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("red widget: %v, want %q", err, want)
	}
	w.Spec.Color = "red"
	if err := c.Update(ctx, w); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("update to red: %v", err)
	}
	var got Widget
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "plain"}, &got); err != nil || got.Spec.Color != "blue" {
		t.Fatalf("stored widget %+v: %v", got.Spec, err)
	}
}

// hookCA is the PEM certificate of a test TLS server, its caBundle.
func hookCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
