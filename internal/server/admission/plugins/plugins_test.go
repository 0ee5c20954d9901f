package plugins

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// source serves objects by resource and namespace/name.
type source map[Ref]map[string]api.Object

func (s source) Get(_ context.Context, r Ref, ns, name string) (api.Object, error) {
	if o, ok := s[r][ns+"/"+name]; ok {
		return o.DeepCopy(), nil
	}
	return nil, nil
}

func (s source) List(_ context.Context, r Ref, ns string) ([]api.Object, error) {
	var out []api.Object
	for key, o := range s[r] {
		if ns == "" || strings.HasPrefix(key, ns+"/") {
			out = append(out, o.DeepCopy())
		}
	}
	return out, nil
}

func (s source) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if name == "broken" {
		return nil, errors.New("unreadable")
	}
	return s[Namespaces]["/"+name].Labels(), nil
}

func parse(t *testing.T, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// chain is New(src, nil) whose token volumes are all named kube-api-access-xxxxx.
func chain(src Source) *Chain {
	c := New(src, nil)
	c.plugins[1].(*serviceAccount).generateName = func(p string) string { return p + "xxxxx" }
	return c
}

func podAttributes(op string, pod, old api.Object) *webhook.Attributes {
	return &webhook.Attributes{
		Operation: op, Resource: webhook.GVR{Version: "v1", Resource: "pods"},
		Namespace: "ns", Name: pod.Name(), Object: pod, OldObject: old,
	}
}

const tokenVolumeJSON = `{"name": "kube-api-access-xxxxx", "projected": {"defaultMode": 420, "sources": [
	{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
	{"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
	{"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}`

const tolerationsJSON = `[
	{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
	{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]`

const mountJSON = `{"name": "kube-api-access-xxxxx", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}`

func TestMutatePodCreate(t *testing.T) {
	accounts := map[string]api.Object{
		"ns/default": parse(t, `{"metadata": {"name": "default"}}`),
		"ns/puller":  parse(t, `{"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "reg"}]}`),
		"ns/nomount": parse(t, `{"metadata": {"name": "nomount"}, "automountServiceAccountToken": false}`),
	}
	classes := map[string]api.Object{
		"/high": parse(t, `{"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}`),
	}
	src := source{ServiceAccounts: accounts, PriorityClasses: classes}
	tests := []struct{ name, pod, want string }{{
		name: "defaults",
		pod:  `{"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}}`,
		want: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "default", "serviceAccount": "default",
			"initContainers": [{"name": "i", "volumeMounts": [` + mountJSON + `]}],
			"containers": [{"name": "c", "volumeMounts": [` + mountJSON + `]}],
			"volumes": [` + tokenVolumeJSON + `], "priority": 0, "preemptionPolicy": "PreemptLowerPriority",
			"tolerations": ` + tolerationsJSON + `}}`,
	}, {
		name: "account's pull secrets, class, own toleration of every taint, a container mounting the path",
		pod: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "puller", "priorityClassName": "high",
			"tolerations": [{"operator": "Exists"}],
			"containers": [{"name": "a", "volumeMounts": [{"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}, {"name": "b"}]}}`,
		want: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "puller", "priorityClassName": "high",
			"tolerations": [{"operator": "Exists"}], "imagePullSecrets": [{"name": "reg"}],
			"containers": [{"name": "a", "volumeMounts": [{"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]},
				{"name": "b", "volumeMounts": [` + mountJSON + `]}],
			"volumes": [` + tokenVolumeJSON + `], "priority": 1000, "preemptionPolicy": "Never"}}`,
	}, {
		name: "account without automount; pod's own pull secrets; one taint tolerated",
		pod: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "nomount", "imagePullSecrets": [{"name": "mine"}],
			"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}], "containers": [{"name": "c"}]}}`,
		want: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "nomount", "imagePullSecrets": [{"name": "mine"}],
			"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
				{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
			"containers": [{"name": "c"}], "priority": 0, "preemptionPolicy": "PreemptLowerPriority"}}`,
	}, {
		name: "pod without automount wins over its account; its token volume is reused",
		pod: `{"metadata": {"name": "p"}, "spec": {"automountServiceAccountToken": true, "serviceAccountName": "nomount",
			"volumes": [{"name": "kube-api-access-mine", "emptyDir": {}}], "containers": [{"name": "c"}]}}`,
		want: `{"metadata": {"name": "p"}, "spec": {"automountServiceAccountToken": true, "serviceAccountName": "nomount",
			"volumes": [{"name": "kube-api-access-mine", "emptyDir": {}}],
			"containers": [{"name": "c", "volumeMounts": [{"name": "kube-api-access-mine", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}],
			"priority": 0, "preemptionPolicy": "PreemptLowerPriority", "tolerations": ` + tolerationsJSON + `}}`,
	}, {
		name: "mirror pod: only tolerations and priority",
		pod:  `{"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [{"name": "c"}]}}`,
		want: `{"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [{"name": "c"}],
			"priority": 0, "preemptionPolicy": "PreemptLowerPriority", "tolerations": ` + tolerationsJSON + `}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := podAttributes(webhook.Create, parse(t, tt.pod), nil)
			if changed, err := chain(src).Mutate(context.Background(), a, nil); err != nil || changed {
				t.Fatalf("Mutate: changed %v, %v", changed, err)
			}
			if diff := cmp.Diff(parse(t, tt.want), a.Object); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if err := chain(src).Validate(context.Background(), a); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	src := source{
		ServiceAccounts: {
			"ns/default": parse(t, `{"metadata": {"name": "default"}}`),
			"ns/strict": parse(t, `{"metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}},
				"secrets": [{"name": "ok"}], "imagePullSecrets": [{"name": "pull"}]}`),
		},
		PriorityClasses: {
			"/low":  parse(t, `{"metadata": {"name": "low"}, "value": 10, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"}`),
			"/also": parse(t, `{"metadata": {"name": "also"}, "value": 20, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"}`),
		},
	}
	tests := []struct{ name, pod, want string }{{
		name: "missing account",
		pod:  `{"metadata": {"generateName": "p-"}, "spec": {"serviceAccountName": "nope", "containers": [{"name": "c"}]}}`,
		want: `pods "p-" is forbidden: error looking up service account ns/nope: serviceaccount "nope" not found`,
	}, {
		name: "unknown class",
		pod:  `{"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope", "containers": [{"name": "c"}]}}`,
		want: `pods "p" is forbidden: no PriorityClass with name nope was found`,
	}, {
		name: "priority given",
		pod:  `{"metadata": {"name": "p"}, "spec": {"priority": 5, "containers": [{"name": "c"}]}}`,
		want: `pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name`,
	}, {
		name: "preemption policy given",
		pod:  `{"metadata": {"name": "p"}, "spec": {"preemptionPolicy": "Never", "containers": [{"name": "c"}]}}`,
		want: `pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name`,
	}, {
		name: "secret the account does not reference",
		pod: `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "strict", "imagePullSecrets": [{"name": "pull"}],
			"containers": [{"name": "c", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}],
				"envFrom": [{"secretRef": {"name": "other"}}]}]}}`,
		want: `pods "p" is forbidden: container c with envFrom referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`,
	}, {
		name: "pull secret the account does not reference",
		pod:  `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "strict", "imagePullSecrets": [{"name": "x"}], "containers": [{"name": "c"}]}}`,
		want: `pods "p" is forbidden: imagePullSecrets[0].name="x" is not allowed because service account strict does not reference that imagePullSecret`,
	}, {
		name: "mirror pod with an account",
		pod:  `{"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": ""}}, "spec": {"serviceAccountName": "default"}}`,
		want: `pods "p" is forbidden: a mirror pod may not reference service accounts`,
	}, {
		name: "mirror pod with a secret",
		pod:  `{"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": ""}}, "spec": {"volumes": [{"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}}]}}`,
		want: `pods "p" is forbidden: a mirror pod may not reference secrets`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := podAttributes(webhook.Create, parse(t, tt.pod), nil)
			_, err := chain(src).Mutate(context.Background(), a, nil)
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status.Code != 403 || se.Status.Message != tt.want {
				t.Fatalf("got %v, want 403 %q", err, tt.want)
			}
		})
	}
	t.Run("second default class", func(t *testing.T) {
		a := &webhook.Attributes{Operation: webhook.Create, Resource: webhook.GVR{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
			Name: "third", Object: parse(t, `{"metadata": {"name": "third"}, "value": 1, "globalDefault": true}`)}
		err := chain(src).Validate(context.Background(), a)
		want := `priorityclasses.scheduling.k8s.io "third" is forbidden: PriorityClass low is already marked as default. Only one default can exist`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
		a.Operation, a.Name, a.Object = webhook.Update, "low", parse(t, `{"metadata": {"name": "low"}, "value": 10, "globalDefault": true}`)
		if err := chain(src).Validate(context.Background(), a); err != nil {
			t.Fatalf("the default itself updated: %v", err)
		}
	})
}

// TestEphemeralContainersSecrets: under an account that enforces
// mountable secrets, an ephemeral container may reference only the
// account's secrets; kube refuses the rest with a plain error (a 500 with
// no reason) and a missing account as Forbidden.
func TestEphemeralContainersSecrets(t *testing.T) {
	src := source{ServiceAccounts: {
		"ns/default": parse(t, `{"metadata": {"name": "default"}}`),
		"ns/strict":  parse(t, `{"metadata": {"name": "strict", "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}}, "secrets": [{"name": "ok"}]}`),
	}}
	pod := func(account, ephemeral string) api.Object {
		return parse(t, `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "`+account+`", "containers": [{"name": "c"}], "ephemeralContainers": [`+ephemeral+`]}}`)
	}
	tests := []struct {
		name, account, ephemeral string
		code                     int32
		want                     string
	}{
		{"own secret", "strict", `{"name": "e", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}], "envFrom": [{"secretRef": {"name": "ok"}}]}`, 0, ""},
		{"account not enforcing", "default", `{"name": "e", "envFrom": [{"secretRef": {"name": "other"}}]}`, 0, ""},
		{"env", "strict", `{"name": "e", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}`, 500,
			`ephemeral container e with envVar E referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"envFrom", "strict", `{"name": "f", "envFrom": [{"secretRef": {"name": "ok"}}, {"secretRef": {"name": "other"}}]}`, 500,
			`ephemeral container f with envFrom referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"missing account", "nope", `{"name": "e"}`, 403,
			`pods "p" is forbidden: error looking up service account ns/nope: serviceaccount "nope" not found`},
		{"no account", "", `{"name": "e"}`, 403, `pods "p" is forbidden: no service account specified for pod ns/p`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := podAttributes(webhook.Update, pod(tt.account, tt.ephemeral), pod(tt.account, ""))
			a.Subresource = "ephemeralcontainers"
			err := chain(src).Validate(context.Background(), a)
			var se *api.StatusError
			switch {
			case tt.code == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.code != 0 && (!errors.As(err, &se) || se.Status.Code != tt.code || se.Status.Message != tt.want):
				t.Fatalf("got %v, want %d %q", err, tt.code, tt.want)
			case tt.code == 500 && se.Status.Reason != "":
				t.Fatalf("reason %q, want none", se.Status.Reason)
			}
		})
	}
}

func TestMutatePodUpdate(t *testing.T) {
	old := parse(t, `{"metadata": {"name": "p"}, "spec": {"priority": 7, "preemptionPolicy": "Never", "tolerations": `+tolerationsJSON+`}}`)
	pod := parse(t, `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "gone"}}`)
	a := podAttributes(webhook.Update, pod, old)
	if _, err := chain(source{}).Mutate(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	want := parse(t, `{"metadata": {"name": "p"}, "spec": {"serviceAccountName": "gone", "priority": 7, "preemptionPolicy": "Never", "tolerations": `+tolerationsJSON+`}}`)
	if diff := cmp.Diff(want, a.Object); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	a.Subresource = "status"
	a.Object = parse(t, `{"metadata": {"name": "p"}, "spec": {}}`)
	if _, err := chain(source{}).Mutate(context.Background(), a, nil); err != nil || len(a.Object["spec"].(map[string]any)) != 0 {
		t.Errorf("a status update was mutated: %v, %v", a.Object, err)
	}
}

// claimFinalizer is a new claim's metadata given by StorageObjectInUseProtection.
const claimFinalizer = `"metadata": {"finalizers": ["kubernetes.io/pvc-protection"]}`

func TestDefaultClasses(t *testing.T) {
	src := source{
		StorageClasses: {
			"/old":   parse(t, `{"metadata": {"name": "old", "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}`),
			"/b-new": parse(t, `{"metadata": {"name": "b-new", "creationTimestamp": "2026-02-01T00:00:00Z", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}}`),
			"/a-new": parse(t, `{"metadata": {"name": "a-new", "creationTimestamp": "2026-02-01T00:00:00Z", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}`),
			"/newer": parse(t, `{"metadata": {"name": "newer", "creationTimestamp": "2026-03-01T00:00:00Z", "annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}}`),
		},
	}
	tests := []struct {
		name, group, plural, obj, want string
	}{
		{"newest default, first by name", "", "persistentvolumeclaims", `{"spec": {}}`, `{` + claimFinalizer + `, "spec": {"storageClassName": "a-new"}}`},
		{"class named", "", "persistentvolumeclaims", `{"spec": {"storageClassName": ""}}`, `{` + claimFinalizer + `, "spec": {"storageClassName": ""}}`},
		{"class annotated", "", "persistentvolumeclaims", `{"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}}, "spec": {}}`,
			`{"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}, "finalizers": ["kubernetes.io/pvc-protection"]}, "spec": {}}`},
		{"no default ingress class", "networking.k8s.io", "ingresses", `{"spec": {}}`, `{"spec": {}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: webhook.Create, Resource: webhook.GVR{Group: tt.group, Version: "v1", Resource: tt.plural}, Namespace: "ns", Object: parse(t, tt.obj)}
			if _, err := chain(src).Mutate(context.Background(), a, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(parse(t, tt.want), a.Object); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestPriorityFromProtobuf checks a priority given as protobuf decodes
// numbers (float64), equal to the class's.
func TestPriorityFromProtobuf(t *testing.T) {
	src := source{
		ServiceAccounts: {"ns/default": parse(t, `{"metadata": {"name": "default"}}`)},
		PriorityClasses: {"/high": parse(t, `{"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}`)},
	}
	pod := parse(t, `{"metadata": {"name": "p"}, "spec": {"priorityClassName": "high"}}`)
	pod["spec"].(map[string]any)["priority"] = float64(1000)
	if _, err := chain(src).Mutate(context.Background(), podAttributes(webhook.Create, pod, nil), nil); err != nil {
		t.Fatal(err)
	}
}

func TestRuntimeClass(t *testing.T) {
	src := source{
		ServiceAccounts: {"ns/default": parse(t, `{"metadata": {"name": "default"}}`)},
		RuntimeClasses: {
			"/kata": parse(t, `{"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
				"scheduling": {"nodeSelector": {"runtime": "kata"}, "tolerations": [
					{"key": "kata", "operator": "Exists", "effect": "NoSchedule"},
					{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100}]}}`),
			"/plain": parse(t, `{"metadata": {"name": "plain"}, "handler": "runc"}`),
		},
	}
	const noMount = `"automountServiceAccountToken": false, `
	tests := []struct{ name, pod, want, refused string }{{
		name: "overhead and scheduling merged",
		pod:  `{"metadata": {"name": "p"}, "spec": {` + noMount + `"runtimeClassName": "kata", "nodeSelector": {"zone": "a"}}}`,
		want: `{"metadata": {"name": "p"}, "spec": {` + noMount + `"runtimeClassName": "kata", "serviceAccountName": "default", "serviceAccount": "default",
			"priority": 0, "preemptionPolicy": "PreemptLowerPriority",
			"nodeSelector": {"zone": "a", "runtime": "kata"}, "overhead": {"cpu": "250m", "memory": "64Mi"},
			"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
				{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
				{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}}`, // the class's 100 s is within the default 300 s
	}, {
		name: "own equal overhead", pod: `{"metadata": {"name": "p"}, "spec": {` + noMount + `"runtimeClassName": "kata", "overhead": {"cpu": "0.25", "memory": "64Mi"}}}`,
	}, {
		name: "other overhead", pod: `{"metadata": {"name": "p"}, "spec": {"runtimeClassName": "kata", "overhead": {"cpu": "1"}}}`,
		refused: `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`,
	}, {
		name: "overhead without a class's", pod: `{"metadata": {"name": "p"}, "spec": {"runtimeClassName": "plain", "overhead": {"cpu": "1"}}}`,
		refused: `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`,
	}, {
		name: "selector conflict", pod: `{"metadata": {"name": "p"}, "spec": {"runtimeClassName": "kata", "nodeSelector": {"runtime": "runc"}}}`,
		refused: `pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc`,
	}, {
		name: "missing class", pod: `{"metadata": {"name": "p"}, "spec": {"runtimeClassName": "gvisor"}}`,
		refused: `pods "p" is forbidden: pod rejected: RuntimeClass "gvisor" not found`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := podAttributes(webhook.Create, parse(t, tt.pod), nil)
			_, err := chain(src).Mutate(context.Background(), a, nil)
			if err == nil {
				err = chain(src).Validate(context.Background(), a)
			}
			if tt.refused != "" {
				if err == nil || err.Error() != tt.refused {
					t.Fatalf("got %v, want %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				return
			}
			if diff := cmp.Diff(parse(t, tt.want), a.Object); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestNodeTaint(t *testing.T) {
	tests := []struct{ node, want string }{
		{`{"metadata": {"name": "n"}}`, `{"metadata": {"name": "n"}, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}`},
		{`{"metadata": {"name": "n"}, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}}`,
			`{"metadata": {"name": "n"}, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}, {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}}`},
		{`{"metadata": {"name": "n"}, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}]}}`,
			`{"metadata": {"name": "n"}, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "value": "x", "effect": "NoSchedule"}]}}`},
	}
	for _, tt := range tests {
		a := &webhook.Attributes{Operation: webhook.Create, Resource: webhook.GVR{Version: "v1", Resource: "nodes"}, Object: parse(t, tt.node)}
		if _, err := chain(source{}).Mutate(context.Background(), a, nil); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(parse(t, tt.want), a.Object); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tt.node, diff)
		}
	}
}
