package defaulting

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// The interop module's differential test proves every kind equal to kube's
// own defaulting; these cases show the shape and guard what it cannot see.

func parse(t *testing.T, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		name, group, version, kind, in, want string
	}{{
		name: "deployment", group: "apps", version: "v1", kind: "Deployment",
		in: `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.25","ports":[{"containerPort":80}]}]}}}}`,
		want: `{"spec":{"replicas":1,"revisionHistoryLimit":10,"progressDeadlineSeconds":600,
			"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},
			"template":{"spec":{"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",
				"securityContext":{},"terminationGracePeriodSeconds":30,
				"containers":[{"name":"c","image":"nginx:1.25","imagePullPolicy":"IfNotPresent",
					"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
					"ports":[{"containerPort":80,"protocol":"TCP"}]}]}}}}`,
	}, {
		name: "pod requests from limits", kind: "Pod", version: "v1",
		in: `{"spec":{"containers":[{"image":"nginx","resources":{"limits":{"cpu":"1"},"requests":{"memory":"1Gi"}}}]}}`,
		want: `{"spec":{"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",
			"securityContext":{},"terminationGracePeriodSeconds":30,"enableServiceLinks":true,
			"containers":[{"image":"nginx","imagePullPolicy":"Always","terminationMessagePath":"/dev/termination-log",
				"terminationMessagePolicy":"File","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"1","memory":"1Gi"}}}]}}`,
	}, {
		name: "service of client IP affinity", kind: "Service", version: "v1",
		in: `{"spec":{"type":"NodePort","sessionAffinity":"ClientIP","ports":[{"port":80}]}}`,
		want: `{"spec":{"type":"NodePort","sessionAffinity":"ClientIP",
			"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":10800}},
			"externalTrafficPolicy":"Cluster","internalTrafficPolicy":"Cluster",
			"ports":[{"port":80,"protocol":"TCP","targetPort":80}]}}`,
	}, {
		name: "namespace", kind: "Namespace", version: "v1",
		in:   `{"metadata":{"name":"ns"}}`,
		want: `{"metadata":{"name":"ns","labels":{"kubernetes.io/metadata.name":"ns"}},"status":{"phase":"Active"}}`,
	}, {
		name: "cronjob template is not a Job", group: "batch", version: "v1", kind: "CronJob",
		in: `{"spec":{"jobTemplate":{"spec":{}}}}`,
		want: `{"spec":{"concurrencyPolicy":"Allow","suspend":false,"successfulJobsHistoryLimit":3,"failedJobsHistoryLimit":1,
			"jobTemplate":{"spec":{"template":{"spec":{"dnsPolicy":"ClusterFirst","restartPolicy":"Always",
				"schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}}}`,
	}, {
		name: "mistyped fields are left to validation", group: "apps", version: "v1", kind: "Deployment",
		in:   `{"spec":{"strategy":"x","template":[1]}}`,
		want: `{"spec":{"strategy":"x","template":[1],"replicas":1,"revisionHistoryLimit":10,"progressDeadlineSeconds":600}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := parse(t, tc.in)
			For(tc.group, tc.version, tc.kind)(obj)
			if diff := cmp.Diff(parse(t, tc.want), obj); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestForNone(t *testing.T) {
	// ConfigMap's only default (empty data) is dropped by kube's encoder;
	// events and unknown kinds have none.
	for _, k := range [][3]string{{"", "v1", "ConfigMap"}, {"", "v1", "ServiceAccount"}, {"events.k8s.io", "v1", "Event"}, {"apps", "v1beta1", "Deployment"}} {
		if For(k[0], k[1], k[2]) != nil {
			t.Errorf("For(%q) is not nil", k)
		}
	}
}

// TestFloatNumbers: a body decoded without json.Number reads the same.
func TestFloatNumbers(t *testing.T) {
	var obj api.Object
	if err := json.Unmarshal([]byte(`{"spec":{"containers":[{"livenessProbe":{"timeoutSeconds":0,"periodSeconds":5}}],"terminationGracePeriodSeconds":-3}}`), &obj); err != nil {
		t.Fatal(err)
	}
	For("", "v1", "Pod")(obj)
	spec := obj["spec"].(map[string]any)
	probe := spec["containers"].([]any)[0].(map[string]any)["livenessProbe"].(map[string]any)
	if probe["timeoutSeconds"] != json.Number("1") || probe["periodSeconds"] != float64(5) || spec["terminationGracePeriodSeconds"] != json.Number("1") {
		t.Errorf("probe %v, terminationGracePeriodSeconds %v", probe, spec["terminationGracePeriodSeconds"])
	}
}

// TestNoSharing: the defaults of one object are not the maps of another,
// nor the maps they were copied from.
func TestNoSharing(t *testing.T) {
	a, b := parse(t, `{"spec":{}}`), parse(t, `{"spec":{}}`)
	pod := For("", "v1", "Pod")
	pod(a)
	pod(b)
	a["spec"].(map[string]any)["securityContext"].(map[string]any)["runAsUser"] = json.Number("1")
	if sc := b["spec"].(map[string]any)["securityContext"].(map[string]any); len(sc) != 0 {
		t.Errorf("a's securityContext is b's: %v", sc)
	}

	rc := parse(t, `{"spec":{"template":{"metadata":{"labels":{"app":"x"}}}}}`)
	For("", "v1", "ReplicationController")(rc)
	rc["spec"].(map[string]any)["selector"].(map[string]any)["extra"] = "y"
	labels := rc["metadata"].(map[string]any)["labels"].(map[string]any)
	tmpl := rc["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	if len(labels) != 1 || len(tmpl) != 1 {
		t.Errorf("selector shares a map: labels %v, template labels %v", labels, tmpl)
	}
}

// TestDeviceTaintTime: kube stamps an unset taint with the current time, to
// the second, as metav1.Time encodes it.
func TestDeviceTaintTime(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	obj := parse(t, `{"spec":{"devices":[{"taints":[{"key":"k"},{"key":"l","timeAdded":"2020-01-01T00:00:00Z"}]}]}}`)
	For("resource.k8s.io", "v1", "ResourceSlice")(obj)
	taints := obj["spec"].(map[string]any)["devices"].([]any)[0].(map[string]any)["taints"].([]any)
	added, err := time.Parse(time.RFC3339, taints[0].(map[string]any)["timeAdded"].(string))
	if err != nil || added.Before(before) || added.After(time.Now()) {
		t.Errorf("timeAdded %v (%v), want between %v and now", added, err, before)
	}
	if got := taints[1].(map[string]any)["timeAdded"]; got != "2020-01-01T00:00:00Z" {
		t.Errorf("a set timeAdded became %v", got)
	}
}

// TestQuantitiesBounded: a quantity spanning more places than the bound
// (kube's parser would take minutes) is left as written; within it, one
// rounds up to a milli-unit as kube's.
func TestQuantitiesBounded(t *testing.T) {
	for in, want := range map[string]string{
		"1e-2147483648": "1e-2147483648", "1e2147483647": "1e2147483647", "1e-99999999999": "1e-99999999999",
		"1e-4000": "1e-3", "-7n": "-1m", "0.000": "0", "250m": "250m", "0.5": "500m",
	} {
		start := time.Now()
		m := map[string]any{"cpu": in}
		resourceList.set(m)
		if m["cpu"] != want || time.Since(start) > time.Second {
			t.Errorf("%q rounds to %q in %v, want %q", in, m["cpu"], time.Since(start), want)
		}
	}
}

func TestPullPolicy(t *testing.T) {
	for image, want := range map[string]string{
		"nginx": "Always", "nginx:latest": "Always", "nginx:1.25": "IfNotPresent",
		"registry.k8s.io/pause:3.10": "IfNotPresent", "localhost:5000/app": "Always",
		"app@sha256:" + repeat("a", 64): "IfNotPresent", "app:latest@sha256:" + repeat("a", 64): "Always",
		"app:latest@sha256:abc": "IfNotPresent", // not a sha256: kube rejects it
		"Nginx:latest":          "IfNotPresent", // uppercase repository
		repeat("a", 64):         "IfNotPresent", // an image ID
		"":                      "IfNotPresent",
	} {
		if got := pullPolicy(image); got != want {
			t.Errorf("pullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

// FuzzFor: no body makes defaulting panic or leave an object that does not
// encode.
func FuzzFor(f *testing.F) {
	for _, s := range []string{
		`{"metadata":{"name":"a"},"spec":{"template":{"spec":{"containers":[{"image":"x","ports":[{}]}],"volumes":[{}]}}}}`,
		`{"spec":{"type":"LoadBalancer","ports":[{"port":1}]},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`,
		`{"spec":{"limits":[{"type":"Container","max":{"cpu":"1"},"min":"x"}]}}`,
		`{"spec":null,"metadata":[],"status":"x"}`,
		`{"spec":{"hard":{"cpu":"1.0001","m":"0.9999999Ki","x":1e-4,"y":"1e-2147483648"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for k := range kinds {
			obj, err := api.ParseObject(data)
			if err != nil {
				return
			}
			For(k.group, k.version, k.kind)(obj)
			if _, err := api.MarshalObject(obj); err != nil {
				t.Fatalf("%v: %v", k, err)
			}
		}
	})
}

// BenchmarkPod defaults a Pod of two containers with probes, environment
// and volumes (2.2 KiB of JSON), the cost wiring adds to a Pod's create.
func BenchmarkPod(b *testing.B) {
	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"default","labels":{"app":"web"}},
	"spec":{"containers":[{"name":"web","image":"registry.k8s.io/nginx:1.25","ports":[{"containerPort":80,"name":"http"}],
	"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},{"name":"MODE","value":"prod"}],
	"resources":{"limits":{"cpu":"500m","memory":"256Mi"}},
	"livenessProbe":{"httpGet":{"port":"http"}},"readinessProbe":{"httpGet":{"path":"/ready","port":80}},
	"volumeMounts":[{"name":"config","mountPath":"/etc/web"},{"name":"token","mountPath":"/var/run/secrets"}]},
	{"name":"sidecar","image":"busybox","command":["sh","-c","tail -f /dev/null"],"resources":{"requests":{"cpu":"10m"}}}],
	"volumes":[{"name":"config","configMap":{"name":"web"}},{"name":"cache"},
	{"name":"token","projected":{"sources":[{"serviceAccountToken":{"path":"token"}},{"downwardAPI":{"items":[{"path":"labels","fieldRef":{"fieldPath":"metadata.labels"}}]}}]}}]}}`
	d := For("", "v1", "Pod")
	for _, bc := range []struct {
		name     string
		defaults bool
	}{{"parse", false}, {"parse+default", true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj, err := api.ParseObject([]byte(pod))
				if err != nil {
					b.Fatal(err)
				}
				if bc.defaults {
					d(obj)
				}
			}
		})
	}
}
