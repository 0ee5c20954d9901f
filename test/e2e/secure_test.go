package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecureMode: `listwatch serve --secure` on loopback makes a CA and an
// admin kubeconfig in its data directory and says so in its log; the CLI
// with that kubeconfig lists namespaces, a client without a certificate is
// refused, and a restart reuses the CA: the first kubeconfig still works.
// Without --secure the server says it runs anonymous, loopback only.
func TestSecureMode(t *testing.T) {
	s := &server{addr: freeAddr(t), dataDir: t.TempDir()}
	s.URL = "https://" + s.addr
	s.start(t, "--secure")
	t.Cleanup(func() { s.stop(t) })
	kubeconfig := filepath.Join(s.dataDir, "admin.kubeconfig")
	first := filepath.Join(t.TempDir(), "first.kubeconfig")
	copyFile(t, kubeconfig, first)
	ca := readFile(t, filepath.Join(s.dataDir, "pki", "server-ca.crt"))

	getNamespaces(t, first)
	if code := anonymousStatus(t, s.URL+"/api/v1/namespaces", ca); code == http.StatusOK {
		t.Errorf("a client without a certificate listed namespaces: %d", code)
	}
	s.stop(t)
	for _, want := range []string{"secure mode", "x509 client certificates", "admin-kubeconfig=" + kubeconfig} {
		if !strings.Contains(s.logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, s.logs)
		}
	}

	s.start(t, "--secure")
	if again := readFile(t, filepath.Join(s.dataDir, "pki", "server-ca.crt")); !bytes.Equal(again, ca) {
		t.Error("the restart replaced the server CA")
	}
	getNamespaces(t, first)
	getNamespaces(t, kubeconfig)

	anon := startServer(t)
	anon.stop(t)
	if want := "anonymous mode: loopback only, no authentication, every request allowed"; !strings.Contains(anon.logs.String(), want) {
		t.Errorf("the default mode's log does not say %q:\n%s", want, anon.logs)
	}
}

// getNamespaces runs `listwatch get namespaces` with kubeconfig and checks
// that it lists the namespaces every server has.
func getNamespaces(t *testing.T, kubeconfig string) {
	t.Helper()
	out, err := cli(t, kubeconfig, "get", "namespaces")
	if err != nil || !strings.Contains(out, "kube-system") {
		t.Fatalf("listwatch get namespaces --kubeconfig %s: %v\n%s", kubeconfig, err, out)
	}
}

// anonymousStatus GETs url trusting ca, without a client certificate.
func anonymousStatus(t *testing.T, url string, ca []byte) int {
	t.Helper()
	tr := trusting(ca)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}
