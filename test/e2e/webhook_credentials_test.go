package e2e

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// TestWebhookClientCredentials: given kube's --admission-control-config-file,
// whose ValidatingAdmissionWebhook kubeConfigFile names a user for the
// webhook's host, or the default user "*", the server calls the webhook
// with that user's client certificate and token; a webhook that requires
// them answers.
func TestWebhookClientCredentials(t *testing.T) {
	ca := authntest.NewCA(t)
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct{ Request struct{ UID string } }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &rv)
		who := r.TLS.PeerCertificates[0].Subject.CommonName + " " + r.Header.Get("Authorization")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": rv.Request.UID, "allowed": false, "status": map[string]any{"message": "called by " + who}}})
	}))
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	hook.StartTLS()
	t.Cleanup(hook.Close)

	// kube's resolver tries the host's own user, then the user "*".
	for _, user := range []string{hook.Listener.Addr().String(), "*"} {
		t.Run(user, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := authntest.WritePEM(t, ca.Client(t, "listwatch"))
			kubeconfig := writeFile(t, dir, "webhooks.kubeconfig", `apiVersion: v1
kind: Config
users:
- name: "`+user+`"
  user: {client-certificate: `+certFile+`, client-key: `+keyFile+`, token: hook-token}
`)
			webhookConfig := writeFile(t, dir, "webhook.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: "+kubeconfig+"\n")
			admission := writeFile(t, dir, "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  path: `+filepath.Base(webhookConfig)+`
`)
			s := startServer(t, "--admission-control-config-file", admission)
			config := `{"metadata":{"name":"h"},"webhooks":[{"name":"a.example.com","sideEffects":"None","admissionReviewVersions":["v1"],
				"clientConfig":{"url":"` + hook.URL + `","caBundle":"` + base64.StdEncoding.EncodeToString(ca.PEM) + `"},
				"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}]}]}`
			resp := s.do(t, "", "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", config)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("configuration: %d", resp.StatusCode)
			}
			resp = s.do(t, "", "POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"c"}}`)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if want := `admission webhook \"a.example.com\" denied the request: called by listwatch Bearer hook-token`; !strings.Contains(string(b), want) {
				t.Fatalf("create: %d %s, want %s", resp.StatusCode, b, want)
			}
		})
	}
}
