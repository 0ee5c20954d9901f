package interop

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/client"
)

// recorder is a TLS server that keeps the headers of the last request.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	last http.Header
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.last = req.Header.Clone()
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}`)
	}))
	t.Cleanup(r.Close)
	return r
}

// credentials are the headers of the last request that carry who it is.
func (r *recorder) credentials() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := http.Header{}
	for k, v := range r.last {
		if k == "Authorization" || strings.HasPrefix(k, "Impersonate-") {
			h[k] = v
		}
	}
	return h
}

func (r *recorder) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw}))
}

// sendClientGo sends a GET with client-go built from kubeconfig, and
// sendOurs with our client; each returns the credentials seen.
func sendClientGo(t *testing.T, r *recorder, kubeconfig string) http.Header {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(r.URL + "/api/v1/namespaces/default/configmaps/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return r.credentials()
}

func sendOurs(t *testing.T, r *recorder, kubeconfig string) http.Header {
	t.Helper()
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := client.NewResource[client.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "default").Get(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	return r.credentials()
}

// authKubeconfig writes a kubeconfig for r with the given user (YAML).
func authKubeconfig(t *testing.T, r *recorder, cluster, user string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "kubeconfig", `apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: c, user: u}}]
clusters:
- name: c
  cluster:
    server: "`+r.URL+`"
    certificate-authority-data: `+base64.StdEncoding.EncodeToString([]byte(r.caPEM()))+cluster+`
users:
- name: u
  user: `+user+"\n")
}

// TestImpersonationAsClientGo: a kubeconfig's impersonation reaches the
// server in the same headers from our client as from client-go, extra keys
// that need escaping included.
func TestImpersonationAsClientGo(t *testing.T) {
	r := newRecorder(t)
	kubeconfig := authKubeconfig(t, r, "", `
    token: t0k3n
    as: "system:serviceaccount:ns:sa"
    as-uid: "1234"
    as-groups: [devs, "system:authenticated"]
    as-user-extra:
      scopes.example.com/a b: [x, "y z"]
      "100%": [p]
      "ü:é": [u]
      plain: [one, two]`)
	want := sendClientGo(t, r, kubeconfig)
	if want.Get("Impersonate-User") == "" {
		t.Fatalf("client-go sent no impersonation: %v", want)
	}
	if diff := cmp.Diff(want, sendOurs(t, r, kubeconfig)); diff != "" {
		t.Errorf("headers (-client-go +ours):\n%s", diff)
	}
}

// TestExecPluginAsClientGo: a credential plugin is given the same
// KUBERNETES_EXEC_INFO (cluster information and extension included) by our
// client as by client-go, and its token is sent the same way.
func TestExecPluginAsClientGo(t *testing.T) {
	r := newRecorder(t)
	for _, version := range []string{"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			plugin := writeFile(t, dir, "plugin.sh", "#!/bin/sh\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\necho '{\"apiVersion\":\""+version+
				"\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok-'\"$1\"'\"}}'\n")
			mode := "\n      interactiveMode: Never"
			if strings.HasSuffix(version, "v1beta1") {
				mode = "" // IfAvailable by default: no terminal here
			}
			info := func(who string) (map[string]any, http.Header) {
				file := filepath.Join(dir, who+".json")
				kubeconfig := authKubeconfig(t, r, `
    tls-server-name: example.com
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: listwatch, nested: {count: 1}}`, `
    exec:
      command: `+plugin+`
      args: [`+who+`]
      env: [{name: INFO_FILE, value: "`+file+`"}]
      apiVersion: `+version+`
      provideClusterInfo: true`+mode)
				send := sendOurs
				if who == "client-go" {
					send = sendClientGo
				}
				h := send(t, r, kubeconfig) // httptest's certificate is valid for example.com
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				return m, h
			}
			wantInfo, wantH := info("client-go")
			gotInfo, gotH := info("ours")
			if diff := cmp.Diff(wantInfo, gotInfo); diff != "" {
				t.Errorf("KUBERNETES_EXEC_INFO (-client-go +ours):\n%s", diff)
			}
			if wantH.Get("Authorization") != "Bearer tok-client-go" || gotH.Get("Authorization") != "Bearer tok-ours" {
				t.Errorf("Authorization: client-go %q, ours %q", wantH.Get("Authorization"), gotH.Get("Authorization"))
			}
		})
	}
}
