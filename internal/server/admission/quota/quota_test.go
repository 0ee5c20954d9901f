package quota

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

func parse(t *testing.T, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestResources checks which resources' objects a quota's hard names
// are counted from; test/interop/admissionplugins proves the charges
// equal kube's.
func TestResources(t *testing.T) {
	hard := Read(parse(t, `{"hard": {"count/deployments.apps": "1", "pods": "1", "limits.cpu": "1", "requests.storage": "1",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "configmaps": "1", "count/widgets.example.com": "1",
		"services.nodeports": "1"}}`), "hard")
	served := func(group, plural string) bool { return group != "example.com" }
	want := [][2]string{{"", "configmaps"}, {"", "persistentvolumeclaims"}, {"", "pods"}, {"", "services"}, {"apps", "deployments"}}
	if diff := cmp.Diff(want, Resources(hard, served)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestUsage checks what the recompute counts: pods matching the quota's
// scopes, a finished pod only in count/pods, zeros for what nothing uses.
func TestUsage(t *testing.T) {
	q := Parse(parse(t, `{"metadata": {"name": "q"}, "spec": {"scopes": ["NotTerminating"],
		"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}},
		"status": {"hard": {"pods": "9", "count/pods": "9", "requests.cpu": "9", "limits.memory": "9", "count/configmaps": "9"}}}`))
	pods := [][]byte{
		[]byte(`{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}`),
		[]byte(`{"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "200m"}}}]}, "status": {"phase": "Failed"}}`),
		[]byte(`{"spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}`),
		[]byte(`{"spec": {"priorityClassName": "high", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}`),
	}
	all := q
	all.Scopes = nil
	got, err := Usage([]Quota{q, all}, "", "pods", pods, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"pods": "1", "count/pods": "2", "requests.cpu": "100m", "limits.memory": "0"}; !cmp.Equal(want, Encode(got[0])) {
		t.Errorf("got %v, want %v", Encode(got[0]), want)
	}
	if want := map[string]any{"pods": "3", "count/pods": "4", "requests.cpu": "2100m", "limits.memory": "0"}; !cmp.Equal(want, Encode(got[1])) {
		t.Errorf("without scopes: got %v, want %v", Encode(got[1]), want)
	}
	// Scopes match no ConfigMap, as kube's MatchesNoScopeFunc.
	got, _ = Usage([]Quota{q, all}, "", "configmaps", make([][]byte, 3), time.Now())
	if n := Encode(got[0])["count/configmaps"]; n != "0" {
		t.Errorf("scoped configmaps counted: %v", n)
	}
	if n := Encode(got[1])["count/configmaps"]; n != "3" {
		t.Errorf("configmaps: %v, want 3", n)
	}
}

// TestCheck checks the charges of writes: extended resources, writes
// that move no limit, pods entering and leaving a quota's scope;
// test/interop/admissionplugins compares many more with kube's.
func TestCheck(t *testing.T) {
	gpuPod := func(n string) api.Object {
		return parse(t, `{"spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "`+n+`",
			"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}}}]}}`)
	}
	cpuPod := func(deadline string) api.Object {
		return parse(t, `{"metadata": {"resourceVersion": "5"}, "spec": {`+deadline+`"containers": [{"name": "c",
			"resources": {"requests": {"cpu": "100m", "memory": "1Mi"}, "limits": {"cpu": "100m", "memory": "1Mi"}}}]}}`)
	}
	clusterIP := parse(t, `{"spec": {"type": "ClusterIP", "ports": [{"port": 80}]}}`)
	for _, tc := range []struct {
		name    string
		quota   string // a ResourceQuota
		w       Write
		want    map[string]any // the quota's new used; nil if not written
		refused string
	}{{
		name: "extended resource and device class charged",
		quota: `{"status": {"hard": {"requests.example.com/gpu": "2", "requests.deviceclass.resource.kubernetes.io/gpu.example.com": "1"},
			"used": {"requests.example.com/gpu": "1", "requests.deviceclass.resource.kubernetes.io/gpu.example.com": "0"}}}`,
		w:    Write{Op: "CREATE", Plural: "pods", Object: gpuPod("1")},
		want: map[string]any{"requests.example.com/gpu": "2", "requests.deviceclass.resource.kubernetes.io/gpu.example.com": "1"},
	}, {
		name:    "extended resource over",
		quota:   `{"status": {"hard": {"requests.example.com/gpu": "2"}, "used": {"requests.example.com/gpu": "1"}}}`,
		w:       Write{Op: "CREATE", Plural: "pods", Object: gpuPod("2")},
		refused: "exceeded quota: q, requested: requests.example.com/gpu=2, used: requests.example.com/gpu=1, limited: requests.example.com/gpu=2",
	}, {
		name:  "zero charge not written",
		quota: `{"status": {"hard": {"services.loadbalancers": "1"}, "used": {"services.loadbalancers": "0"}}}`,
		w:     Write{Op: "CREATE", Plural: "services", Object: clusterIP},
	}, {
		name:  "zero charge not written even over",
		quota: `{"status": {"hard": {"services.loadbalancers": "0"}, "used": {"services.loadbalancers": "1"}}}`,
		w:     Write{Op: "CREATE", Plural: "services", Object: clusterIP},
	}, {
		name:  "pod entering the scope charged in full",
		quota: `{"spec": {"scopes": ["Terminating"]}, "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "0"}}}`,
		w:     Write{Op: "UPDATE", Plural: "pods", Object: cpuPod(`"activeDeadlineSeconds": 5, `), Old: cpuPod("")},
		want:  map[string]any{"requests.cpu": "100m"},
	}, {
		name:  "pod leaving the scope not charged",
		quota: `{"spec": {"scopes": ["NotTerminating"]}, "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "100m"}}}`,
		w:     Write{Op: "UPDATE", Plural: "pods", Object: cpuPod(`"activeDeadlineSeconds": 5, `), Old: cpuPod("")},
	}, {
		name:  "pod staying in an unscoped quota not charged again",
		quota: `{"status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "100m"}}}`,
		w:     Write{Op: "UPDATE", Plural: "pods", Object: cpuPod(`"activeDeadlineSeconds": 5, `), Old: cpuPod("")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			q := Parse(parse(t, tc.quota))
			q.Name = "q"
			changed, err := Check([]Quota{q}, tc.w, nil, time.Now())
			if tc.refused != "" {
				var r *Refused
				if !errors.As(err, &r) || r.Reason != tc.refused {
					t.Fatalf("got %v, want refused %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if len(changed) == 1 {
				got = Encode(changed[0].Used)
			} else if len(changed) > 1 {
				t.Fatalf("%d quotas changed", len(changed))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLimited checks limitedResources read from kube's configuration:
// a pod consuming requests.cpu, or of the high class, needs a covering
// quota; test/interop/admissionplugins compares many more with kube's.
func TestLimited(t *testing.T) {
	limited, err := LoadConfig([]byte(`{"apiVersion": "resourcequota.admission.k8s.io/v1beta1", "kind": "Configuration",
		"limitedResources": [{"resource": "pods", "matchContains": ["requests.cpu"]},
		{"resource": "pods", "matchScopes": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(class, cpu string) Write {
		return Write{Op: "CREATE", Plural: "pods", Object: parse(t, `{"spec": {"priorityClassName": "`+class+`",
			"containers": [{"name": "c", "resources": {"requests": {"cpu": "`+cpu+`"}}}]}}`)}
	}
	cpu := Parse(parse(t, `{"metadata": {"name": "cpu"}, "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "0"}}}`))
	high := Parse(parse(t, `{"metadata": {"name": "high"}, "spec": {"scopeSelector": {"matchExpressions": [
		{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "0"}}}`))
	for _, tc := range []struct {
		name   string
		quotas []Quota
		w      Write
		want   string // the error, "" if admitted
	}{
		{"cpu without a quota", nil, pod("", "1m"), "insufficient quota to consume: requests.cpu"},
		{"cpu under a quota", []Quota{cpu}, pod("", "1m"), ""},
		{"no cpu", nil, pod("", "0"), ""},
		{"class without a quota", []Quota{cpu}, pod("high", "0"), "insufficient quota to match these scopes: [{PriorityClass In [high]}]"},
		{"class under a quota", []Quota{high}, pod("high", "0"), ""},
		{"other class", nil, pod("low", "0"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.quotas, tc.w, limited, time.Now())
			if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	for _, bad := range []string{
		"apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{resource: pods, foo: bar}]",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: [{matchContains: [cpu]}]",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: Configuration",
	} {
		if _, err := LoadConfig([]byte(bad)); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}
