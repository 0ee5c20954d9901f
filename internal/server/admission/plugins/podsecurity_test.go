package plugins

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	psa "github.com/listwatch/listwatch/internal/server/admission/podsecurity"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/authn"
)

// TestPodSecurity checks what the PodSecurity plugin answers, warns and
// annotates; test/interop/admissionplugins proves the answers and
// warnings equal kube's on kube's fixtures.
func TestPodSecurity(t *testing.T) {
	src := source{Namespaces: {
		"/open":       parse(t, `{"metadata": {"name": "open"}}`),
		"/restricted": parse(t, `{"metadata": {"name": "restricted", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}`),
		"/warned": parse(t, `{"metadata": {"name": "warned", "labels": {"pod-security.kubernetes.io/warn": "baseline",
			"pod-security.kubernetes.io/audit": "baseline", "pod-security.kubernetes.io/audit-version": "v1.30"}}}`),
		"/exempt":   parse(t, `{"metadata": {"name": "exempt", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}`),
		"/baseline": parse(t, `{"metadata": {"name": "baseline", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}`),
	}}
	const privileged = `{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}}`
	const runAsNonRoot = `{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}`
	const violation = `privileged (container "c" must not set securityContext.privileged=true)`
	const restrictedViolation = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	const debugged = `{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}],
		"ephemeralContainers": [{"name": "dbg", "image": "busybox", "securityContext": {"privileged": true}}]}}`
	deployment := func(pod string) string {
		return `{"metadata": {"name": "d"}, "spec": {"template": ` + pod + `}}`
	}
	tests := []struct {
		name, ns, resource, sub, obj, old string
		user, runtimeClass                string
		err                               string
		warnings                          []string
		annotations                       map[string]string
	}{{
		name: "unlabeled namespace", ns: "open", obj: privileged,
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "privileged:latest"},
	}, {
		name: "enforced", ns: "restricted", obj: runAsNonRoot,
		err:         `pods "p" is forbidden: violates PodSecurity "restricted:latest": ` + restrictedViolation,
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "restricted:latest"},
	}, {
		name: "an update that changes no image is not checked", ns: "restricted", obj: runAsNonRoot, old: runAsNonRoot,
	}, {
		name: "an ephemeral container added is checked", ns: "baseline", sub: "ephemeralcontainers", obj: debugged, old: runAsNonRoot,
		err:         `pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "dbg" must not set securityContext.privileged=true)`,
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "baseline:latest"},
	}, {
		// The resize strategy keeps the images: this proves the subresource
		// is not among those PodSecurity ignores, as in kube.
		name: "a resize is checked as an update", ns: "baseline", sub: "resize", obj: privileged, old: strings.Replace(runAsNonRoot, `"image": "i"`, `"image": "j"`, 1),
		err:         `pods "p" is forbidden: violates PodSecurity "baseline:latest": ` + violation,
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "baseline:latest"},
	}, {
		name: "a status write is not checked", ns: "baseline", sub: "status", obj: debugged, old: runAsNonRoot,
	}, {
		name: "warned and audited", ns: "warned", obj: privileged,
		warnings: []string{`would violate PodSecurity "baseline:latest": ` + violation},
		annotations: map[string]string{"pod-security.kubernetes.io/enforce-policy": "privileged:latest",
			"pod-security.kubernetes.io/audit-violations": `would violate PodSecurity "baseline:v1.30": ` + violation},
	}, {
		name: "a template is warned of, never refused", ns: "warned", resource: "deployments", obj: deployment(privileged),
		warnings:    []string{`would violate PodSecurity "baseline:latest": ` + violation},
		annotations: map[string]string{"pod-security.kubernetes.io/audit-violations": `would violate PodSecurity "baseline:v1.30": ` + violation},
	}, {
		name: "the warn level follows a stricter enforce level", ns: "restricted", resource: "deployments", obj: deployment(privileged),
		warnings: []string{`would violate PodSecurity "restricted:latest": ` + violation + ", " + restrictedViolation},
	}, {
		name: "exempt namespace", ns: "exempt", obj: privileged,
		annotations: map[string]string{"pod-security.kubernetes.io/exempt": "namespace"},
	}, {
		name: "exempt user", ns: "restricted", obj: privileged, user: "ci",
		annotations: map[string]string{"pod-security.kubernetes.io/exempt": "user"},
	}, {
		name: "exempt runtime class", ns: "restricted", obj: `{"metadata": {"name": "p"}, "spec": {"runtimeClassName": "kata", "containers": [{"name": "c", "image": "i"}]}}`,
		annotations: map[string]string{"pod-security.kubernetes.io/exempt": "runtimeClass"},
	}, {
		name: "unreadable namespace refuses a pod", ns: "broken", obj: privileged,
		err:         `Internal error occurred: failed to lookup namespace "broken"`,
		annotations: map[string]string{"pod-security.kubernetes.io/error": `Internal error occurred: failed to lookup namespace "broken": unreadable`},
	}, {
		name: "unreadable namespace admits a template", ns: "broken", resource: "deployments", obj: deployment(privileged),
		annotations: map[string]string{"pod-security.kubernetes.io/error": `failed to lookup namespace "broken": unreadable`},
	}}
	cfg, err := psa.LoadConfig([]byte(`apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
exemptions: {namespaces: [exempt], usernames: [ci], runtimeClasses: [kata]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPodSecurity(src, cfg)
			a := &webhook.Attributes{Operation: webhook.Create, Resource: webhook.GVR{Version: "v1", Resource: "pods"},
				Namespace: tc.ns, Name: "p", Object: parse(t, tc.obj), User: &authn.User{Name: tc.user}}
			if tc.resource != "" {
				a.Resource, a.Name = webhook.GVR{Group: "apps", Version: "v1", Resource: tc.resource}, "d"
			}
			if tc.old != "" {
				a.Operation, a.OldObject = webhook.Update, parse(t, tc.old)
			}
			a.Subresource = tc.sub
			err := p.validate(context.Background(), a)
			if got := errText(err); got != tc.err {
				t.Errorf("got %q, want %q", got, tc.err)
			}
			if diff := cmp.Diff(tc.warnings, a.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.annotations, a.AuditAnnotations()); diff != "" {
				t.Errorf("audit annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodSecurityNamespaceUpdate checks the warnings of tightening a
// namespace: pods with the same violations counted under the first name.
func TestPodSecurityNamespaceUpdate(t *testing.T) {
	pod := func(name, ctx string) string {
		return `{"metadata": {"name": "` + name + `", "namespace": "ns"}, "spec": {"containers": [{"name": "c", "image": "i"` + ctx + `}]}}`
	}
	const priv = `, "securityContext": {"privileged": true}`
	src := source{Pods: {
		"ns/b": parse(t, pod("b", priv)), "ns/a": parse(t, pod("a", priv)), "ns/c": parse(t, pod("c", priv)),
		"ns/host": parse(t, `{"metadata": {"name": "host"}, "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i"}]}}`),
		"ns/fine": parse(t, pod("fine", "")), "other/x": parse(t, pod("x", priv)),
	}}
	ns := func(labels string) string { return `{"metadata": {"name": "ns", "labels": {` + labels + `}}}` }
	tests := []struct {
		name, labels, old string
		err               string
		warnings          []string
	}{{
		name: "tightened", labels: `"pod-security.kubernetes.io/enforce": "baseline"`,
		warnings: []string{`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
			`a (and 2 other pods): privileged`, `host: host namespaces`},
	}, {
		name: "loosened", labels: `"pod-security.kubernetes.io/enforce": "baseline"`, old: `"pod-security.kubernetes.io/enforce": "restricted"`,
	}, {
		name: "bad labels", labels: `"pod-security.kubernetes.io/enforce": "strict", "pod-security.kubernetes.io/warn-version": "1.2"`,
		err: `Namespace "ns" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, ` +
			`metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.2": must be "latest" or "v1.x"]`,
	}, {
		name: "bad labels kept", labels: `"pod-security.kubernetes.io/enforce": "strict"`, old: `"pod-security.kubernetes.io/enforce": "strict"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &webhook.Attributes{Operation: webhook.Update, Resource: webhook.GVR{Version: "v1", Resource: "namespaces"},
				Kind: webhook.GVK{Version: "v1", Kind: "Namespace"}, Name: "ns", Object: parse(t, ns(tc.labels)), OldObject: parse(t, ns(tc.old))}
			err := newPodSecurity(src, nil).validate(context.Background(), a)
			if got := errText(err); got != tc.err {
				t.Errorf("got %q, want %q", got, tc.err)
			}
			if diff := cmp.Diff(tc.warnings, a.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPodSecurityConfig checks the configuration's defaults apply to an
// unlabeled namespace, and a bad one is refused with kube's errors.
func TestPodSecurityConfig(t *testing.T) {
	cfg, err := psa.LoadConfig([]byte(`{"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
		"defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"}}`))
	if err != nil {
		t.Fatal(err)
	}
	src := source{Namespaces: {"/open": parse(t, `{"metadata": {"name": "open"}}`)}}
	a := &webhook.Attributes{Operation: webhook.Create, Resource: webhook.GVR{Version: "v1", Resource: "pods"}, Namespace: "open", Name: "p",
		Object: parse(t, `{"metadata": {"name": "p"}, "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i"}]}}`)}
	want := `pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`
	if err := newPodSecurity(src, cfg).validate(context.Background(), a); errText(err) != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = psa.LoadConfig([]byte(`{"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
		"defaults": {"enforce": "strict"}}`))
	if want := `defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, restricted`; errText(err) != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
