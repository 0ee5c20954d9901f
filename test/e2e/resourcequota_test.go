package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestResourceQuota drives ResourceQuota from the binary: the leader
// fills a new quota's status, writes within it raise status.used, writes
// beyond it are refused with kube's messages, and a delete gives its
// share back once the leader sees it (within a second or two).
func TestResourceQuota(t *testing.T) {
	s := startServer(t)
	s.expect(t, "POST", "/api/v1/namespaces", `{"metadata":{"name":"team"}}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces/team/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{
		"count/configmaps":"2","pods":"2","requests.cpu":"1","services.nodeports":"1"}}}`, 201)
	const path = "/api/v1/namespaces/team/resourcequotas/q"
	used := func() string {
		obj, _ := s.expect(t, "GET", path, "", 200)
		status, _ := obj["status"].(map[string]any)
		return fmt.Sprint(status["hard"] != nil, " ", status["used"])
	}
	waitFor(t, "the quota's status", func() bool {
		return used() == "true map[count/configmaps:0 pods:0 requests.cpu:0 services.nodeports:0]"
	})

	s.expect(t, "POST", "/api/v1/namespaces/team/configmaps", `{"metadata":{"name":"a"}}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces/team/configmaps", `{"metadata":{"name":"b"}}`, 201)
	body, _ := s.expect(t, "POST", "/api/v1/namespaces/team/configmaps", `{"metadata":{"name":"c"}}`, 403)
	if want := `configmaps "c" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}

	body, _ = s.expect(t, "POST", "/api/v1/namespaces/team/pods", `{"metadata":{"name":"p0"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, 403)
	if want := `pods "p0" is forbidden: failed quota: q: must specify requests.cpu for: c`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	pod := func(name, cpu string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`
	}
	s.expect(t, "POST", "/api/v1/namespaces/team/pods", pod("p1", "600m"), 201)
	body, _ = s.expect(t, "POST", "/api/v1/namespaces/team/pods", pod("p2", "500m"), 403)
	if want := `pods "p2" is forbidden: exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	// A dry run is checked but not charged.
	s.expect(t, "POST", "/api/v1/namespaces/team/pods?dryRun=All", pod("p3", "400m"), 201)
	body, _ = s.expect(t, "POST", "/api/v1/namespaces/team/services", `{"metadata":{"name":"np"},"spec":{"type":"NodePort","ports":[{"name":"a","port":80},{"name":"b","port":81}]}}`, 403)
	if want := `services "np" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	if got, want := used(), "true map[count/configmaps:2 pods:1 requests.cpu:600m services.nodeports:0]"; got != want {
		t.Errorf("status %s, want %s", got, want)
	}

	s.expect(t, "DELETE", "/api/v1/namespaces/team/configmaps/a", "", 200)
	waitFor(t, "the delete's share back", func() bool {
		return used() == "true map[count/configmaps:1 pods:1 requests.cpu:600m services.nodeports:0]"
	})
	s.expect(t, "POST", "/api/v1/namespaces/team/configmaps", `{"metadata":{"name":"c"}}`, 201)
}

// TestResourceQuotaConcurrent creates ConfigMaps at once beyond a quota:
// the conditional writes of status.used let exactly the quota's number
// through.
func TestResourceQuotaConcurrent(t *testing.T) {
	s := startServer(t)
	s.expect(t, "POST", "/api/v1/namespaces", `{"metadata":{"name":"race"}}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces/race/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"5"}}}`, 201)
	used := func() any {
		obj, _ := s.expect(t, "GET", "/api/v1/namespaces/race/resourcequotas/q", "", 200)
		status, _ := obj["status"].(map[string]any)
		u, _ := status["used"].(map[string]any)
		return u["count/configmaps"]
	}
	waitFor(t, "the quota's status", func() bool { return used() == "0" })
	const writers = 12
	codes := make(chan int, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), "POST", s.URL+"/api/v1/namespaces/race/configmaps",
				strings.NewReader(fmt.Sprintf(`{"metadata":{"name":"cm%d"}}`, i)))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[201] != 5 || count[403] != writers-5 {
		t.Errorf("answers %v, want 5 201s and %d 403s", count, writers-5)
	}
	if u := used(); u != "5" {
		t.Errorf("used %v, want 5", u)
	}
}

// TestResourceQuotaLimitedResources starts the binary with kube's
// ResourceQuota configuration: a pod may consume requests.cpu, or have
// the high priority class, only under a quota that covers it, with
// kube's answers (403 for a resource, a plain 500 for a scope).
func TestResourceQuotaLimitedResources(t *testing.T) {
	s := startServer(t, "--admission-control-config-file", writeFile(t, t.TempDir(), "admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchContains: [requests.cpu]
    - resource: pods
      matchScopes: [{scopeName: PriorityClass, operator: In, values: [high]}]
`))
	s.expect(t, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", `{"metadata":{"name":"high"},"value":1000}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces", `{"metadata":{"name":"lim"}}`, 201)
	const pods = "/api/v1/namespaces/lim/pods"
	pod := func(name, cpu, class string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"priorityClassName":"` + class + `","containers":[{"name":"c","image":"nginx",
			"resources":{"requests":{"cpu":"` + cpu + `"}}}]}}`
	}
	body, _ := s.expect(t, "POST", pods, pod("cpu", "100m", ""), 403)
	if want := `pods "cpu" is forbidden: insufficient quota to consume: requests.cpu`; body["message"] != want {
		t.Errorf("message %q, want %q", body["message"], want)
	}
	body, _ = s.expect(t, "POST", pods, pod("high", "0", "high"), 500)
	if want := `insufficient quota to match these scopes: [{PriorityClass In [high]}]`; body["message"] != want || body["reason"] != nil {
		t.Errorf("message %q reason %v, want %q and none", body["message"], body["reason"], want)
	}
	s.expect(t, "POST", pods, pod("free", "0", ""), 201) // consumes nothing limited

	s.expect(t, "POST", "/api/v1/namespaces/lim/resourcequotas", `{"metadata":{"name":"cpu"},"spec":{"hard":{"requests.cpu":"1"}}}`, 201)
	s.expect(t, "POST", "/api/v1/namespaces/lim/resourcequotas", `{"metadata":{"name":"high"},"spec":{"hard":{"pods":"1"},
		"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}}`, 201)
	for _, q := range []string{"cpu", "high"} {
		waitFor(t, "quota "+q+"'s status", func() bool {
			obj, _ := s.expect(t, "GET", "/api/v1/namespaces/lim/resourcequotas/"+q, "", 200)
			status, _ := obj["status"].(map[string]any)
			return status["used"] != nil
		})
	}
	s.expect(t, "POST", pods, pod("cpu", "100m", ""), 201)
	s.expect(t, "POST", pods, pod("high", "0", "high"), 201)
}
