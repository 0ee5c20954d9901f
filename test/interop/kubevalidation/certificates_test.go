package kubevalidation

import (
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	apivalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/server/validation"
)

var trustBundleKind = schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"}

func init() {
	kinds[trustBundleKind] = kind{clustertrustbundle.Strategy, "clustertrustbundles", nil}
}

// TestClusterTrustBundles validates trust bundles, with and without a
// signer, and copies of them each broken in one way or updated, both
// ways; and names against kube's ValidateClusterTrustBundleName.
func TestClusterTrustBundles(t *testing.T) {
	ca, other := authntest.NewCA(t), authntest.NewCA(t)
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Client(t, "leaf").Certificate[0]}))
	anchors := string(ca.PEM) + "between blocks\n" + string(other.PEM)
	bundles := map[string]map[string]any{
		"no-signer": {"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle", "metadata": map[string]any{"name": "plain"},
			"spec": map[string]any{"trustBundle": anchors}},
		"signer": {"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle", "metadata": map[string]any{"name": "example.com:signer:one"},
			"spec": map[string]any{"signerName": "example.com/signer", "trustBundle": string(ca.PEM)}},
	}
	setBundle := func(b string) func(map[string]any) { return setSpec("trustBundle", b) }
	mutations := map[string]func(map[string]any){
		"no anchor":         setBundle(""),
		"text only":         setBundle("not PEM"),
		"not a CA":          setBundle(string(ca.PEM) + leaf),
		"other block type":  setBundle(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")}))),
		"headers":           setBundle(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"a": "b"}, Bytes: ca.Cert.Raw}))),
		"not X.509":         setBundle(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}))),
		"duplicate anchors": setBundle(string(ca.PEM) + string(other.PEM) + string(ca.PEM) + string(other.PEM) + string(ca.PEM)),
		"too big":           setBundle(strings.Repeat("x", 1<<20+1)),
		"signer, no path":   setSpec("signerName", "example.com"),
		"signer, two /":     setSpec("signerName", "example.com/a/b"),
		"signer, one label": setSpec("signerName", "example/signer"),
		"signer, bad label": setSpec("signerName", "Example.com/signer"),
		"signer, bad path":  setSpec("signerName", "example.com/Bad_Path"),
		"signer, long":      setSpec("signerName", strings.Repeat("a", 250)+".com/"+strings.Repeat("b", 330)),
	}
	updates := map[string]update{
		"labels":          {change: func(o map[string]any) { at(o, "metadata")["labels"] = map[string]any{"a": "b"} }},
		"new anchors":     {change: setBundle(string(other.PEM))},
		"invalid anchors": {change: setBundle("not PEM"), refused: true},
		"signer changed":  {change: setSpec("signerName", "example.com/other"), refused: true},
		"signer set":      {set: setSpec("signerName", nil), change: setSpec("signerName", "example.com/signer"), refused: true},
	}
	for name, obj := range bundles {
		t.Run(name, func(t *testing.T) {
			if kube := compare(t, trustBundleKind, encode(t, obj)); len(kube) > 0 {
				t.Errorf("kube refuses a valid object: %v", kube)
			}
		})
		for mname, mutate := range mutations {
			broken := deepCopy(obj).(map[string]any)
			mutate(broken)
			t.Run(name+"/"+mname, func(t *testing.T) {
				if kube := compare(t, trustBundleKind, encode(t, broken)); len(kube) == 0 {
					t.Error("the mutation breaks no rule of kube's")
				}
			})
		}
		for uname, u := range updates {
			if name == "signer" || uname != "signer set" {
				checkUpdate(t, name+"/update/"+uname, trustBundleKind, obj, u)
			}
		}
	}

	for _, c := range []struct{ signer, name string }{
		{"", "plain"}, {"", "with:colon"}, {"", "Upper"}, {"", strings.Repeat("a", 254)},
		{"example.com/signer", "example.com:signer:one"}, {"example.com/signer", "example.com:signer:"},
		{"example.com/signer", "example.com:signer:Bad"}, {"example.com/signer", "other:one"}, {"example.com/signer", "example.com:signer"},
	} {
		kube := apivalidation.ValidateClusterTrustBundleName(c.signer)(c.name, false)
		if diff := cmp.Diff(kube, validation.ClusterTrustBundleName(c.signer)(c.name)); diff != "" {
			t.Errorf("name %q of signer %q (-kube +ours):\n%s", c.name, c.signer, diff)
		}
	}
}
