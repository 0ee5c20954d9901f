package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// csrPEM is a CSR for the organizations given, as a CSR's spec.request
// carries it in JSON.
func csrPEM(t *testing.T, orgs ...string) string {
	return base64.StdEncoding.EncodeToString(authntest.CertificateRequest(t, "alice", orgs...))
}

// TestCertificateSigningRequests: a CSR records the token user who
// created it, whatever it claimed, with no status; `kubectl certificate
// approve` is refused to a user who may update the approval subresource
// but not approve for the signer, with kube's message, and allowed once a
// role grants `approve` on the signer's domain; a signer's status write
// needs `sign` and takes the written metadata; kube-apiserver's client
// signer is refused system:masters.
func TestCertificateSigningRequests(t *testing.T) {
	tokens := tokenFile(t, "admin-token,admin,1,system:masters", "alice-token,alice,2,team", "bob-token,bob,3")
	ca := authntest.NewCA(t)
	s := startTLSServer(t, ca, "--token-auth-file", tokens)
	admin, alice, bob := s.as(t, "admin-token"), s.as(t, "alice-token"), s.as(t, "bob-token")
	const (
		rbacV1 = "/apis/rbac.authorization.k8s.io/v1"
		csrs   = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	)
	grant := func(name, rules string, users ...string) {
		t.Helper()
		var subjects []string
		for _, u := range users {
			subjects = append(subjects, `{"kind":"User","name":"`+u+`"}`)
		}
		for _, c := range []struct{ path, body string }{
			{rbacV1 + "/clusterroles", `{"metadata":{"name":"` + name + `"},"rules":` + rules + `}`},
			{rbacV1 + "/clusterrolebindings", `{"metadata":{"name":"` + name + `"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + name + `"},
				"subjects":[` + strings.Join(subjects, ",") + `]}`},
		} {
			if code, body := admin("POST", c.path, c.body); code != http.StatusCreated {
				t.Fatalf("admin POST %s: %d %s", c.path, code, body)
			}
		}
	}
	grant("csr-requester", `[{"apiGroups":["certificates.k8s.io"],"resources":["certificatesigningrequests"],"verbs":["create","get"]}]`, "alice")
	grant("csr-approver", `[{"apiGroups":["certificates.k8s.io"],"resources":["certificatesigningrequests"],"verbs":["get","list"]},
		{"apiGroups":["certificates.k8s.io"],"resources":["certificatesigningrequests/approval","certificatesigningrequests/status"],"verbs":["update"]}]`, "bob")

	claimed := `{"metadata":{"name":"alice-client"},"spec":{"signerName":"example.com/client","request":"` + csrPEM(t, "team") + `",
		"usages":["client auth"],"username":"mallory","uid":"9","groups":["system:masters"]},
		"status":{"conditions":[{"type":"Approved","status":"True","reason":"Self"}]}}`
	code, body := alice("POST", csrs, claimed)
	if code != http.StatusCreated {
		t.Fatalf("alice creates a CSR: %d %s", code, body)
	}
	var created struct {
		Spec struct {
			Username string   `json:"username"`
			UID      string   `json:"uid"`
			Groups   []string `json:"groups"`
		} `json:"spec"`
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil {
		t.Fatal(err)
	}
	if s := created.Spec; s.Username != "alice" || s.UID != "2" || strings.Join(s.Groups, ",") != "team,system:authenticated" || len(created.Status) != 0 {
		t.Errorf("created CSR: spec %+v status %v, want alice's identity and no status", s, created.Status)
	}

	kubectl := needKubectl(t)
	approve := func(token string) (string, error) {
		out, err := exec.CommandContext(t.Context(), kubectl, "--server", s.URL, "--certificate-authority", s.caFile, "--token", token,
			"certificate", "approve", "alice-client").CombinedOutput()
		return string(out), err
	}
	out, err := approve("bob-token")
	if want := `certificatesigningrequests.certificates.k8s.io "alice-client" is forbidden: user not permitted to approve requests with signerName "example.com/client"`; err == nil || !strings.Contains(out, want) {
		t.Errorf("bob approves without the signer: %v %s, want %q", err, out, want)
	}
	grant("example-approver", `[{"apiGroups":["certificates.k8s.io"],"resources":["signers"],"resourceNames":["example.com/*"],"verbs":["approve"]}]`, "bob")
	if out, err := approve("bob-token"); err != nil {
		t.Fatalf("bob approves with approve on example.com/*: %v %s", err, out)
	}
	code, body = alice("GET", csrs+"/alice-client", "")
	if code != http.StatusOK || !strings.Contains(body, `"type":"Approved"`) || !strings.Contains(body, `"reason":"KubectlApprove"`) || !strings.Contains(body, `"lastUpdateTime":"`) {
		t.Errorf("the approved CSR: %d %s", code, body)
	}

	// Issuing the certificate needs sign, as a status write.
	var stored map[string]any
	if err := json.Unmarshal([]byte(body), &stored); err != nil {
		t.Fatal(err)
	}
	certificate := base64.StdEncoding.EncodeToString(ca.PEM) // any PEM certificate will do
	stored["status"].(map[string]any)["certificate"] = certificate
	stored["metadata"].(map[string]any)["labels"] = map[string]any{"issued": "yes"} // taken, as kube's status strategy takes metadata
	issue, _ := json.Marshal(stored)
	code, body = bob("PUT", csrs+"/alice-client/status", string(issue))
	if want := `user not permitted to sign requests with signerName \"example.com/client\"`; code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("bob issues without sign: %d %s, want 403 %q", code, body, want)
	}
	grant("example-signer", `[{"apiGroups":["certificates.k8s.io"],"resources":["signers"],"resourceNames":["example.com/client"],"verbs":["sign"]}]`, "bob")
	if code, body := bob("PUT", csrs+"/alice-client/status", string(issue)); code != http.StatusOK || !strings.Contains(body, `"certificate":"`+certificate+`"`) || !strings.Contains(body, `"labels":{"issued":"yes"}`) {
		t.Errorf("bob issues with sign: %d %s", code, body)
	}

	masters := `{"metadata":{"name":"masters"},"spec":{"signerName":"kubernetes.io/kube-apiserver-client","request":"` + csrPEM(t, "system:masters") + `","usages":["client auth"]}}`
	code, body = alice("POST", csrs, masters)
	if want := `certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`; code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("a system:masters CSR: %d %s, want 403 %q", code, body, want)
	}
}
