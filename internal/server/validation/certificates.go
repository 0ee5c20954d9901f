package validation

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

func init() {
	bundles := [3]string{"certificates.k8s.io", "v1", "clustertrustbundles"}
	byResource[bundles] = clusterTrustBundle
	creates[bundles] = func(_ context.Context, obj api.Object) []api.StatusCause { return trustBundle(obj) }
	updates[bundles] = clusterTrustBundleUpdate
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
