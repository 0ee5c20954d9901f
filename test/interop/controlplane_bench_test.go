package interop

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkKubeAPIServerStart times the control plane envtest starts for
// controller tests beside listwatch's testserver (BenchmarkStart in
// ./testserver): an etcd member (embedded here, which spares etcd's own
// process start) and the kube-apiserver binary that
// LISTWATCH_KUBE_APISERVER names, until its /readyz answers 200. The tests
// do not build kube-apiserver: build k8s.io/kubernetes v1.37.2's
// cmd/kube-apiserver in a module with this module's replace lines.
func BenchmarkKubeAPIServerStart(b *testing.B) {
	bin := os.Getenv("LISTWATCH_KUBE_APISERVER")
	if bin == "" {
		b.Skip("LISTWATCH_KUBE_APISERVER names no kube-apiserver binary")
	}
	dir := b.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // its self-signed certificate
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		e, err := startEtcd(b, nil)
		if err != nil {
			b.Fatal(err)
		}
		ports, err := FreePorts(1)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.CommandContext(b.Context(), bin, "--etcd-servers="+e.Clients[0].Addr().String(),
			"--cert-dir="+filepath.Join(dir, fmt.Sprint("certs", i)), fmt.Sprint("--secure-port=", ports[0]),
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
			"--service-account-key-file="+keyFile, "--service-account-signing-key-file="+keyFile,
			"--service-account-issuer=https://kubernetes.default.svc", "--authorization-mode=RBAC",
			"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0])
		ready := func() bool {
			resp, err := hc.Get(readyz)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		for !ready() {
			if time.Since(start) > time.Minute {
				b.Fatalf("kube-apiserver not ready after %v", time.Since(start))
			}
			time.Sleep(10 * time.Millisecond) // polling /readyz, as envtest does
		}
		total += time.Since(start)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		e.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "start-ms/op")
}
