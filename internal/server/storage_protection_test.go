package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/testwait"
)

// protectionWait bounds each wait for the protection controllers.
const protectionWait = 10 * time.Second

// TestStorageProtection drives the protection controllers through the
// API: each keeps the finalizer of an object being deleted while kube's
// would, and removes it (the object goes) once nothing uses it. That an
// object keeps its finalizer is read once the controller has freed an
// object queued after it on the same queue (each queue's one worker takes
// them in order). The queues export kube's workqueue metrics.
func TestStorageProtection(t *testing.T) {
	ts := newTestServer(t)
	const (
		claims  = "/api/v1/namespaces/default/persistentvolumeclaims"
		pods    = "/api/v1/namespaces/default/pods"
		volumes = "/api/v1/persistentvolumes"
		classes = "/apis/storage.k8s.io/v1/volumeattributesclasses"
	)
	do := func(method, path, contentType, body string, want int) api.Object {
		t.Helper()
		code, obj := call(t, ts, method, path, contentType, body)
		if code != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, code, obj, want)
		}
		return obj
	}
	newClaim := func(name, class string) {
		t.Helper()
		spec := `"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}`
		if class != "" {
			spec += `,"volumeAttributesClassName":"` + class + `"`
		}
		do("POST", claims, mediaJSON, `{"metadata":{"name":"`+name+`"},"spec":{`+spec+`}}`, http.StatusCreated)
	}
	// newPod makes a pod naming claim, scheduled to node unless node is "".
	newPod := func(name, node, claim string) {
		t.Helper()
		do("POST", pods, mediaJSON, `{"metadata":{"name":"`+name+`"},"spec":{"nodeName":"`+node+`","containers":[{"name":"c","image":"nginx"}],`+
			`"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"`+claim+`"}}]}}`, http.StatusCreated)
	}
	newVolume := func(name string) {
		t.Helper()
		do("POST", volumes, mediaJSON, `{"metadata":{"name":"`+name+`"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp"}}}`, http.StatusCreated)
	}
	newClass := func(name string) {
		t.Helper()
		do("POST", classes, mediaJSON, `{"metadata":{"name":"`+name+`"},"driverName":"csi.example.com","parameters":{"iops":"100"}}`, http.StatusCreated)
	}
	gone := func(path string) {
		t.Helper()
		testwait.Until(t, protectionWait, path+" to be deleted", func() bool {
			code, _ := call(t, ts, "GET", path, "", "")
			return code == http.StatusNotFound
		})
	}
	held := func(path, finalizer string) {
		t.Helper()
		obj := do("GET", path, "", "", http.StatusOK)
		fins, _ := obj.Metadata()["finalizers"].([]any)
		if obj.MetaString("deletionTimestamp") == "" || !slices.Contains(fins, any(finalizer)) {
			t.Fatalf("%s: deletionTimestamp %q, finalizers %v; want it held by %s", path, obj.MetaString("deletionTimestamp"), fins, finalizer)
		}
	}

	t.Run("claims", func(t *testing.T) {
		newClaim("data", "")
		newPod("web", "node-1", "data")
		newClaim("hold", "")
		newPod("holder", "node-1", "hold")
		newClaim("idle", "")
		newPod("pending", "", "idle")
		do("DELETE", claims+"/data", "", "", http.StatusOK)
		do("DELETE", claims+"/hold", "", "", http.StatusOK)
		do("DELETE", claims+"/idle", "", "", http.StatusOK)
		gone(claims + "/idle") // a pod not scheduled does not use its claims
		// A finished pod still uses its claim until it is deleted.
		do("PATCH", pods+"/web/status", mediaMergePatch, `{"status":{"phase":"Succeeded"}}`, http.StatusOK)
		do("DELETE", pods+"/holder", "", "", http.StatusOK)
		gone(claims + "/hold")
		held(claims+"/data", plugins.PVCProtectionFinalizer)
		do("DELETE", pods+"/web", "", "", http.StatusOK)
		gone(claims + "/data")
	})

	t.Run("volumes", func(t *testing.T) {
		newVolume("bound")
		newVolume("free")
		do("PATCH", volumes+"/bound/status", mediaMergePatch, `{"status":{"phase":"Bound"}}`, http.StatusOK)
		do("DELETE", volumes+"/bound", "", "", http.StatusOK)
		do("DELETE", volumes+"/free", "", "", http.StatusOK)
		gone(volumes + "/free")
		held(volumes+"/bound", plugins.PVProtectionFinalizer)
		do("PATCH", volumes+"/bound/status", mediaMergePatch, `{"status":{"phase":"Released"}}`, http.StatusOK)
		gone(volumes + "/bound")
	})

	t.Run("classes", func(t *testing.T) {
		newClass("gold")
		newClass("silver")
		newClaim("fast", "gold")
		do("DELETE", classes+"/gold", "", "", http.StatusOK)
		do("DELETE", classes+"/silver", "", "", http.StatusOK)
		gone(classes + "/silver")
		held(classes+"/gold", plugins.VACProtectionFinalizer)
		do("DELETE", claims+"/fast", "", "", http.StatusOK)
		gone(claims + "/fast")
		gone(classes + "/gold")
	})

	t.Run("unused condition", func(t *testing.T) {
		newClaim("shared", "")
		do("PATCH", claims+"/shared/status", mediaMergePatch, `{"status":{"phase":"Bound"}}`, http.StatusOK)
		unused := func(want string) {
			t.Helper()
			testwait.Until(t, protectionWait, "the claim's Unused condition "+want, func() bool {
				obj := do("GET", claims+"/shared", "", "", http.StatusOK)
				conds, _ := mapAt(obj, "status")["conditions"].([]any)
				for _, c := range conds {
					if c := c.(map[string]any); c["type"] == "Unused" {
						return c["status"].(string)+" "+c["reason"].(string) == want && c["lastTransitionTime"] != nil
					}
				}
				return false
			})
		}
		unused("True NoPodsUsingPVC")
		newPod("reader", "", "shared") // not scheduled: it counts here
		unused("False PodUsingPVC")
		do("PATCH", pods+"/reader/status", mediaMergePatch, `{"status":{"phase":"Succeeded"}}`, http.StatusOK)
		unused("True NoPodsUsingPVC")
	})

	t.Run("finalizer given back", func(t *testing.T) {
		newClaim("kept", "")
		do("PATCH", claims+"/kept", mediaMergePatch, `{"metadata":{"finalizers":null}}`, http.StatusOK)
		testwait.Until(t, protectionWait, "the claim's finalizer to be given back", func() bool {
			obj := do("GET", claims+"/kept", "", "", http.StatusOK)
			fins, _ := obj.Metadata()["finalizers"].([]any)
			return slices.Contains(fins, any(plugins.PVCProtectionFinalizer))
		})
	})

	// Each kind's queue has counted the items above, under kube's name.
	t.Run("metrics", func(t *testing.T) {
		b := ask(t, ts, "GET", "/metrics", "", "").body
		for _, name := range []string{"pvcprotection", "pvprotection", "vacprotection"} {
			for _, series := range []string{"workqueue_adds_total", "workqueue_work_duration_seconds_count", "workqueue_queue_duration_seconds_count"} {
				line := regexp.MustCompile(`(?m)^` + series + `\{name="` + name + `"\} ([0-9]+)$`).FindSubmatch(b)
				if line == nil || string(line[1]) == "0" {
					t.Errorf("%s{name=%q}: %q, want a count above 0", series, name, line)
				}
			}
		}
	})
}

// TestPodUsesClaim checks which pods keep a claim being deleted (uses:
// kube's podUsesPVCForDeletion) and a bound claim's Unused condition
// False (references: its podUsesPVCForUnusedSince), as kube's tests say.
func TestPodUsesClaim(t *testing.T) {
	const claimVol = `{"name":"d","persistentVolumeClaim":{"claimName":"data"}}`
	const ephemeral = `{"name":"scratch","ephemeral":{"volumeClaimTemplate":{"spec":{}}}}`
	const data = `{"metadata":{"name":"data"}}`
	const deleted = `"deletionTimestamp":"2026-01-01T00:00:00Z"`
	tests := []struct {
		name, pod, claim string
		uses, references bool
	}{
		{"scheduled", `{"metadata":{"name":"p"},"spec":{"nodeName":"n","volumes":[` + claimVol + `]},"status":{"phase":"Running"}}`, data, true, true},
		{"finished", `{"metadata":{"name":"p"},"spec":{"nodeName":"n","volumes":[` + claimVol + `]},"status":{"phase":"Failed"}}`, data, true, false},
		{"not scheduled", `{"metadata":{"name":"p"},"spec":{"volumes":[` + claimVol + `]}}`, data, false, true},
		{"not scheduled, succeeded", `{"metadata":{"name":"p"},"spec":{"volumes":[` + claimVol + `]},"status":{"phase":"Succeeded"}}`, data, false, false},
		{"another claim", `{"metadata":{"name":"p"},"spec":{"nodeName":"n","volumes":[` + claimVol + `]}}`, `{"metadata":{"name":"other"}}`, false, false},
		{"ephemeral, the pod's", `{"metadata":{"name":"p","uid":"u1"},"spec":{"nodeName":"n","volumes":[` + ephemeral + `]}}`,
			`{"metadata":{"name":"p-scratch","ownerReferences":[{"uid":"u1","controller":true}]}}`, true, true},
		{"ephemeral, another pod's", `{"metadata":{"name":"p","uid":"u1"},"spec":{"nodeName":"n","volumes":[` + ephemeral + `]}}`,
			`{"metadata":{"name":"p-scratch","ownerReferences":[{"uid":"u2","controller":true}]}}`, false, false},
		{"ephemeral, pod force-deleted", `{"metadata":{"name":"p","uid":"u1",` + deleted + `,"deletionGracePeriodSeconds":0},"spec":{"nodeName":"n","volumes":[` + ephemeral + `]}}`,
			`{"metadata":{"name":"p-scratch","ownerReferences":[{"uid":"u1","controller":true}]}}`, false, false},
		{"pod force-deleted", `{"metadata":{"name":"p",` + deleted + `,"deletionGracePeriodSeconds":0},"spec":{"nodeName":"n","volumes":[` + claimVol + `]}}`, data, true, false},
		{"pod deleted, a container running", `{"metadata":{"name":"p",` + deleted + `},"spec":{"volumes":[` + claimVol + `]},` +
			`"status":{"phase":"Running","containerStatuses":[{"state":{"terminated":{}}},{"state":{"running":{}}}]}}`, data, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pod, claim storageUse
			if err := json.Unmarshal([]byte(tt.pod), &pod); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.claim), &claim); err != nil {
				t.Fatal(err)
			}
			if got := pod.usesClaim(&claim); got != tt.uses {
				t.Errorf("usesClaim = %v, want %v", got, tt.uses)
			}
			if got := pod.referencesClaim(&claim); got != tt.references {
				t.Errorf("referencesClaim = %v, want %v", got, tt.references)
			}
			if (tt.uses || tt.references) && !mayNameClaims([]byte(tt.pod)) {
				t.Errorf("mayNameClaims skips a pod that uses the claim")
			}
		})
	}
}
