package kubevalidation

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	apivalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/server/validation"
)

var trustBundleKind = schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"}

var csrKind = schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}

func init() {
	kinds[trustBundleKind] = kind{clustertrustbundle.Strategy, "clustertrustbundles", nil}
	kinds[csrKind] = kind{certificates.Strategy, "certificatesigningrequests", nil}
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

// condition is a CSR condition of type and status.
func condition(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": "R", "lastUpdateTime": "2020-01-01T00:00:00Z", "lastTransitionTime": "2020-01-01T00:00:00Z"}
}

// setConditions gives a CSR the conditions.
func setConditions(conds ...map[string]any) func(map[string]any) {
	return func(o map[string]any) {
		l := make([]any, len(conds))
		for i, c := range conds {
			l[i] = c
		}
		at(o, "status")["conditions"] = l
	}
}

// setCertificate gives a CSR status.certificate (base64 in JSON).
func setCertificate(pemData []byte) func(map[string]any) {
	return func(o map[string]any) { at(o, "status")["certificate"] = base64.StdEncoding.EncodeToString(pemData) }
}

// partUpdate is an update of a CSR through a subresource ("": the CSR).
type partUpdate struct {
	sub string
	update
}

// TestCertificateSigningRequests validates a CSR and copies of it each
// broken in one way, and updates through the CSR, its status and its
// approval, both ways: kube's strategies (the subresources' own
// PrepareForUpdate and ValidateUpdate) and ours (the parts' Write and
// ValidateUpdate).
func TestCertificateSigningRequests(t *testing.T) {
	ca := authntest.NewCA(t)
	obj := map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": map[string]any{"name": "req"},
		"spec": map[string]any{"signerName": "example.com/signer", "usages": []any{"client auth", "digital signature"}, "expirationSeconds": 3600,
			"request": base64.StdEncoding.EncodeToString(authntest.CertificateRequest(t, "me", "team"))}}
	t.Run("valid", func(t *testing.T) {
		if kube := compare(t, csrKind, encode(t, obj)); len(kube) > 0 {
			t.Errorf("kube refuses a valid object: %v", kube)
		}
	})
	for name, mutate := range map[string]func(map[string]any){
		"no usages":       setSpec("usages", []any{}),
		"unknown usage":   setSpec("usages", []any{"client auth", "mining"}),
		"duplicate usage": setSpec("usages", []any{"client auth", "client auth"}),
		"legacy signer":   setSpec("signerName", "kubernetes.io/legacy-unknown"),
		"no signer":       setSpec("signerName", nil),
		"bad signer":      setSpec("signerName", "signer"),
		"short duration":  setSpec("expirationSeconds", 599),
		"not a request":   setSpec("request", base64.StdEncoding.EncodeToString(ca.PEM)),
		"not PKCS#10":     setSpec("request", base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte("x")}))),
	} {
		broken := deepCopy(obj).(map[string]any)
		mutate(broken)
		t.Run(name, func(t *testing.T) {
			if kube := compare(t, csrKind, encode(t, broken)); len(kube) == 0 {
				t.Error("the mutation breaks no rule of kube's")
			}
		})
	}

	approved, denied, failed := condition("Approved", "True"), condition("Denied", "True"), condition("Failed", "True")
	certificate, leaf := ca.PEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Client(t, "me").Certificate[0]})
	for name, u := range map[string]partUpdate{
		"approve":                        {"approval", update{change: setConditions(approved)}},
		"deny":                           {"approval", update{change: setConditions(denied)}},
		"approve and deny":               {"approval", update{change: setConditions(approved, denied), refused: true}},
		"deny, approve, deny":            {"approval", update{change: setConditions(denied, approved, condition("Denied", "True")), refused: true}},
		"approve, not True":              {"approval", update{change: setConditions(condition("Approved", "False")), refused: true}},
		"approve twice":                  {"approval", update{change: setConditions(approved, approved), refused: true}},
		"condition without type":         {"approval", update{change: setConditions(condition("", "True")), refused: true}},
		"condition without status":       {"approval", update{change: setConditions(condition("Custom", "")), refused: true}},
		"custom condition":               {"approval", update{change: setConditions(condition("Custom", "Maybe")), refused: true}},
		"unapprove":                      {"approval", update{set: setConditions(approved), change: setConditions(), refused: true}},
		"approval ignores certificate":   {"approval", update{change: setCertificate(certificate)}},
		"issue":                          {"status", update{set: setConditions(approved), change: setCertificate(certificate)}},
		"issue a chain":                  {"status", update{set: setConditions(approved), change: setCertificate(append(leaf, certificate...))}},
		"issue junk":                     {"status", update{change: setCertificate([]byte("junk")), refused: true}},
		"issue a key":                    {"status", update{change: setCertificate(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")})), refused: true}},
		"reissue":                        {"status", update{set: setCertificate(leaf), change: setCertificate(certificate), refused: true}},
		"approve through status":         {"status", update{change: setConditions(approved), refused: true}},
		"reword approval through status": {"status", update{set: setConditions(approved), change: setConditions(condition("Approved", "True"), failed)}},
		"fail":                           {"status", update{set: setConditions(approved), change: setConditions(approved, failed)}},
		"fail, False":                    {"status", update{change: setConditions(condition("Failed", "False")), refused: true}},
		"unfail":                         {"status", update{set: setConditions(failed), change: setConditions(), refused: true}},
		"spec through status":            {"status", update{change: setSpec("usages", []any{"server auth"})}},
		"spec":                           {"", update{change: setSpec("usages", []any{"mining"})}},
		"status through the CSR":         {"", update{change: setCertificate([]byte("junk"))}},
	} {
		kube := func(t *testing.T, _ schema.GroupVersionKind, js, was []byte) []cause {
			return kubePartCauses(t, u.sub, js, was)
		}
		ours := func(t *testing.T, _ schema.GroupVersionKind, js, was []byte) []cause {
			return ourPartCauses(t, u.sub, js, was)
		}
		checkUpdateBy(t, name, csrKind, obj, u.update, kube, ours)
	}
}

// kubePartCauses runs kube's CSR strategy of the subresource sub on an
// update from old to js.
func kubePartCauses(t *testing.T, sub string, js, old []byte) []cause {
	t.Helper()
	strategy := map[string]interface {
		PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
		ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	}{"": certificates.Strategy, "status": certificates.StatusStrategy, "approval": certificates.ApprovalStrategy}[sub]
	obj, was := kubeInternal(t, csrKind, js), kubeInternal(t, csrKind, old)
	strategy.PrepareForUpdate(t.Context(), obj, was)
	return kubeErrors(declarativelyAs(t, csrKind, kinds[csrKind].plural, strategy, sub, obj, was, strategy.ValidateUpdate(t.Context(), obj, was)))
}

// ourPartCauses runs what the server does on an update from old to js
// through the subresource sub: the part's Write, or on the CSR itself its
// Prepare and the stored status kept, then the validation.
func ourPartCauses(t *testing.T, sub string, js, old []byte) []cause {
	t.Helper()
	r := ours["certificates.k8s.io/v1/certificatesigningrequests"]
	obj, was := ourObject(t, r, js), ourObject(t, r, old)
	validate := r.ValidateUpdate
	if part, ok := r.Parts[sub]; ok {
		obj, validate = part.Write(was, obj), part.ValidateUpdate
	} else {
		obj["status"] = was["status"]
	}
	r.Prepare(obj, was)
	var cs []api.StatusCause = validate(t.Context(), obj, was)
	return ourErrors(cs)
}
