package e2e

import (
	"net/http"
	"testing"
)

// TestLimitRanger drives kube's LimitRanger from the binary: a
// namespace's LimitRange gives a new pod's containers their default
// requests and limits (the LimitRange's default limit is its default
// request too, kube's defaulting), with kube's annotation, and refuses a pod and a
// claim beyond its bounds with kube's messages.
func TestLimitRanger(t *testing.T) {
	s := startServer(t)
	s.expect(t, "POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces/team/limitranges", `{"metadata":{"name":"limits"},"spec":{"limits":[
		{"type":"Container","default":{"cpu":"500m","memory":"256Mi"},"defaultRequest":{"cpu":"0.1"},"max":{"cpu":"1"}},
		{"type":"PersistentVolumeClaim","max":{"storage":"5Gi"}}]}}`, 201)
	// The plugin reads LimitRanges from the watch cache, as kube's from
	// its informer.
	waitFor(t, "the LimitRange in the cache", func() bool {
		resp := s.do(t, "", "GET", "/api/v1/namespaces/team/limitranges/limits?resourceVersion=0", "")
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	pod, _ := s.expect(t, "POST", "/api/v1/namespaces/team/pods", `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, 201)
	resources := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"]
	if got, want := jsonOf(t, resources), `{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"256Mi"}}`; got != want {
		t.Errorf("resources %s, want %s", got, want)
	}
	annotations := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
	if got, want := annotations["kubernetes.io/limit-ranger"], "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}

	body, _ := s.expect(t, "POST", "/api/v1/namespaces/team/pods", `{"metadata":{"name":"big"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":"2"}}}]}}`, 403)
	if want := `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	body, _ = s.expect(t, "POST", "/api/v1/namespaces/team/persistentvolumeclaims", `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],
		"resources":{"requests":{"storage":"10Gi"}}}}`, 403)
	if want := `persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
}
