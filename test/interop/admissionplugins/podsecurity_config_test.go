package admissionplugins

import (
	"fmt"
	"testing"

	psaconfig "k8s.io/pod-security-admission/admission/api"
	psaload "k8s.io/pod-security-admission/admission/api/load"
	psavalidation "k8s.io/pod-security-admission/admission/api/validation"

	"github.com/listwatch/listwatch/internal/server/admission/podsecurity"
)

// TestPodSecurityConfigAsKubes loads PodSecurityConfigurations with ours
// and with kube's loader, validation and ToPolicy: the same are refused,
// the errors of validation are kube's text, and the policies and
// exemptions of the accepted ones are equal.
func TestPodSecurityConfigAsKubes(t *testing.T) {
	const head = "apiVersion: pod-security.admission.config.k8s.io/"
	for _, tc := range []struct {
		config    string
		sameError bool // the text of the error is kube's too
	}{
		{config: head + "v1\nkind: PodSecurityConfiguration\n"},
		{config: head + "v1beta1\nkind: PodSecurityConfiguration\ndefaults: {enforce: baseline, warn-version: v1.30}\n"},
		{config: head + "v1alpha1\nkind: PodSecurityConfiguration\ndefaults: {audit: restricted, audit-version: latest}\n"},
		{config: `{"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", "defaults": {"enforce": "restricted", "enforce-version": "v1.0"},
			"exemptions": {"namespaces": ["kube-system"], "usernames": ["ci"], "runtimeClasses": ["kata.example.com"]}}`},
		{config: head + "v1\nkind: PodSecurityConfiguration\ndefaults: {enforce: strict, enforce-version: v2.1, warn: x, audit-version: '1.30'}\n", sameError: true},
		{config: head + "v1\nkind: PodSecurityConfiguration\ndefaults: {audit-version: 1.30}\n", sameError: true},
		{config: head + "v1\nkind: PodSecurityConfiguration\nexemptions: {namespaces: [Bad, a, a], runtimeClasses: [x_y, r, r], usernames: ['', u, u]}\n", sameError: true},
		{config: head + "v1\nkind: PodSecurityConfiguration\ndefaults: {enforce: baseline, foo: bar}\n", sameError: true},
		{config: head + "v1\nkind: PodSecurityConfiguration\nDefaults: {enforce: baseline}\n", sameError: true},
		{config: head + "v2\nkind: PodSecurityConfiguration\n"},
		{config: head + "v1\nkind: Other\n"},
		{config: "kind: PodSecurityConfiguration\n"},
		{config: head + "v1\nkind: PodSecurityConfiguration\ndefaults: [1]\n"},
	} {
		want, wantErr := kubeConfig([]byte(tc.config))
		got, err := podsecurity.LoadConfig([]byte(tc.config))
		switch {
		case (err == nil) != (wantErr == nil):
			t.Errorf("%s: got %v, kube's error %v", tc.config, err, wantErr)
		case err != nil && tc.sameError && err.Error() != wantErr.Error():
			t.Errorf("%s:\n got error %v\nkube's error %v", tc.config, err, wantErr)
		case err == nil && fmt.Sprint(got) != want:
			t.Errorf("%s:\n got %v\nkube's %v", tc.config, got, want)
		}
	}
}

// kubeConfig is kube's reading of a PodSecurityConfiguration, printed as
// a podsecurity.Config prints.
func kubeConfig(data []byte) (string, error) {
	cfg, err := psaload.LoadFromData(data)
	if err != nil {
		return "", err
	}
	if errs := psavalidation.ValidatePodSecurityConfiguration(cfg); len(errs) > 0 {
		return "", errs.ToAggregate()
	}
	p, err := psaconfig.ToPolicy(cfg.Defaults)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(&podsecurity.Config{
		Defaults: podsecurity.Policy{
			Enforce: ours(string(p.Enforce.Level), p.Enforce.Version.String()),
			Audit:   ours(string(p.Audit.Level), p.Audit.Version.String()),
			Warn:    ours(string(p.Warn.Level), p.Warn.Version.String())},
		Exemptions: podsecurity.Exemptions{Namespaces: cfg.Exemptions.Namespaces, Usernames: cfg.Exemptions.Usernames, RuntimeClasses: cfg.Exemptions.RuntimeClasses}}), nil
}

// ours is kube's level and version as ours.
func ours(level, version string) podsecurity.LevelVersion {
	l, _ := podsecurity.ParseLevel(level)
	v, _ := podsecurity.ParseVersion(version)
	return podsecurity.LevelVersion{Level: l, Version: v}
}
