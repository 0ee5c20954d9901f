package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestResizeAdmitted: a resize passes ResourceQuota and LimitRanger as
// kube's (its pod evaluator and LimitRanger handle UPDATE of pods/resize):
// past the quota or the LimitRange's max it is refused.
func TestResizeAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"requests.cpu":"1"}}}`, 201)
		c.waitUsedOf("requests.cpu", "0", 3)
		pod := c.send("POST", "/api/v1/namespaces/q/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"500m"}}}]}}`, 201)
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		resized := strings.Replace(string(b), `"cpu":"500m"`, `"cpu":"5"`, 1)
		if code, obj := quotaSend(c.h, "PUT", "/api/v1/namespaces/q/pods/p/resize", resized); code != http.StatusForbidden {
			t.Errorf("a resize past the quota: %d %v, want 403", code, obj["message"])
		}

		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"l"}}`, 201)
		c.send("POST", "/api/v1/namespaces/l/limitranges", `{"metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","max":{"cpu":"1"}}]}}`, 201)
		synctest.Wait()
		pod = c.send("POST", "/api/v1/namespaces/l/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"500m"}}}]}}`, 201)
		if b, err = json.Marshal(pod); err != nil {
			t.Fatal(err)
		}
		resized = strings.ReplaceAll(string(b), `"cpu":"500m"`, `"cpu":"5"`)
		if code, obj := quotaSend(c.h, "PUT", "/api/v1/namespaces/l/pods/p/resize", resized); code != http.StatusForbidden {
			t.Errorf("a resize past the LimitRange's max: %d %v, want 403", code, obj["message"])
		}
	})
}

// TestPartsRefuseMalformedBodies: containers that are not objects in a
// resize or an ephemeral containers write are refused, never a panic.
func TestPartsRefuseMalformedBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/pods", `{"metadata":{"name":"p"},"spec":{"initContainers":[{"name":"i","image":"nginx","resources":{"requests":{"cpu":"100m"}}}],"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}`, 201)
		for _, tc := range []struct{ sub, body string }{
			{"resize", `{"metadata":{"name":"p"},"spec":{"containers":[null]}}`},
			{"resize", `{"metadata":{"name":"p"},"spec":{"containers":[1]}}`},
			{"resize", `{"metadata":{"name":"p"},"spec":{"initContainers":[{"name":"i","image":"nginx","resources":{"requests":{"cpu":"200m"}},"resizePolicy":[1]}],"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}`},
			{"ephemeralcontainers", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}],"ephemeralContainers":[null]}}`},
			{"ephemeralcontainers", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}],"ephemeralContainers":[1]}}`},
		} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("PUT pods/p/%s %s: panic %v", tc.sub, tc.body, p)
					}
				}()
				if code, obj := quotaSend(c.h, "PUT", "/api/v1/namespaces/q/pods/p/"+tc.sub, tc.body); code < 400 || code >= 500 {
					t.Errorf("PUT pods/p/%s %s: %d %v, want a 4xx", tc.sub, tc.body, code, obj["message"])
				}
			}()
		}
	})
}

// TestPartsServeNoDelete: a DELETE through a part of a pod is kube's 405
// (its status, resize and ephemeral containers storages have no Delete),
// and the pod stays.
func TestPartsServeNoDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, 201)
		for _, sub := range []string{"resize", "ephemeralcontainers", "status"} {
			if code, obj := quotaSend(c.h, "DELETE", "/api/v1/namespaces/q/pods/p/"+sub, ""); code != http.StatusMethodNotAllowed {
				t.Errorf("DELETE pods/p/%s: %d %v, want 405", sub, code, obj["message"])
			}
		}
		c.send("GET", "/api/v1/namespaces/q/pods/p", "", 200)
	})
}

// TestStatusWriteDropsMutatedSpec: a mutating policy on pods/status that
// changes the spec and the status: the status change is stored, the
// spec's dropped, as kube's status strategy prepares the write after
// mutating admission.
func TestStatusWriteDropsMutatedSpec(t *testing.T) {
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	if code, m := call(t, ts, "POST", pods, mediaJSON, `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`); code != http.StatusCreated {
		t.Fatalf("pod: %d %v", code, m)
	}
	if code, m := call(t, ts, "POST", mutatingPolicies, mediaJSON, `{"metadata":{"name":"p"},"spec":{"reinvocationPolicy":"Never","failurePolicy":"Fail",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["pods/status"]}]},
		"mutations":[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"replace\", path: \"/spec/containers/0/image\", value: \"evil\"}, JSONPatch{op: \"add\", path: \"/status/reason\", value: \"mutated\"}]"}}]}}`); code != http.StatusCreated {
		t.Fatalf("policy: %d %v", code, m)
	}
	if code, m := call(t, ts, "POST", mutatingBindings, mediaJSON, `{"metadata":{"name":"p"},"spec":{"policyName":"p"}}`); code != http.StatusCreated {
		t.Fatalf("binding: %d %v", code, m)
	}
	var got map[string]any
	testwait.Until(t, 10*time.Second, "the policy to mutate a status write", func() bool {
		_, pod := call(t, ts, "GET", pods+"/p", "", "")
		pod["status"].(map[string]any)["message"] = "hi"
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		if code, m := call(t, ts, "PUT", pods+"/p/status", mediaJSON, string(b)); code != http.StatusOK {
			t.Fatalf("PUT pods/p/status: %d %v", code, m)
		}
		_, got = call(t, ts, "GET", pods+"/p", "", "")
		return got["status"].(map[string]any)["reason"] == "mutated"
	})
	if image := got["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; image != "nginx" {
		t.Errorf("a status write changed the spec through a mutating policy: image %v, want nginx", image)
	}
}

// TestUpdateOfDefaultedEmpties checks that an object stored without a
// field its schema defaults to the empty value (a secretRef's name "",
// omitted as kube's encoding omits it) takes a metadata write: the update
// compares it with the stored object defaulted as kube decodes it, not
// with the field absent (a pod's spec then seemed changed: 422).
func TestUpdateOfDefaultedEmpties(t *testing.T) {
	ts := newTestServer(t)
	const pods = "/api/v1/namespaces/default/pods"
	if code, got := call(t, ts, http.MethodPost, pods, "application/json", `{"metadata":{"name":"f"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, got)
	}
	_, pod := call(t, ts, http.MethodGet, pods+"/f", "", "")
	pod["spec"].(map[string]any)["ephemeralContainers"] = []any{map[string]any{"name": "e", "image": "busybox",
		"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": ""}}}}}
	body, _ := json.Marshal(pod)
	if code, got := call(t, ts, http.MethodPut, pods+"/f/ephemeralcontainers", "application/json", string(body)); code != http.StatusOK {
		t.Fatalf("ephemeral containers: %d %v", code, got)
	}
	if code, got := call(t, ts, http.MethodPatch, pods+"/f", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`); code != http.StatusOK {
		t.Errorf("a label added: %d %v", code, got["message"])
	}
}
