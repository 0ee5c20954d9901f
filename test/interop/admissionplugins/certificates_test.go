package admissionplugins

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/test/interop"
)

// certUsers are the token users of the certificate cases; each may write
// CSRs, their approval and status, and trust bundles, and holds the signer
// verbs signerRoles grant it.
var certUsers = map[string]string{"approver": "2", "wide": "3", "signer": "4", "attester": "5", "nobody": "6"}

// certRoles are the ClusterRoles and bindings both sides authorize by:
// the binary stores them, kube's RBAC authorizer reads them.
func certRoles() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	signers := func(verb string, names ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, Verbs: []string{verb}, ResourceNames: names}}
	}
	roles := map[string][]rbacv1.PolicyRule{
		"cert-writer": {
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "clustertrustbundles"}, Verbs: []string{"create", "get", "update"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval", "certificatesigningrequests/status"}, Verbs: []string{"update"}},
		},
		"approver": signers("approve", "example.com/signer"),
		"wide":     signers("approve", "example.com/*"),
		"signer":   signers("sign", "example.com/signer", "kubernetes.io/kube-apiserver-client"),
		"attester": signers("attest", "example.com/signer"),
	}
	var cr []*rbacv1.ClusterRole
	var crb []*rbacv1.ClusterRoleBinding
	for name, rules := range roles {
		subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
		if name == "cert-writer" {
			subject = rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: user.AllAuthenticated}
		}
		cr = append(cr, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})
		crb = append(crb, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{subject}})
	}
	return cr, crb
}

// certCase is one write by a user: on the binary through client-go, on
// kube's side as admission attributes of the objects the binary held.
type certCase struct {
	name, user string
	// write makes the write on the binary as the user (c) after the
	// administrator (admin) prepared what it needs, and returns the kube
	// attributes' objects and operation, subresource and resource.
	write func(t *testing.T, admin, c kubernetes.Interface) (obj, old runtime.Object, op admission.Operation, sub string, err error)
}

// TestCertificatesAsKubesPlugins makes each case's write on the binary as
// a token user and runs kube's CertificateApproval, CertificateSigning,
// ClusterTrustBundleAttest and CertificateSubjectRestriction, in kube's
// order and with kube's RBAC authorizer reading the same roles, on the
// same write: both allow it, or both refuse it with the same message.
func TestCertificatesAsKubesPlugins(t *testing.T) {
	tokens := "admin-token,admin,1,system:masters\n"
	for name, uid := range certUsers {
		tokens += name + "-token," + name + "," + uid + "\n"
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync", "--token-auth-file", tokenFile)
	as := func(token string) kubernetes.Interface {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, BearerToken: token, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	admin := as("admin-token")
	ctx := t.Context()
	roles, bindings := certRoles()
	for _, r := range roles {
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bindings {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, static := rbacregistryvalidation.NewTestRuleResolver(nil, nil, roles, bindings)
	authz := rbac.New(static, static, static, static)
	approve, sign, attest, restrict := approval.NewPlugin(), signing.NewPlugin(), ctbattest.NewPlugin(), subjectrestriction.NewPlugin()
	approve.SetUnconditionalAuthorizer(authz)
	sign.SetUnconditionalAuthorizer(authz)
	attest.SetUnconditionalAuthorizer(authz)
	attest.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	kubePlugins := []interface {
		admission.ValidationInterface
		admission.Interface
	}{approve, sign, attest, restrict}

	bundlePEM := string(authntest.NewCA(t).PEM)
	for _, tc := range certCases(t, bundlePEM) {
		t.Run(tc.name, func(t *testing.T) {
			obj, old, op, sub, err := tc.write(t, admin, as(tc.user+"-token"))
			internal, gvk := decodeAsKube(t, obj)
			var internalOld runtime.Object
			if old != nil {
				internalOld, _ = decodeAsKube(t, old)
			}
			info := &user.DefaultInfo{Name: tc.user, UID: certUsers[tc.user], Groups: []string{user.AllAuthenticated}}
			a := admission.NewAttributesRecord(internal, internalOld, gvk, "", obj.(metav1.Object).GetName(), kindResource(t, obj), sub, op, nil, false, info)
			var want error
			for _, p := range kubePlugins {
				if p.Handles(op) {
					if want = p.Validate(ctx, a, nil); want != nil {
						break
					}
				}
			}
			switch {
			case want == nil && err != nil:
				t.Errorf("kube allows it, the binary: %v", err)
			case want != nil && (err == nil || err.Error() != want.Error() || apierrors.ReasonForError(err) != apierrors.ReasonForError(want)):
				t.Errorf("got %v, kube: %v", err, want)
			}
		})
	}
}

// certCases are the writes compared.
func certCases(t *testing.T, bundlePEM string) []certCase {
	var n int
	newCSR := func(admin kubernetes.Interface, signer string, approved bool) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		n++
		csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("csr-%d", n)}, Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: signer, Request: authntest.CertificateRequest(t, "c", "team"), Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
		csr, err := admin.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if approved {
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "Admin"})
			if csr, err = admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(t.Context(), csr.Name, csr, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return csr
	}
	approve := func(signer string) func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
		return func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
			old := newCSR(admin, signer, false)
			csr := old.DeepCopy()
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "Yes"})
			_, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(t.Context(), csr.Name, csr, metav1.UpdateOptions{})
			return csr, old, admission.Update, "approval", err
		}
	}
	issue := func(signer string, certificate []byte) func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
		return func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
			old := newCSR(admin, signer, true)
			csr := old.DeepCopy()
			csr.Status.Certificate = certificate
			_, err := c.CertificatesV1().CertificateSigningRequests().UpdateStatus(t.Context(), csr, metav1.UpdateOptions{})
			return csr, old, admission.Update, "status", err
		}
	}
	request := func(signer string, orgs ...string) func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
		return func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
			n++
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("req-%d", n)}, Spec: certificatesv1.CertificateSigningRequestSpec{
				SignerName: signer, Request: authntest.CertificateRequest(t, "c", orgs...), Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
			_, err := c.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{})
			return csr, nil, admission.Create, "", err
		}
	}
	bundleName := func(signer string) string {
		n++
		if signer == "" {
			return fmt.Sprintf("bundle-%d", n)
		}
		return fmt.Sprintf("example.com:signer:%d", n)
	}
	createBundle := func(signer string) func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
		return func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
			b := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: bundleName(signer)}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundlePEM}}
			_, err := c.CertificatesV1().ClusterTrustBundles().Create(t.Context(), b, metav1.CreateOptions{})
			return b, nil, admission.Create, "", err
		}
	}
	updateBundle := func(change func(*certificatesv1.ClusterTrustBundle)) func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
		return func(t *testing.T, admin, c kubernetes.Interface) (runtime.Object, runtime.Object, admission.Operation, string, error) {
			old := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: bundleName("example.com/signer")}, Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: bundlePEM}}
			old, err := admin.CertificatesV1().ClusterTrustBundles().Create(t.Context(), old, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := old.DeepCopy()
			change(b)
			_, err = c.CertificatesV1().ClusterTrustBundles().Update(t.Context(), b, metav1.UpdateOptions{})
			return b, old, admission.Update, "", err
		}
	}
	return []certCase{
		{"approve", "approver", approve("example.com/signer")},
		{"approve by domain", "wide", approve("example.com/signer")},
		{"approve another signer", "approver", approve("example.com/other")},
		{"approve by domain another domain", "wide", approve("other.io/signer")},
		{"approve without signer grants", "nobody", approve("example.com/signer")},
		{"signer approves", "signer", approve("example.com/signer")},
		{"sign", "signer", issue("example.com/signer", []byte(bundlePEM))},
		{"sign, approver", "approver", issue("example.com/signer", []byte(bundlePEM))},
		{"sign another signer", "signer", issue("example.com/other", []byte(bundlePEM))},
		{"status unchanged", "nobody", issue("example.com/signer", nil)},
		{"masters for kube-apiserver-client", "nobody", request("kubernetes.io/kube-apiserver-client", "team", "system:masters")},
		{"team for kube-apiserver-client", "nobody", request("kubernetes.io/kube-apiserver-client", "team")},
		{"masters for another signer", "nobody", request("example.com/signer", "system:masters")},
		{"attest", "attester", createBundle("example.com/signer")},
		{"attest, approver", "approver", createBundle("example.com/signer")},
		{"bundle without signer", "nobody", createBundle("")},
		{"update bundle, attester", "attester", updateBundle(func(b *certificatesv1.ClusterTrustBundle) { b.Labels = map[string]string{"a": "b"} })},
		{"update bundle, not attester", "nobody", updateBundle(func(b *certificatesv1.ClusterTrustBundle) { b.Labels = map[string]string{"a": "b"} })},
		{"finalizers only, not attester", "nobody", updateBundle(func(b *certificatesv1.ClusterTrustBundle) { b.Finalizers = []string{"example.com/keep"} })},
	}
}
