package plugins

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// signerGrants allows verb on the signers named, per user ("user verb
// name"); "broken" fails to decide.
type signerGrants map[string]bool

func (g signerGrants) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.APIGroup != certificatesGroup || a.Resource != "signers" || a.APIVersion != "*" || !a.ResourceRequest {
		return authz.NoOpinion, "", nil
	}
	if a.User.Name == "broken" {
		return authz.Allow, "", errors.New("cannot decide") // an error denies whatever the decision
	}
	if g[a.User.Name+" "+a.Verb+" "+a.Name] {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

// csrRequest is a CSR for the organizations given, as JSON carries
// spec.request.
func csrRequest(t *testing.T, orgs ...string) string {
	return base64.StdEncoding.EncodeToString(authntest.CertificateRequest(t, "me", orgs...))
}

func TestCertificatePlugins(t *testing.T) {
	grants := signerGrants{
		"approver approve example.com/signer": true,
		"wide approve example.com/*":          true,
		"signer sign example.com/signer":      true,
		"attester attest example.com/signer":  true,
	}
	csr := func(signer, request, status string) api.Object {
		return parse(t, `{"metadata":{"name":"req"},"spec":{"signerName":"`+signer+`","request":"`+request+`","usages":["client auth"]},"status":`+status+`}`)
	}
	bundle := func(signer, labels string) api.Object {
		return parse(t, `{"metadata":{"name":"b","labels":`+labels+`},"spec":{"signerName":"`+signer+`","trustBundle":"x"}}`)
	}
	plain := csrRequest(t, "team")
	masters := csrRequest(t, "team", "system:masters")
	const (
		unapproved = `{}`
		approved   = `{"conditions":[{"type":"Approved","status":"True","reason":"OK"}]}`
		issued     = `{"conditions":[{"type":"Approved","status":"True","reason":"OK"}],"certificate":"Y2VydA=="}`
		csrPrefix  = `certificatesigningrequests.certificates.k8s.io "req" is forbidden: `
		ctbPrefix  = `clustertrustbundles.certificates.k8s.io "b" is forbidden: `
	)
	for _, tc := range []struct {
		name, user, op, resource, sub string
		obj, old                      api.Object
		want                          string // the refusal, "" if allowed
	}{
		{"approve", "approver", webhook.Update, csrs, "approval", csr("example.com/signer", plain, approved), csr("example.com/signer", plain, unapproved), ""},
		{"approve by domain", "wide", webhook.Update, csrs, "approval", csr("example.com/signer", plain, approved), csr("example.com/signer", plain, unapproved), ""},
		{"approve other signer", "approver", webhook.Update, csrs, "approval", csr("example.com/other", plain, approved), csr("example.com/other", plain, unapproved),
			csrPrefix + `user not permitted to approve requests with signerName "example.com/other"`},
		{"approve as old signer", "approver", webhook.Update, csrs, "approval", csr("example.com/signer", plain, approved), csr("example.com/other", plain, unapproved),
			csrPrefix + `user not permitted to approve requests with signerName "example.com/other"`},
		{"approve, authorizer error", "broken", webhook.Update, csrs, "approval", csr("example.com/signer", plain, approved), csr("example.com/signer", plain, unapproved),
			csrPrefix + `user not permitted to approve requests with signerName "example.com/signer"`},
		{"signer approves nothing", "signer", webhook.Update, csrs, "approval", csr("example.com/signer", plain, approved), csr("example.com/signer", plain, unapproved),
			csrPrefix + `user not permitted to approve requests with signerName "example.com/signer"`},
		{"sign", "signer", webhook.Update, csrs, "status", csr("example.com/signer", plain, issued), csr("example.com/signer", plain, approved), ""},
		{"sign, not signer", "approver", webhook.Update, csrs, "status", csr("example.com/signer", plain, issued), csr("example.com/signer", plain, approved),
			csrPrefix + `user not permitted to sign requests with signerName "example.com/signer"`},
		{"status conditions changed", "approver", webhook.Update, csrs, "status", csr("example.com/signer", plain, approved), csr("example.com/signer", plain, unapproved),
			csrPrefix + `user not permitted to sign requests with signerName "example.com/signer"`},
		{"status unchanged", "nobody", webhook.Update, csrs, "status",
			csr("example.com/signer", plain, `{"conditions":[{"type":"Approved","status":"True","reason":"OK","message":""}]}`), csr("example.com/signer", plain, approved), ""},
		{"spec update", "nobody", webhook.Update, csrs, "", csr("example.com/signer", plain, issued), csr("example.com/signer", plain, unapproved), ""},
		{"masters to kube-apiserver-client", "nobody", webhook.Create, csrs, "", csr(kubeAPIServerClientSigner, masters, unapproved), nil,
			csrPrefix + `use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`},
		{"masters to another signer", "nobody", webhook.Create, csrs, "", csr("example.com/signer", masters, unapproved), nil, ""},
		{"team to kube-apiserver-client", "nobody", webhook.Create, csrs, "", csr(kubeAPIServerClientSigner, plain, unapproved), nil, ""},
		{"unparsable request", "nobody", webhook.Create, csrs, "", csr(kubeAPIServerClientSigner, base64.StdEncoding.EncodeToString([]byte("junk")), unapproved), nil,
			csrPrefix + `failed to parse CSR: PEM block type must be CERTIFICATE REQUEST`},
		{"attest", "attester", webhook.Create, trustBundles, "", bundle("example.com/signer", `{}`), nil, ""},
		{"attest, not attester", "approver", webhook.Create, trustBundles, "", bundle("example.com/signer", `{}`), nil,
			ctbPrefix + `user not permitted to attest for signerName "example.com/signer"`},
		{"update, not attester", "approver", webhook.Update, trustBundles, "", bundle("example.com/signer", `{"a":"b"}`), bundle("example.com/signer", `{}`),
			ctbPrefix + `user not permitted to attest for signerName "example.com/signer"`},
		{"bundle without signer", "nobody", webhook.Create, trustBundles, "", bundle("", `{}`), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &webhook.Attributes{
				Operation: tc.op, Resource: webhook.GVR{Group: certificatesGroup, Version: "v1", Resource: tc.resource}, Subresource: tc.sub,
				Name: tc.obj.Name(), Object: tc.obj, OldObject: tc.old, User: &authn.User{Name: tc.user}, Authorizer: grants,
			}
			err := New(source{}, nil).Validate(t.Context(), a)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A trust bundle's update that changes only what the garbage collector
	// does needs no attest.
	old := bundle("example.com/signer", `{}`)
	gc := old.DeepCopy()
	gc.SetMeta("finalizers", []any{"x"})
	a := &webhook.Attributes{Operation: webhook.Update, Resource: webhook.GVR{Group: certificatesGroup, Version: "v1", Resource: trustBundles},
		Name: "b", Object: gc, OldObject: old, User: &authn.User{Name: "nobody"}, Authorizer: grants}
	if err := New(source{}, nil).Validate(t.Context(), a); err != nil {
		t.Errorf("finalizers only: %v", err)
	}
}
