package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/leader"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage"
)

// TestPodAdmissionPlugins checks kube's built-in admission plugins through
// the server: a new pod runs as the default account with its token volume
// mounted, the default tolerations and priority 0; one naming an account or
// a class that does not exist is refused with kube's message; the system's
// classes exist from the start; a pod in a namespace created a moment ago
// is admitted (its default account is made at once if the controller has
// not yet); a second default PriorityClass is refused.
func TestPodAdmissionPlugins(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const pods = "/api/v1/namespaces/default/pods"
	pod := func(name, spec string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{` + spec + `"containers":[{"name":"c","image":"nginx"}]}}`
	}
	const mountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	runSteps(t, ts, []step{
		{name: "defaults", method: "POST", path: pods, body: pod("a", ""), code: 201, want: map[string]any{
			"spec.serviceAccountName": "default", "spec.serviceAccount": "default",
			"spec.containers.0.volumeMounts.0.mountPath":                               mountPath,
			"spec.volumes.0.projected.sources.0.serviceAccountToken.expirationSeconds": "3607",
			"spec.volumes.0.projected.sources.1.configMap.name":                        "kube-root-ca.crt",
			"spec.tolerations.0.key":                                                   "node.kubernetes.io/not-ready",
			"spec.tolerations.1.tolerationSeconds":                                     "300",
			"spec.priority":                                                            "0",
			"spec.preemptionPolicy":                                                    "PreemptLowerPriority",
		}, check: func(t *testing.T, r response) {
			volume, _ := at(r.obj, "spec.volumes.0.name").(string)
			if !strings.HasPrefix(volume, "kube-api-access-") || at(r.obj, "spec.containers.0.volumeMounts.0.name") != volume {
				t.Errorf("token volume %q, mounted %v", volume, at(r.obj, "spec.containers.0.volumeMounts.0"))
			}
		}},
		{name: "read back", method: "GET", path: pods + "/a", code: 200, want: map[string]any{
			"spec.containers.0.volumeMounts.0.mountPath": mountPath, "spec.priority": "0",
		}},
		{name: "missing account", method: "POST", path: pods, body: pod("b", `"serviceAccountName":"nope",`), code: 403, want: map[string]any{
			"message": `pods "b" is forbidden: error looking up service account default/nope: serviceaccount "nope" not found`, "reason": "Forbidden",
		}},
		{name: "missing namespace", method: "POST", path: "/api/v1/namespaces/nope/pods", body: pod("b", ""), code: 404, want: map[string]any{
			"message": `namespaces "nope" not found`,
		}},
		{name: "missing class", method: "POST", path: pods, body: pod("b", `"priorityClassName":"nope",`), code: 403, want: map[string]any{
			"message": `pods "b" is forbidden: no PriorityClass with name nope was found`,
		}},
		{name: "system class", method: "POST", path: pods, body: pod("c", `"priorityClassName":"system-node-critical",`), code: 201, want: map[string]any{
			"spec.priority": "2000001000", "spec.preemptionPolicy": "PreemptLowerPriority",
		}},
		{name: "no automount", method: "POST", path: pods, body: pod("d", `"automountServiceAccountToken":false,`), code: 201, want: map[string]any{
			"spec.volumes": nil, "spec.containers.0.volumeMounts": nil, "spec.serviceAccountName": "default",
		}},
		{name: "no root CA without a CA", method: "GET", path: "/api/v1/namespaces/default/configmaps/kube-root-ca.crt", code: 404},
		{name: "fresh namespace", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"fresh"}}`, code: 201},
		{name: "pod in it at once", method: "POST", path: "/api/v1/namespaces/fresh/pods", body: pod("a", ""), code: 201, want: map[string]any{
			"spec.serviceAccountName": "default",
		}},
		// The account a dry run needs is made for real: it is the server's
		// write, not the dry run's.
		{name: "another fresh namespace", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"fresh2"}}`, code: 201},
		{name: "a dry-run pod in it at once", method: "POST", path: "/api/v1/namespaces/fresh2/pods?dryRun=All", body: pod("a", ""), code: 201, want: map[string]any{
			"spec.serviceAccountName": "default",
		}},
		{name: "its account stored", method: "GET", path: "/api/v1/namespaces/fresh2/serviceaccounts/default", code: 200},
		{name: "a default class", method: "POST", path: "/apis/scheduling.k8s.io/v1/priorityclasses", code: 201,
			body: `{"metadata":{"name":"low"},"value":5,"globalDefault":true}`},
		{name: "the system's classes are not defaults", method: "GET", path: "/apis/scheduling.k8s.io/v1/priorityclasses/system-cluster-critical", code: 200,
			want: map[string]any{"value": "2000000000", "globalDefault": nil}},
	})
	// An update that leaves out what the plugins set on create keeps the
	// priority and gets the tolerations again, as kube's (validation would
	// refuse the change otherwise).
	r := do(t, ts, "GET", pods+"/a", "", "")
	spec := r.obj["spec"].(map[string]any)
	delete(spec, "priority")
	delete(spec, "preemptionPolicy")
	delete(spec, "tolerations")
	spec["containers"].([]any)[0].(map[string]any)["image"] = "nginx:2"
	body, _ := json.Marshal(r.obj)
	if r := do(t, ts, "PUT", pods+"/a", "", string(body)); r.code != http.StatusOK || at(r.obj, "spec.priority") != "0" ||
		at(r.obj, "spec.preemptionPolicy") != "PreemptLowerPriority" || at(r.obj, "spec.tolerations.1.key") != "node.kubernetes.io/unreachable" {
		t.Fatalf("update: %d %v", r.code, r.obj)
	}
}

// TestPluginsReadCurrentObjects checks that pods get what the objects the
// plugins read say at the moment: the default PriorityClass's priority,
// the account's pull secrets. The plugins' objects, decoded once, follow
// each change.
func TestPluginsReadCurrentObjects(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	const (
		classes  = "/apis/scheduling.k8s.io/v1/priorityclasses"
		accounts = "/api/v1/namespaces/default/serviceaccounts"
	)
	pod := func(path, want string) func() bool {
		return func() bool {
			r := do(t, ts, "POST", "/api/v1/namespaces/default/pods?dryRun=All", "",
				`{"metadata":{"name":"p"},"spec":{"serviceAccountName":"puller","containers":[{"name":"c","image":"nginx"}]}}`)
			return r.code == http.StatusCreated && at(r.obj, path) == want
		}
	}
	do(t, ts, "POST", accounts, "", `{"metadata":{"name":"puller"},"imagePullSecrets":[{"name":"first"}]}`)
	testwait.Until(t, 10*time.Second, "priority 0 without a default class", pod("spec.priority", "0"))
	testwait.Until(t, 10*time.Second, "the account's pull secret", pod("spec.imagePullSecrets.0.name", "first"))
	do(t, ts, "POST", classes, "", `{"metadata":{"name":"low"},"value":5,"globalDefault":true}`)
	testwait.Until(t, 10*time.Second, "the default class's priority", pod("spec.priority", "5"))
	do(t, ts, "PUT", accounts+"/puller", "", `{"metadata":{"name":"puller"},"imagePullSecrets":[{"name":"second"}]}`)
	testwait.Until(t, 10*time.Second, "the account's new pull secret", pod("spec.imagePullSecrets.0.name", "second"))
	do(t, ts, "DELETE", classes+"/low", "", "")
	do(t, ts, "POST", classes, "", `{"metadata":{"name":"lower"},"value":3,"globalDefault":true}`)
	testwait.Until(t, 10*time.Second, "the new default class's priority", pod("spec.priority", "3"))
	do(t, ts, "DELETE", classes+"/lower", "", "")
	testwait.Until(t, 10*time.Second, "priority 0 again", pod("spec.priority", "0"))
}

// TestRootCAConfigMap checks the kube-root-ca.crt ConfigMap of every
// namespace: the server's CA with kube's description, put back when
// changed.
func TestRootCAConfigMap(t *testing.T) {
	store := newMemoryStore(t)
	s, err := New(t.Context(), Config{Storage: store, RootCA: []byte("PEM")})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	const cm = "/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt"
	r := do(t, ts, "GET", cm, "", "")
	if r.code != http.StatusOK || !cmp.Equal(r.obj["data"], map[string]any{"ca.crt": "PEM"}) || !strings.HasPrefix(api.Object(r.obj).Annotations()["kubernetes.io/description"], "Contains a CA bundle") {
		t.Fatalf("%d %v", r.code, r.obj)
	}
	if r := do(t, ts, "PATCH", cm, "", `{"data":{"ca.crt":"other","more":"x"}}`); r.code != http.StatusOK {
		t.Fatalf("patch: %d %v", r.code, r.obj)
	}
	waitRootCA(t, store, "PEM")
}

// rootCAKey is kube-system's kube-root-ca.crt's key.
const rootCAKey = "/registry/core/configmaps/kube-system/kube-root-ca.crt"

// waitRootCA waits until kube-system's kube-root-ca.crt holds ca alone,
// and returns it as stored.
func waitRootCA(t *testing.T, store storage.Interface, ca string) storage.KV {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	holds := func(kv storage.KV) bool {
		obj, err := api.ParseObject(kv.Value)
		data, _ := obj["data"].(map[string]any)
		return err == nil && len(data) == 1 && data["ca.crt"] == ca
	}
	kv, err := store.Get(ctx, rootCAKey)
	if err != nil {
		t.Fatal(err)
	}
	if holds(kv) {
		return kv
	}
	w, err := store.Watch(ctx, rootCAKey, kv.ModRevision) // changes after it
	if err != nil {
		t.Fatal(err)
	}
	for batch := range w.Events() {
		for _, ev := range batch {
			if ev.Type == storage.EventDelete {
				t.Fatalf("deleted: %v", ev)
			}
			if holds(ev.KV) {
				return ev.KV
			}
		}
	}
	t.Fatalf("%s does not hold %q: %v", rootCAKey, ca, w.Err())
	return storage.KV{}
}

// TestRootCAOneLeader checks that of servers on one store with different
// CAs only the elected one puts its CA back in kube-root-ca.crt, as
// kube's publisher runs in the one leading controller manager: another
// server's pass over the namespaces writes nothing, and the CA changes
// only when the leadership does.
func TestRootCAOneLeader(t *testing.T) {
	store := newMemoryStore(t)
	start := func(ca string, retry time.Duration) *Server {
		s, err := New(t.Context(), Config{Storage: store, RootCA: []byte(ca),
			Election: leader.Config{LeaseDuration: 3 * time.Hour, RenewDeadline: 2 * time.Hour, RetryPeriod: retry}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	a := start("A", time.Hour)
	waitLeaseHeld(t, a)
	before := waitRootCA(t, store, "A")
	b := start("B", 10*time.Millisecond) // takes the Lease soon after a releases it
	b.accounts.ensureCurrent(t.Context(), "kube-system")
	after, err := store.Get(t.Context(), rootCAKey)
	if err != nil {
		t.Fatal(err)
	}
	if after.ModRevision != before.ModRevision {
		t.Fatalf("a server not leading rewrote kube-root-ca.crt: %s", after.Value)
	}
	a.Close()
	waitRootCA(t, store, "B")
}

// TestPluginsAroundWebhooks checks where the plugins run in the chain, as
// kube's: a mutating webhook sees the pod as they left it (account, token
// volume, tolerations, priority), and after the webhook added a
// container, their second round (kube's reinvoker runs every in-tree
// plugin again once a webhook changed the object) mounts the token in it.
func TestPluginsAroundWebhooks(t *testing.T) {
	ts := newTestServer(t)
	seen := make(chan api.Object, 2)
	clientConfig := webhookServerSeeing(t, seen, `[{"op":"add","path":"/spec/containers/-","value":{"name":"sidecar","image":"envoy"}}]`)
	config := `{"metadata":{"name":"pods"},"webhooks":[{"name":"sidecar.example.com","clientConfig":` + clientConfig + `,
		"sideEffects":"None","admissionReviewVersions":["v1"],
		"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}]}]}`
	if code, obj := call(t, ts, "POST", mutatingHook, mediaJSON, config); code != http.StatusCreated {
		t.Fatalf("webhook configuration: %d %v", code, obj)
	}
	code, pod := call(t, ts, "POST", "/api/v1/namespaces/default/pods", mediaJSON, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, pod)
	}
	hooked := <-seen
	if at(hooked, "spec.serviceAccountName") != "default" || at(hooked, "spec.containers.0.volumeMounts.0.mountPath") != "/var/run/secrets/kubernetes.io/serviceaccount" ||
		fmt.Sprint(at(hooked, "spec.priority")) != "0" || at(hooked, "spec.tolerations.1.key") != "node.kubernetes.io/unreachable" {
		t.Errorf("the webhook saw the pod before the plugins: %v", hooked["spec"])
	}
	volume := at(pod, "spec.volumes.0.name")
	if at(pod, "spec.containers.1.name") != "sidecar" || at(pod, "spec.containers.1.volumeMounts.0.name") != volume || len(pod["spec"].(map[string]any)["volumes"].([]any)) != 1 {
		t.Errorf("the sidecar lacks the token: %v", pod["spec"])
	}
}

// webhookServerSeeing serves AdmissionReviews, sending each request's
// object to seen and answering with patch, and returns a clientConfig for
// it.
func webhookServerSeeing(t *testing.T, seen chan<- api.Object, patch string) string {
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID    string
				Object api.Object
			}
		}
		_ = json.NewDecoder(r.Body).Decode(&review)
		seen <- review.Request.Object
		resp := map[string]any{"uid": review.Request.UID, "allowed": true, "patchType": "JSONPatch", "patch": []byte(patch)}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(hook.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))
	return `{"url":"` + hook.URL + `","caBundle":"` + ca + `"}`
}
