package validation

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/defaulting"
)

// The differential test against kube's own validation is in the interop
// module (test/interop/kubevalidation); these cases keep this module's
// tests failing when the package does.
func TestFor(t *testing.T) {
	container := func(name string) map[string]any {
		return map[string]any{"name": name, "image": "nginx", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}
	}
	podSpec := func(restart string, containers ...any) map[string]any {
		return map[string]any{"containers": containers, "restartPolicy": restart, "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}
	}
	tests := []struct {
		name                   string
		group, version, plural string
		obj                    api.Object
		want                   []api.StatusCause
	}{
		{"valid pod", "", "v1", "pods", api.Object{"spec": podSpec("Always", container("web"))}, nil},
		{"pod", "", "v1", "pods", api.Object{"spec": podSpec("Sometimes", container("Web"), container("Web"))}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.containers[0].name", Message: `Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.containers[1].name", Message: `Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
			{Type: api.CauseTypeFieldValueDuplicate, Field: "spec.containers[1].name", Message: `Duplicate value: "Web"`},
			{Type: api.CauseTypeFieldValueNotSupported, Field: "spec.restartPolicy", Message: `Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		}},
		{"deployment", "apps", "v1", "deployments", api.Object{"spec": map[string]any{
			"replicas": -1, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"strategy": map[string]any{"type": "Recreate"},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "api"}}, "spec": podSpec("Always", container("web"))},
		}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.replicas", Message: "Invalid value: -1: must be greater than or equal to 0"},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.template.metadata.labels", Message: "Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"},
		}},
		{"job", "batch", "v1", "jobs", api.Object{"metadata": map[string]any{"name": "pi", "uid": "u1"}, "spec": map[string]any{
			"parallelism": -1, "completionMode": "NonIndexed", "backoffLimitPerIndex": 1,
			"selector": map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u1"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{
				"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1", "batch.kubernetes.io/job-name": "pi", "job-name": "pi",
			}}, "spec": podSpec("Always", container("pi"))},
		}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.parallelism", Message: "Invalid value: -1: must be greater than or equal to 0"},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.backoffLimitPerIndex", Message: "Invalid value: 1: requires indexed completion mode"},
			{Type: api.CauseTypeFieldValueRequired, Field: "spec.template.spec.restartPolicy", Message: `Required value: valid values: "OnFailure", "Never"`},
		}},
		{"statefulset", "apps", "v1", "statefulsets", api.Object{"spec": map[string]any{
			"replicas": 1, "podManagementPolicy": "OrderedReady", "serviceName": "Web_1",
			"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": 0, "maxUnavailable": "0%"}},
			"selector":       map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": func() map[string]any {
				s := podSpec("Always", map[string]any{
					"name": "web", "image": "nginx", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
					"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}},
				})
				s["volumes"] = []any{map[string]any{"name": "Bad_Vol", "emptyDir": map[string]any{}}}
				return s
			}()},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data"}, "spec": map[string]any{
				"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
			}}},
		}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.updateStrategy.rollingUpdate.maxUnavailable", Message: `Invalid value: "0%": cannot be 0`},
			// The claim template's volume comes first: the mount finds it.
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.template.spec.volumes[1].name", Message: `Invalid value: "Bad_Vol": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.serviceName", Message: `Invalid value: "Web_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		}},
		{"ingress", "networking.k8s.io", "v1", "ingresses", api.Object{"spec": map[string]any{"rules": []any{map[string]any{
			"host": "10.0.0.1", "http": map[string]any{"paths": []any{map[string]any{"path": "/a/../b", "pathType": "Exact", "backend": map[string]any{}}}},
		}}}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.rules[0].host", Message: `Invalid value: "10.0.0.1": must be a DNS name, not an IP address`},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.rules[0].http.paths[0].path", Message: `Invalid value: "/a/../b": must not contain '/../'`},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.rules[0].http.paths[0].backend", Message: `Invalid value: "": resource or service backend is required`},
		}},
		{"networkpolicy", "networking.k8s.io", "v1", "networkpolicies", api.Object{"spec": map[string]any{"egress": []any{map[string]any{
			"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/8"}, "podSelector": map[string]any{}}},
		}}}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.egress[0].to[0].ipBlock.cidr", Message: `Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`},
			{Type: api.CauseTypeFieldValueForbidden, Field: "spec.egress[0].to[0]", Message: "Forbidden: may not specify both ipBlock and another peer"},
		}},
		{"cronjob", "batch", "v1", "cronjobs", api.Object{"spec": map[string]any{
			"schedule": "61 * * * *", "timeZone": "Mars/Olympus", "concurrencyPolicy": "Allow",
			"jobTemplate": map[string]any{"spec": map[string]any{"completionMode": "NonIndexed", "template": map[string]any{"spec": podSpec("Never", container("pi"))}}},
		}}, []api.StatusCause{
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.schedule", Message: `Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`},
			{Type: api.CauseTypeFieldValueInvalid, Field: "spec.timeZone", Message: `Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []api.StatusCause
			if validate := For(tt.group, tt.version, tt.plural); validate != nil {
				got = validate(tt.obj)
			}
			if create := ForCreate(tt.group, tt.version, tt.plural); create != nil {
				got = append(got, create(t.Context(), tt.obj)...)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
	if For("", "v1", "configmaps") != nil {
		t.Error("configmaps have a validation here, want none")
	}
}

// BenchmarkPod validates a defaulted Pod of two containers with ports,
// environment, mounts and resources: the cost validation adds to a Pod's
// create.
func BenchmarkPod(b *testing.B) {
	obj := benchPod(b)
	validate := For("", "v1", "pods")
	if causes := validate(obj); len(causes) != 0 {
		b.Fatalf("a valid pod: %v", causes)
	}
	b.ReportAllocs()
	for b.Loop() {
		validate(obj)
	}
}

// BenchmarkPodUpdate checks the update of that Pod to a new image: the
// cost the update rules add to a Pod's update.
func BenchmarkPodUpdate(b *testing.B) {
	old, obj := benchPod(b), benchPod(b)
	obj["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "registry.k8s.io/nginx:1.26"
	validate := ForUpdate("", "v1", "pods")
	if causes := validate(b.Context(), obj, old); len(causes) != 0 {
		b.Fatalf("a new image: %v", causes)
	}
	b.ReportAllocs()
	for b.Loop() {
		validate(b.Context(), obj, old)
	}
}

// benchPod is a defaulted Pod of two containers with ports, environment,
// mounts and resources.
func benchPod(b *testing.B) api.Object {
	obj, err := api.ParseObject([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","labels":{"app":"web"}},
	"spec":{"containers":[{"name":"web","image":"registry.k8s.io/nginx:1.25","ports":[{"containerPort":80,"name":"http"}],
	"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},{"name":"MODE","value":"prod"}],
	"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"250m","memory":"256Mi"}},
	"volumeMounts":[{"name":"config","mountPath":"/etc/web"},{"name":"cache","mountPath":"/cache"}]},
	{"name":"sidecar","image":"busybox","command":["sh","-c","tail -f /dev/null"],"resources":{"requests":{"cpu":"10m"}}}],
	"volumes":[{"name":"config","configMap":{"name":"web"}},{"name":"cache"}]}}`))
	if err != nil {
		b.Fatal(err)
	}
	defaulting.For("", "v1", "Pod")(obj)
	return obj
}

// TestForUpdate checks the update rules' own output: the paths listed
// after a refused Pod update (kube prints a go-cmp diff there instead),
// and the semantic equality the rules compare with.
func TestForUpdate(t *testing.T) {
	old := api.Object{"spec": map[string]any{
		"containers":   []any{map[string]any{"name": "web", "image": "nginx", "env": []any{}}},
		"nodeSelector": map[string]any{"zone": "a"}, "terminationGracePeriodSeconds": json.Number("30"),
	}}
	obj := api.Object{"spec": map[string]any{
		"containers":                    []any{map[string]any{"name": "api", "image": "nginx:2", "ports": []any{}}},
		"nodeSelector":                  map[string]any{"zone": "b", "disk": "ssd"},
		"terminationGracePeriodSeconds": 30, "volumes": []any{},
	}}
	got := ForUpdate("", "v1", "pods")(t.Context(), obj, old)
	want := []api.StatusCause{{Type: api.CauseTypeFieldValueForbidden, Field: "spec", Message: "Forbidden: pod updates may not change fields other than " + updatablePodFields + "\n" +
		"  spec.containers[0].name: \"web\" -> \"api\"\n" +
		"  spec.nodeSelector.disk: null -> \"ssd\"\n" +
		"  spec.nodeSelector.zone: \"a\" -> \"b\""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	obj["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["name"] = "web"
	obj["spec"].(map[string]any)["nodeSelector"] = map[string]any{"zone": "a"}
	if got := ForUpdate("", "v1", "pods")(t.Context(), obj, old); got != nil {
		t.Errorf("a new image, empty lists and a number decoded otherwise: %v, want no causes", got)
	}
}

// TestServiceAddressesStored checks kube's relaxation on update: external
// IPs and source ranges the stored Service holds are not checked again
// (they may predate strict IP validation); new ones are, as on create.
func TestServiceAddressesStored(t *testing.T) {
	svc := func(ips, ranges []any) api.Object {
		return api.Object{"spec": map[string]any{"type": "LoadBalancer", "externalIPs": ips, "loadBalancerSourceRanges": ranges}}
	}
	old := svc([]any{"010.1.2.3"}, []any{"010.0.0.0/8"})
	leadingZeros := []api.StatusCause{
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.externalIPs[0]", Message: `Invalid value: "010.1.2.3": must not have leading 0s`},
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.LoadBalancerSourceRanges[0]", Message: `Invalid value: "010.0.0.0/8": must not have leading 0s in IP or prefix length`},
	}
	if diff := cmp.Diff(leadingZeros, ServiceCreate(old)); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	if got := ServiceUpdate(old, old); len(got) != 0 {
		t.Errorf("update keeping the stored values: %v, want none", got)
	}
	added := svc([]any{"010.1.2.3", "127.0.0.1"}, []any{"010.0.0.0/8", " 10.0.0.1/8 "})
	want := []api.StatusCause{
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.externalIPs[1]", Message: `Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`},
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.LoadBalancerSourceRanges[1]", Message: `Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix length`},
	}
	if diff := cmp.Diff(want, ServiceUpdate(added, old)); diff != "" {
		t.Errorf("update adding values (-want +got):\n%s", diff)
	}
}

// TestCronJobTimeZonesOnUpdate checks what the differential cannot reach,
// a CronJob stored with a TZ in its schedule (kube refuses it on create,
// but older servers stored it): kube lets such a schedule keep its TZ, but
// not beside a timeZone, and checks the timeZone only when it changes.
func TestCronJobTimeZonesOnUpdate(t *testing.T) {
	cron := func(schedule string, zone any) api.Object {
		spec := map[string]any{"schedule": schedule}
		if zone != nil {
			spec["timeZone"] = zone
		}
		return api.Object{"spec": spec}
	}
	update := ForUpdate("batch", "v1", "cronjobs")
	if got := update(t.Context(), cron("TZ=UTC 0 * * *", nil), cron("TZ=UTC 0 * * * *", nil)); got != nil {
		t.Errorf("a kept TZ: %v, want no causes", got)
	}
	if got := update(t.Context(), cron("0 * * * *", "Nowhere/Else"), cron("0 * * * *", "Nowhere/Else")); got != nil {
		t.Errorf("an unchanged unknown timeZone: %v, want no causes", got)
	}
	want := []api.StatusCause{
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.schedule", Message: `Invalid value: "TZ=UTC 0 * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`},
		{Type: api.CauseTypeFieldValueInvalid, Field: "spec.timeZone", Message: `Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`},
	}
	if diff := cmp.Diff(want, update(t.Context(), cron("TZ=UTC 0 * * *", "Local"), cron("TZ=UTC 0 * * * *", nil))); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// TestClaimTemplatesByValue: a StatefulSet's claim templates are
// immutable, their quantities compared by value as kube's
// Semantic.DeepEqual compares Quantities: one stored as "1024Mi" (written
// before quantities were stored canonical, or through etcd) is unchanged
// by an update that sends "1Gi".
func TestClaimTemplatesByValue(t *testing.T) {
	sts := func(storage string) api.Object {
		claim := map[string]any{"metadata": map[string]any{"name": "data"}, "spec": map[string]any{
			"resources": map[string]any{"requests": map[string]any{"storage": storage}},
		}}
		return api.Object{"spec": map[string]any{"volumeClaimTemplates": []any{claim}}}
	}
	update := ForUpdate("apps", "v1", "statefulsets")
	for _, tc := range []struct {
		old, new string
		changed  bool
	}{
		{"1024Mi", "1Gi", false},
		{"1073741824", "1Gi", false},
		{"0.5Gi", "512Mi", false},
		{"1Gi", "2Gi", true},
	} {
		var fields []string
		for _, c := range update(t.Context(), sts(tc.new), sts(tc.old)) {
			fields = append(fields, c.Field)
		}
		if changed := slices.Contains(fields, "spec.volumeClaimTemplates"); changed != tc.changed {
			t.Errorf("%s -> %s: causes at %v, want a change: %v", tc.old, tc.new, fields, tc.changed)
		}
	}
}
