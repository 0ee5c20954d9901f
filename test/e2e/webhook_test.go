package e2e

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/audit/audittest"
)

// webhooks is an HTTPS admission webhook server for tests: each path is a
// webhook with its own answer, and every AdmissionReview request it gets
// is kept, by path.
type webhooks struct {
	srv      *httptest.Server
	caBundle string
	mu       sync.Mutex
	reviews  map[string][]map[string]any // guarded by mu
	release  chan struct{}               // closed at the end: slow webhooks return
}

// answers are the webhooks by path: each returns the AdmissionResponse
// (uid aside) for a request.
var answers = map[string]func(req map[string]any) map[string]any{
	"/allow": func(map[string]any) map[string]any {
		return map[string]any{"allowed": true, "warnings": []any{"allowed by the test"}, "auditAnnotations": map[string]any{"seen": "yes"}}
	},
	"/deny": func(map[string]any) map[string]any {
		return map[string]any{"allowed": false, "status": map[string]any{"code": 403, "message": "the test says no"}}
	},
	"/label": func(req map[string]any) map[string]any {
		return jsonPatch(`[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`)
	},
	"/annotate": func(req map[string]any) map[string]any {
		return jsonPatch(`[{"op":"add","path":"/metadata/annotations","value":{"annotated":"yes"}}]`)
	},
}

func jsonPatch(p string) map[string]any {
	return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": base64.StdEncoding.EncodeToString([]byte(p))}
}

func startWebhooks(t *testing.T) *webhooks {
	w := &webhooks{reviews: map[string][]map[string]any{}, release: make(chan struct{})}
	w.srv = httptest.NewTLSServer(http.HandlerFunc(w.serve))
	t.Cleanup(func() {
		close(w.release)
		w.srv.Close()
	})
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.srv.Certificate().Raw})
	w.caBundle = base64.StdEncoding.EncodeToString(ca)
	return w
}

func (w *webhooks) serve(rw http.ResponseWriter, r *http.Request) {
	var in struct{ Request map[string]any }
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &in)
	w.mu.Lock()
	w.reviews[r.URL.Path] = append(w.reviews[r.URL.Path], in.Request)
	w.mu.Unlock()
	switch r.URL.Path {
	case "/slow":
		select {
		case <-w.release:
		case <-r.Context().Done():
		}
		return
	case "/garbage":
		_, _ = rw.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":`))
		return
	}
	resp := answers[r.URL.Path](in.Request)
	resp["uid"] = in.Request["uid"]
	_ = json.NewEncoder(rw).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
}

func (w *webhooks) calls(path string) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reviews[path]
}

// hook is a webhook's JSON calling path for configmaps of the operations
// given, with the app label value as object selector, and more fields.
func (w *webhooks) hook(name, path, app string, ops string, more string) string {
	h := fmt.Sprintf(`{"name":%q,"clientConfig":{"url":%q,"caBundle":%q},"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"operations":[%s],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],
		"objectSelector":{"matchLabels":{"app":%q}}`, name, w.srv.URL+path, w.caBundle, ops, app)
	if more != "" {
		h += "," + more
	}
	return h + "}"
}

// TestAdmissionWebhooks drives the webhooks from the binary: denial,
// JSON patch, reinvocation, failure policies of a webhook down, slow or
// answering garbage, selectors, match conditions, dry runs, deletes, and
// what reaches the client (Status, Warning headers).
func TestAdmissionWebhooks(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	s := startServer(t, "--audit-policy-file", writeFile(t, dir, "policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"),
		"--audit-log-path", logPath)
	w := startWebhooks(t)
	call := func(method, path, body string) (int, map[string]any, http.Header) {
		t.Helper()
		resp := s.do(t, "", method, path, body)
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out, resp.Header
	}
	mustCall := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, out, _ := call(method, path, body)
		if code != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, code, out, want)
		}
		return out
	}
	const cms = "/api/v1/namespaces/hooked/configmaps"
	cm := func(name, app string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"app":%q}}}`, name, app)
	}
	mustCall("POST", "/api/v1/namespaces", `{"metadata":{"name":"hooked","labels":{"team":"a"}}}`, 201)
	mustCall("POST", "/api/v1/namespaces", `{"metadata":{"name":"other"}}`, 201)

	validating := strings.Join([]string{
		w.hook("deny.example.com", "/deny", "deny", `"CREATE","DELETE"`, ""),
		w.hook("allow.example.com", "/allow", "allow", `"*"`, ""),
		w.hook("down-fail.example.com", "/x", "down-fail", `"CREATE"`, ""),
		w.hook("down-ignore.example.com", "/x", "down-ignore", `"CREATE"`, `"failurePolicy":"Ignore"`),
		w.hook("slow.example.com", "/slow", "slow", `"CREATE"`, `"timeoutSeconds":1`),
		w.hook("garbage.example.com", "/garbage", "garbage", `"CREATE"`, ""),
		w.hook("cond.example.com", "/deny", "cond", `"CREATE"`, `"matchConditions":[{"name":"prefix","expression":"object.metadata.name.startsWith('cond-') && request.operation == 'CREATE'"}]`),
		w.hook("ns.example.com", "/deny", "ns", `"CREATE"`, `"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"other"}}`),
	}, ",")
	// Down: a port nothing listens on.
	validating = strings.ReplaceAll(validating, w.srv.URL+"/x", "https://127.0.0.1:1/x")
	mustCall("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", `{"metadata":{"name":"v"},"webhooks":[`+validating+`]}`, 201)
	mutating := strings.Join([]string{
		w.hook("label.example.com", "/label", "mutate", `"CREATE"`, `"reinvocationPolicy":"IfNeeded"`),
		w.hook("annotate.example.com", "/annotate", "mutate", `"CREATE"`, ""),
	}, ",")
	mustCall("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", `{"metadata":{"name":"m"},"webhooks":[`+mutating+`]}`, 201)

	t.Run("deny", func(t *testing.T) {
		code, st, _ := call("POST", cms, cm("d", "deny"))
		want := `admission webhook "deny.example.com" denied the request: the test says no`
		if code != 403 || st["message"] != want || st["reason"] != nil || st["details"] != nil {
			t.Fatalf("%d %v, want 403 %q", code, st, want)
		}
		mustCall("GET", cms+"/d", "", 404)
	})
	t.Run("allow, warnings", func(t *testing.T) {
		code, obj, h := call("POST", cms, cm("a", "allow"))
		if code != 201 || h.Get("Warning") != `299 - "allowed by the test"` {
			t.Fatalf("%d %v, Warning %q", code, obj, h.Values("Warning"))
		}
		reqs := w.calls("/allow")
		r := reqs[len(reqs)-1]
		if r["operation"] != "CREATE" || r["namespace"] != "hooked" || r["name"] != "a" || r["dryRun"] != false ||
			fmt.Sprint(r["kind"]) != "map[group: kind:ConfigMap version:v1]" || fmt.Sprint(r["resource"]) != "map[group: resource:configmaps version:v1]" ||
			r["oldObject"] != nil || fmt.Sprint(r["options"]) != "map[apiVersion:meta.k8s.io/v1 kind:CreateOptions]" {
			t.Fatalf("review request %v", r)
		}
		mustCall("PUT", cms+"/a", `{"metadata":{"name":"a","labels":{"app":"allow"}},"data":{"k":"v"}}`, 200)
		reqs = w.calls("/allow")
		r = reqs[len(reqs)-1]
		if r["operation"] != "UPDATE" || r["oldObject"] == nil || fmt.Sprint(r["object"].(map[string]any)["data"]) != "map[k:v]" {
			t.Fatalf("update review %v", r)
		}
	})
	t.Run("mutate and reinvoke", func(t *testing.T) {
		obj := mustCall("POST", cms, cm("m", "mutate"), 201)
		md := obj["metadata"].(map[string]any)
		if md["labels"].(map[string]any)["mutated"] != "yes" || md["annotations"].(map[string]any)["annotated"] != "yes" {
			t.Fatalf("mutated object %v", obj)
		}
		if n := len(w.calls("/label")); n != 2 {
			t.Fatalf("label webhook called %d times, want 2 (reinvoked after annotate changed the object)", n)
		}
	})
	t.Run("failure policies", func(t *testing.T) {
		for _, tc := range []struct{ app, want string }{
			{"down-fail", `Internal error occurred: failed calling webhook "down-fail.example.com": failed to call webhook: Post "https://127.0.0.1:1/x?timeout=10s"`},
			{"slow", `Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "` + w.srv.URL + `/slow?timeout=1s"`},
			{"garbage", `Internal error occurred: failed calling webhook "garbage.example.com": failed to call webhook: decoding the response`},
		} {
			start := time.Now()
			code, st, _ := call("POST", cms, cm(tc.app, tc.app))
			msg, _ := st["message"].(string)
			if code != 500 || !strings.HasPrefix(msg, tc.want) {
				t.Errorf("%s: %d %q, want 500 %q", tc.app, code, msg, tc.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("%s: answered in %v", tc.app, took)
			}
		}
		mustCall("POST", cms, cm("i", "down-ignore"), 201)
	})
	t.Run("selectors and conditions", func(t *testing.T) {
		mustCall("POST", cms, cm("plain", "cond"), 201)
		if code, _, _ := call("POST", cms, cm("cond-x", "cond")); code != 403 {
			t.Fatalf("matchCondition true: %d, want 403", code)
		}
		mustCall("POST", cms, cm("n", "ns"), 201) // hooked is not "other"
		if code, _, _ := call("POST", "/api/v1/namespaces/other/configmaps", cm("n", "ns")); code != 403 {
			t.Fatalf("namespaceSelector on kubernetes.io/metadata.name: %d, want 403", code)
		}
		mustCall("POST", cms, cm("nolabel", "none"), 201)
	})
	t.Run("dry run", func(t *testing.T) {
		mustCall("POST", cms+"?dryRun=All", cm("dry", "allow"), 201)
		reqs := w.calls("/allow")
		if r := reqs[len(reqs)-1]; r["dryRun"] != true || r["name"] != "dry" {
			t.Fatalf("dry-run review %v", r)
		}
		mustCall("GET", cms+"/dry", "", 404)
	})
	t.Run("delete", func(t *testing.T) {
		mustCall("PUT", cms+"/a", `{"metadata":{"name":"a","labels":{"app":"deny"}}}`, 200) // UPDATE is not in the deny rule
		code, st, _ := call("DELETE", cms+"/a", "")
		if code != 403 {
			t.Fatalf("delete: %d %v", code, st)
		}
		reqs := w.calls("/deny")
		r := reqs[len(reqs)-1]
		if r["operation"] != "DELETE" || r["object"] != nil || r["oldObject"].(map[string]any)["metadata"].(map[string]any)["name"] != "a" ||
			r["options"].(map[string]any)["kind"] != "DeleteOptions" {
			t.Fatalf("delete review %v", r)
		}
		mustCall("GET", cms+"/a", "", 200)
	})
	t.Run("metrics", func(t *testing.T) {
		resp := s.do(t, "", "GET", "/metrics", "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			`apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny.example.com",operation="CREATE",rejection_code="403",type="validating"}`,
			`apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="down-fail.example.com",operation="CREATE",rejection_code="503",type="validating"}`,
			`apiserver_admission_webhook_request_total{code="200",name="label.example.com",operation="CREATE",rejected="false",type="admit"}`,
			`apiserver_admission_webhook_admission_duration_seconds_count{name="allow.example.com",operation="CREATE",rejected="false",type="validating"}`,
			`apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="true",type="validate"}`,
		} {
			if !strings.Contains(string(b), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
	t.Run("audit annotations", func(t *testing.T) {
		mustCall("POST", cms, cm("audited", "mutate"), 201)
		mustCall("POST", cms, cm("audited-too", "allow"), 201)
		s.stop(t) // closes the log
		found := map[string]string{}
		for _, ev := range audittest.ReadLog(t, logPath) {
			if ev.Verb == "create" && ev.ObjectRef != nil && strings.HasPrefix(ev.ObjectRef.Name, "audited") && ev.Stage == audit.StageResponseComplete {
				maps.Copy(found, ev.Annotations)
			}
		}
		for k, v := range map[string]string{
			"allow.example.com/seen":                            "yes",
			"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"m","webhook":"label.example.com","mutated":true}`,
		} {
			if found[k] != v {
				t.Errorf("audit annotation %s = %q, want %q (all: %v)", k, found[k], v, found)
			}
		}
	})
}
