package interop

import (
	"path/filepath"
	"testing"
)

// TestKubectlScaleCustomResource scales a prometheus-operator Prometheus,
// whose real definition maps the scale subresource to spec.shards, with
// kubectl scale, as a user or an autoscaler would.
func TestKubectlScaleCustomResource(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		crd, err := filepath.Abs("testdata/crds/monitoring.coreos.com_prometheuses.yaml")
		if err != nil {
			t.Fatal(err)
		}
		// create, not apply: the definition is larger than the annotation
		// apply would record, on listwatch as on kube.
		k.must(t, "create", "-f", crd)
		k.must(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/prometheuses.monitoring.coreos.com")
		dir := t.TempDir()
		k.must(t, "create", "-f", writeFile(t, dir, "p.yaml", "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: main, namespace: default}\nspec: {shards: 1}\n"))
		const path = "/apis/monitoring.coreos.com/v1/namespaces/default/prometheuses/main"

		contains(t, k.must(t, "scale", "prometheus/main", "--replicas=3"), `prometheus.monitoring.coreos.com/main scaled`)
		if _, obj := getObject(t, k.server, path); field(obj, "spec", "shards") != float64(3) || field(obj, "metadata", "generation") != float64(2) {
			t.Fatalf("after kubectl scale: %v", obj["spec"])
		}
		// --current-replicas reads the Scale and writes it back with its
		// resourceVersion as a precondition.
		contains(t, k.must(t, "scale", "prometheus/main", "--current-replicas=3", "--replicas=2"), `prometheus.monitoring.coreos.com/main scaled`)
		out, err := k.run(t, nil, "scale", "prometheus/main", "--current-replicas=5", "--replicas=1")
		if err == nil {
			t.Fatalf("kubectl scale with a wrong --current-replicas succeeded:\n%s", out)
		}
		contains(t, out, `Expected replicas to be 5, was 2`)
		if code, scale := getObject(t, k.server, path+"/scale"); code != 200 || field(scale, "kind") != "Scale" || field(scale, "spec", "replicas") != float64(2) {
			t.Fatalf("GET scale: %d %v", code, scale)
		}
		if k.current {
			out := k.must(t, "get", "prometheus", "main", "--subresource=scale", "-o", "jsonpath={.apiVersion} {.spec.replicas}")
			contains(t, out, `^autoscaling/v1 2$`)
		}
	})
}

// TestKubectlFieldSelectorCustomResource lists cert-manager Certificates
// by issuer, one of the selectableFields of their real definition.
func TestKubectlFieldSelectorCustomResource(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		crd, err := filepath.Abs("testdata/crds/cert-manager.io_certificates.yaml")
		if err != nil {
			t.Fatal(err)
		}
		k.must(t, "create", "-f", crd)
		k.must(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/certificates.cert-manager.io")
		dir := t.TempDir()
		certs := ""
		for _, c := range []struct{ name, issuer string }{{"web", "ca-issuer"}, {"api", "ca-issuer"}, {"mail", "acme"}} {
			certs += "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: " + c.name + ", namespace: default}\n" +
				"spec: {secretName: " + c.name + "-tls, dnsNames: [" + c.name + ".example.com], issuerRef: {name: " + c.issuer + ", kind: Issuer}}\n"
		}
		k.must(t, "create", "-f", writeFile(t, dir, "certs.yaml", certs))

		out := k.must(t, "get", "certificates", "--field-selector", "spec.issuerRef.name=ca-issuer", "-o", "name")
		if out != "certificate.cert-manager.io/api\ncertificate.cert-manager.io/web\n" {
			t.Errorf("by issuer:\n%s", out)
		}
		out = k.must(t, "get", "certificates", "--field-selector", "spec.issuerRef.name!=ca-issuer,spec.issuerRef.kind=Issuer", "-o", "name")
		if out != "certificate.cert-manager.io/mail\n" {
			t.Errorf("not by issuer:\n%s", out)
		}
		out, err = k.run(t, nil, "get", "certificates", "--field-selector", "spec.secretName=web-tls")
		if err == nil {
			t.Fatalf("a field that is not selectable was accepted:\n%s", out)
		}
		contains(t, out, `field label not supported: spec.secretName`)
	})
}
