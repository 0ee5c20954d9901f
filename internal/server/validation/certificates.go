package validation

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

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

func init() {
	bundles := [3]string{"certificates.k8s.io", "v1", "clustertrustbundles"}
	byResource[bundles] = clusterTrustBundle
	creates[bundles] = func(_ context.Context, obj api.Object) []api.StatusCause { return trustBundle(obj) }
	updates[bundles] = clusterTrustBundleUpdate
	csrs := [3]string{"certificates.k8s.io", "v1", "certificatesigningrequests"}
	creates[csrs] = csrCreate
	updates[csrs] = CSRUpdate
}

// The signer name's limits (kube's ValidateSignerName): a domain of at
// most a DNS subdomain's length, a path of a DNS label, a dot and a DNS
// subdomain.
const (
	maxSignerDomain = 253
	maxSignerName   = maxSignerDomain + 1 + 253 + 1 + 63
)

// maxTrustBundleSize is certificates.MaxTrustBundleSize.
const maxTrustBundleSize = 1 << 20

// ClusterTrustBundleName is kube's ValidateClusterTrustBundleName for a
// bundle of signer: with a signer, the name is the signer with ":" for "/",
// a ":", then a DNS subdomain; without, a DNS subdomain without ":".
func ClusterTrustBundleName(signer string) func(name string) []string {
	return func(name string) []string {
		if signer == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return kubefmt.Util.DNS1123Subdomain(name)
		}
		prefix := strings.ReplaceAll(signer, "/", ":") + ":"
		if !strings.HasPrefix(name, prefix) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
		}
		return kubefmt.Util.DNS1123Subdomain(strings.TrimPrefix(name, prefix))
	}
}

// clusterTrustBundle is what kube's ValidateClusterTrustBundle checks
// beyond the name (ClusterTrustBundleName) and the bundle (trustBundle):
// the signer's name when set.
func clusterTrustBundle(obj api.Object) []api.StatusCause {
	var c causes
	if signer := str(object(obj, "spec"), "signerName"); signer != "" {
		c.signerName("spec.signerName", signer)
	}
	return c
}

// clusterTrustBundleUpdate is kube's ValidateClusterTrustBundleUpdate: the
// bundle is parsed only when it changed, and the signer may not change.
func clusterTrustBundleUpdate(_ context.Context, obj, old api.Object) []api.StatusCause {
	spec, oldSpec := object(obj, "spec"), object(old, "spec")
	var c causes
	if str(spec, "trustBundle") != str(oldSpec, "trustBundle") {
		c = trustBundle(obj)
	}
	if s, was := str(spec, "signerName"), str(oldSpec, "signerName"); s != was {
		c.invalid("spec.signerName", s, immutable)
	}
	return c
}

// signerName is kube's ValidateSignerName of a signer that is set:
// "<domain>/<path>", the domain DNS labels with at least one dot, the path
// DNS subdomains joined by dots.
func (c *causes) signerName(p path, signer string) {
	domain, name, ok := strings.Cut(signer, "/")
	if !ok || strings.Contains(name, "/") {
		c.invalid(p, signer, "must be a fully qualified domain and path of the form 'example.com/signer-name'")
		return
	}
	if len(domain) > maxSignerDomain {
		c.tooLong(p, maxSignerDomain)
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := kubefmt.Util.DNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				c.invalid(p, domain, fmt.Sprintf("validating label %q: %s", l, m))
			}
			break // the rest would say the same
		}
	}
	if len(labels) < 2 {
		c.invalid(p, domain, "should be a domain with at least two segments separated by dots")
	}
	for _, l := range strings.Split(name, ".") {
		if msgs := kubefmt.Util.DNS1123Subdomain(l); len(msgs) > 0 {
			for _, m := range msgs {
				c.invalid(p, name, fmt.Sprintf("validating label %q: %s", l, m))
			}
			break
		}
	}
	if len(signer) > maxSignerName {
		c.tooLong(p, maxSignerName)
	}
}

// trustBundle is kube's validateTrustBundle of spec.trustBundle: PEM
// CERTIFICATE blocks without headers, each a CA certificate with valid
// basic constraints, at least one, none twice; anything else between
// blocks is ignored.
func trustBundle(obj api.Object) []api.StatusCause {
	const p, omitted = path("spec.trustBundle"), "<value omitted>"
	in := str(object(obj, "spec"), "trustBundle")
	var c causes
	if len(in) > maxTrustBundleSize {
		c.tooLong(p, maxTrustBundleSize)
		return c
	}
	seen := map[string][]int{}
	var order []string // of first sight, for a stable order of the duplicates
	rest := []byte(in)
	for i := 0; ; i++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		var bad string
		switch cert, err := x509.ParseCertificate(b.Bytes); {
		case b.Type != "CERTIFICATE":
			bad = fmt.Sprintf("entry %d has bad block type: %v", i, b.Type)
		case len(b.Headers) != 0:
			bad = fmt.Sprintf("entry %d has PEM block headers", i)
		case err != nil:
			bad = fmt.Sprintf("entry %d does not parse as X.509", i)
		case !cert.IsCA:
			bad = fmt.Sprintf("entry %d does not have the CA bit set", i)
		case !cert.BasicConstraintsValid:
			bad = fmt.Sprintf("entry %d has invalid basic constraints", i)
		}
		if bad != "" {
			c.invalid(p, omitted, bad)
			continue
		}
		if seen[string(b.Bytes)] == nil {
			order = append(order, string(b.Bytes))
		}
		seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
	}
	if len(c) > 0 { // duplicates or none would only repeat it
		return c
	}
	if len(seen) == 0 {
		c.invalid(p, omitted, "at least one trust anchor must be provided")
	}
	for _, b := range order {
		if idx := seen[b]; len(idx) > 1 {
			c.invalid(p, omitted, fmt.Sprintf("duplicate trust anchor (indices %v)", idx))
		}
	}
	return c
}

// csrUsages are the key usages a CSR may ask for (kube's allValidUsages),
// sorted.
var csrUsages = []string{
	"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
	"decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
	"ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
	"server auth", "signing", "timestamping",
}

// legacySigner is certificates.LegacyUnknownSignerName, which v1 refuses
// on new CSRs.
const legacySigner = "kubernetes.io/legacy-unknown"

// csrOptions are kube's certificateValidationOptions: what a write may do
// by the subresource it goes through, and what it is forgiven because the
// stored CSR did it already.
type csrOptions struct {
	setApproval, setCertificate                                                bool
	approvedAndDenied, legacySigner, duplicateTypes, emptyType, anyCertificate bool
	unknownUsages, duplicateUsages                                             bool
}

// csrOptionsFor is kube's getValidationOptions of a write of obj over old
// (nil on create).
func csrOptionsFor(obj, old api.Object) csrOptions {
	if old == nil {
		return csrOptions{}
	}
	spec, conds := object(old, "spec"), list(object(old, "status"), "conditions")
	types := map[string]int{}
	for _, c := range conds {
		types[str(asObject(c), "type")]++
	}
	usages := list(spec, "usages")
	seen := map[string]bool{}
	var o csrOptions
	for _, u := range usages {
		s, _ := u.(string)
		o.unknownUsages = o.unknownUsages || !slices.Contains(csrUsages, s)
		o.duplicateUsages = o.duplicateUsages || seen[s]
		seen[s] = true
	}
	o.approvedAndDenied = types["Approved"] > 0 && types["Denied"] > 0
	o.legacySigner = str(spec, "signerName") == legacySigner
	o.emptyType = types[""] > 0
	for _, n := range types {
		o.duplicateTypes = o.duplicateTypes || n > 1
	}
	cert, oldCert := str(object(obj, "status"), "certificate"), str(object(old, "status"), "certificate")
	o.anyCertificate = cert == oldCert || certificateError(oldCert) != nil
	return o
}

// csrCreate is kube's ValidateCertificateSigningRequestCreate.
func csrCreate(_ context.Context, obj api.Object) []api.StatusCause {
	return csr(obj, csrOptions{})
}

// CSRUpdate is kube's ValidateCertificateSigningRequestUpdate of a write
// through the CSR itself; CSRStatusUpdate through its status, which may
// set the certificate; CSRApprovalUpdate through its approval, which may
// set the Approved and Denied conditions.
func CSRUpdate(_ context.Context, obj, old api.Object) []api.StatusCause {
	return csrUpdate(obj, old, csrOptionsFor(obj, old))
}

// CSRStatusUpdate: see CSRUpdate.
func CSRStatusUpdate(_ context.Context, obj, old api.Object) []api.StatusCause {
	o := csrOptionsFor(obj, old)
	o.setCertificate = true
	return csrUpdate(obj, old, o)
}

// CSRApprovalUpdate: see CSRUpdate.
func CSRApprovalUpdate(_ context.Context, obj, old api.Object) []api.StatusCause {
	o := csrOptionsFor(obj, old)
	o.setApproval = true
	return csrUpdate(obj, old, o)
}

// csr is kube's validateCertificateSigningRequest less the metadata.
func csr(obj api.Object, o csrOptions) []api.StatusCause {
	var c causes
	spec := object(obj, "spec")
	request := str(spec, "request")
	if err := requestError(request); err != nil {
		c.invalid("spec.request", request, err.Error())
	}
	usages := list(spec, "usages")
	if len(usages) == 0 {
		c.required("spec.usages", "")
	}
	seen := map[string]bool{}
	for i, u := range usages {
		s, _ := u.(string)
		if !o.unknownUsages && !slices.Contains(csrUsages, s) {
			c.notSupported(path("spec.usages").index(i), s, csrUsages...)
		}
		if !o.duplicateUsages && seen[s] {
			c.add(api.CauseTypeFieldValueDuplicate, path("spec.usages").index(i), "Duplicate value: "+render(jsonValue{s}))
		}
		seen[s] = true
	}
	if signer := str(spec, "signerName"); !o.legacySigner && signer == legacySigner {
		c.invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version")
	} else if signer == "" {
		c.required("spec.signerName", "")
	} else {
		c.signerName("spec.signerName", signer)
	}
	if n, ok := integer(spec["expirationSeconds"]); ok && n < 600 {
		c.invalid("spec.expirationSeconds", n, "may not specify a duration less than 600 seconds (10 minutes)")
	}
	c.csrConditions(list(object(obj, "status"), "conditions"), o)
	if !o.anyCertificate {
		if err := certificateError(str(object(obj, "status"), "certificate")); err != nil {
			c.invalid("status.certificate", "<certificate data>", err.Error())
		}
	}
	return c
}

// csrConditions is kube's validateConditions.
func (c *causes) csrConditions(conds []any, o csrOptions) {
	const p = path("status.conditions")
	seen := map[string]bool{}
	for i, cond := range conds {
		cond := asObject(cond)
		typ, status := str(cond, "type"), str(cond, "status")
		if !o.emptyType && typ == "" {
			c.required(p.index(i).child("type"), "")
		}
		allowed := []string{"False", "True", "Unknown"}
		if typ == "Approved" || typ == "Denied" || typ == "Failed" {
			allowed = []string{"True"}
		}
		switch {
		case status == "":
			c.required(p.index(i).child("status"), "")
		case !slices.Contains(allowed, status):
			c.notSupported(p.index(i).child("status"), status, allowed...)
		}
		if !o.duplicateTypes && seen[typ] {
			c.add(api.CauseTypeFieldValueDuplicate, p.index(i).child("type"), "Duplicate value: "+render(jsonValue{typ}))
		}
		seen[typ] = true
	}
	if !o.approvedAndDenied && seen["Approved"] && seen["Denied"] {
		// Declarative validation's zeroOrOneOf, which in 1.37 replaces
		// the handwritten "mutually exclusive" errors with one.
		const members = `conditions[{"type": "Approved"}], conditions[{"type": "Denied"}]`
		c.invalid(p, "{"+members+"}", "must specify at most one of: `"+strings.ReplaceAll(members, "], ", "]`, `")+"`")
	}
}

// csrUpdate is kube's validateCertificateSigningRequestUpdate less the
// metadata: conditions Approved, Denied and Failed are never removed,
// Approved and Denied change only through the approval subresource, the
// certificate is set only through status, and only once.
func csrUpdate(obj, old api.Object, o csrOptions) []api.StatusCause {
	c := causes(csr(obj, o))
	conds, oldConds := list(object(obj, "status"), "conditions"), list(object(old, "status"), "conditions")
	for _, typ := range []string{"Approved", "Denied", "Failed"} {
		if len(conditionsOfType(conds, typ)) < len(conditionsOfType(oldConds, typ)) {
			c.forbidden("status.conditions", fmt.Sprintf("updates may not remove a condition of type %q", typ))
		}
	}
	if !o.setApproval {
		for _, typ := range []string{"Approved", "Denied"} {
			now, was := conditionsOfType(conds, typ), conditionsOfType(oldConds, typ)
			switch {
			case len(now) < len(was): // refused above
			case len(now) > len(was):
				c.forbidden("status.conditions", fmt.Sprintf("updates may not add a condition of type %q", typ))
			case !reflect.DeepEqual(now, was):
				c.forbidden("status.conditions", fmt.Sprintf("updates may not modify a condition of type %q", typ))
			}
		}
	}
	cert, oldCert := str(object(obj, "status"), "certificate"), str(object(old, "status"), "certificate")
	switch {
	case cert == oldCert:
	case !o.setCertificate:
		c.forbidden("status.certificate", "updates may not set certificate content")
	case oldCert != "":
		c.forbidden("status.certificate", "updates may not modify existing certificate content")
	}
	return c
}

// conditionsOfType are the conditions of type typ, each without the
// fields left at their zero values, as kube compares them semantically.
func conditionsOfType(conds []any, typ string) []map[string]any {
	var out []map[string]any
	for _, cond := range conds {
		cond := asObject(cond)
		if str(cond, "type") != typ {
			continue
		}
		set := map[string]any{}
		for k, v := range cond {
			if v != nil && v != "" {
				set[k] = v
			}
		}
		out = append(out, set)
	}
	return out
}

// requestError is kube's validateCSR of spec.request (base64 in JSON): a
// PEM CERTIFICATE REQUEST whose signature holds.
func requestError(request string) error {
	der, _ := base64.StdEncoding.DecodeString(request)
	block, _ := pem.Decode(der)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// certificateError is kube's validateCertificate of status.certificate
// (base64 in JSON): empty, or PEM CERTIFICATE blocks without headers, each
// holding certificates.
func certificateError(certificate string) error {
	data, _ := base64.StdEncoding.DecodeString(certificate)
	if len(data) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// asObject is v if it is an object, else nil.
func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
