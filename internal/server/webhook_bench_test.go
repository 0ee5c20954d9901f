package server

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkCreateValidatingWebhook creates 1 KiB ConfigMaps with no
// webhook and with one validating webhook on loopback (HTTPS, allowing
// everything), and reports the latency percentiles of a create.
func BenchmarkCreateValidatingWebhook(b *testing.B) {
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("webhooks=%d", n), func(b *testing.B) {
			h := benchServer(b)
			if n == 1 {
				serveBench(b, h, http.MethodPost, validatingHook, allowingWebhook(b), http.StatusCreated)
			}
			b.ReportAllocs()
			var took []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap(fmt.Sprint("c", i)), http.StatusCreated)
				took = append(took, time.Since(start))
				i++
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// allowingWebhook starts a webhook that allows every configmap write and
// returns a ValidatingWebhookConfiguration calling it.
func allowingWebhook(b *testing.B) string {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Request struct{ UID string } }
		_ = json.NewDecoder(r.Body).Decode(&in)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": in.Request.UID, "allowed": true}})
	}))
	b.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return fmt.Sprintf(`{"metadata":{"name":"allow"},"webhooks":[{"name":"allow.example.com","clientConfig":{"url":%q,"caBundle":%q},
		"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`, srv.URL, ca)
}
