package plugins

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/rbac"
)

// The certificates.k8s.io resources the certificate plugins guard.
const (
	certificatesGroup = "certificates.k8s.io"
	csrs              = "certificatesigningrequests"
	trustBundles      = "clustertrustbundles"
)

// kubeAPIServerClientSigner is the signer a CSR may not use to ask for
// system:masters (certificatesv1.KubeAPIServerClientSignerName).
const kubeAPIServerClientSigner = "kubernetes.io/kube-apiserver-client"

func init() {
	handled[[2]string{certificatesGroup, csrs}] = true
	handled[[2]string{certificatesGroup, trustBundles}] = true
}

// certificates are kube's four certificate plugins, validating only, in
// kube's order: CertificateApproval, CertificateSigning,
// ClusterTrustBundleAttest and CertificateSubjectRestriction
// (plugin/pkg/admission/certificates). The first three ask the request's
// authorizer whether its user may approve, sign or attest for the signer;
// the last refuses a CSR asking kube-apiserver's client signer for
// system:masters.
type certificates struct{}

func (certificates) admit(context.Context, *webhook.Attributes) error { return nil }

func (certificates) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Resource.Group != certificatesGroup {
		return nil
	}
	switch {
	case a.Resource.Resource == csrs && a.Operation == webhook.Update && a.Subresource == "approval":
		return mayForSigner(ctx, a, "approve", signerOf(a.OldObject), "user not permitted to approve requests with signerName %q")
	case a.Resource.Resource == csrs && a.Operation == webhook.Update && a.Subresource == "status":
		if !certificateOrConditionsChanged(a.Object, a.OldObject) {
			return nil
		}
		return mayForSigner(ctx, a, "sign", signerOf(a.OldObject), "user not permitted to sign requests with signerName %q")
	case a.Resource.Resource == trustBundles && (a.Operation == webhook.Create || a.Operation == webhook.Update):
		// The new object's signer: validation refuses to change it.
		signer := signerOf(a.Object)
		if signer == "" || a.Operation == webhook.Update && rbac.OnlyGCFieldsChanged(a.Object, a.OldObject) {
			return nil
		}
		return mayForSigner(ctx, a, "attest", signer, "user not permitted to attest for signerName %q")
	case a.Resource.Resource == csrs && a.Operation == webhook.Create && a.Subresource == "":
		return restrictSubject(a)
	}
	return nil
}

// mayForSigner refuses a unless its user may do verb on the signer, as
// kube's certauthorization.IsAuthorizedForSignerName: on the synthetic
// resource signers named signer, or named "<domain>/*". refusal is the
// message's format, given the signer.
func mayForSigner(ctx context.Context, a *webhook.Attributes, verb, signer, refusal string) error {
	if a.Authorizer == nil {
		return nil // no authorizer: everything is allowed
	}
	domain, _, _ := strings.Cut(signer, "/")
	for _, name := range []string{signer, domain + "/*"} {
		d, _, err := a.Authorizer.Authorize(ctx, authz.Attributes{
			User: a.User, Verb: verb, ResourceRequest: true,
			APIGroup: certificatesGroup, APIVersion: "*", Resource: "signers", Name: name,
		})
		if err == nil && d == authz.Allow { // an error denies, whatever the decision
			return nil
		}
	}
	return Forbidden(a, fmt.Sprintf(refusal, signer))
}

// certificateOrConditionsChanged says whether a status write changes
// status.certificate or status.conditions, as kube's CertificateSigning
// compares them: the certificate's bytes exactly (absent differs from
// empty), the conditions semantically (absent equals empty, and so does an
// empty field of a condition).
func certificateOrConditionsChanged(obj, old map[string]any) bool {
	status, _ := obj["status"].(map[string]any)
	oldStatus, _ := old["status"].(map[string]any)
	if !reflect.DeepEqual(status["certificate"], oldStatus["certificate"]) {
		return true
	}
	return !slices.EqualFunc(objects(status, "conditions"), objects(oldStatus, "conditions"), func(a, b map[string]any) bool {
		return reflect.DeepEqual(nonEmpty(a), nonEmpty(b))
	})
}

// nonEmpty is m without its empty strings and nulls, the fields of a Go
// struct left at their zero values.
func nonEmpty(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if v != nil && v != "" {
			out[k] = v
		}
	}
	return out
}

// restrictSubject is kube's CertificateSubjectRestriction: a CSR for
// kube-apiserver's client signer may not name system:masters among its
// subject's organizations.
func restrictSubject(a *webhook.Attributes) error {
	if signerOf(a.Object) != kubeAPIServerClientSigner {
		return nil
	}
	spec, _ := a.Object["spec"].(map[string]any)
	req, err := parseCSR(str(spec, "request"))
	if err != nil {
		return Forbidden(a, "failed to parse CSR: "+err.Error())
	}
	if slices.Contains(req.Subject.Organization, "system:masters") {
		return Forbidden(a, fmt.Sprintf("use of %s signer with system:masters group is not allowed", kubeAPIServerClientSigner))
	}
	return nil
}

// parseCSR is kube's certificates.ParseCSR of spec.request, which JSON
// carries in base64: the first PEM block, a CERTIFICATE REQUEST.
func parseCSR(request string) (*x509.CertificateRequest, error) {
	// Validation refuses what does not decode; a CSR that did not would
	// reach the plugin with no bytes.
	der, _ := base64.StdEncoding.DecodeString(request)
	block, _ := pem.Decode(der)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// signerOf is an object's spec.signerName.
func signerOf(o map[string]any) string {
	spec, _ := o["spec"].(map[string]any)
	return str(spec, "signerName")
}
