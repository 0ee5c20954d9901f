package podsecurity

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Config is kube's PodSecurityConfiguration: the policy of a namespace
// without labels, and the requests let through unchecked: by the
// namespace they write in, the user who writes, or the pod's
// runtimeClassName.
type Config struct {
	Defaults   Policy
	Exemptions Exemptions
}

// Exemptions are a configuration's exemptions.
type Exemptions struct {
	Namespaces, Usernames, RuntimeClasses []string
}

// DefaultConfig is kube-apiserver's configuration when none is given:
// every mode privileged at the latest version, nothing exempt.
func DefaultConfig() *Config {
	privileged := LevelVersion{Level: LevelPrivileged, Version: LatestVersion}
	return &Config{Defaults: Policy{Enforce: privileged, Audit: privileged, Warn: privileged}}
}

// configGroup is the API group of PodSecurityConfiguration; its versions
// v1, v1beta1 and v1alpha1 have the same fields.
const configGroup = "pod-security.admission.config.k8s.io"

// config is a PodSecurityConfiguration as written.
type config struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Defaults   PodSecurityDefaults   `json:"defaults"`
	Exemptions PodSecurityExemptions `json:"exemptions"`
}

// PodSecurityDefaults and PodSecurityExemptions are named as kube's types
// are, which decoding errors name.
type (
	PodSecurityDefaults struct {
		Enforce        string `json:"enforce"`
		EnforceVersion string `json:"enforce-version"`
		Audit          string `json:"audit"`
		AuditVersion   string `json:"audit-version"`
		Warn           string `json:"warn"`
		WarnVersion    string `json:"warn-version"`
	}
	PodSecurityExemptions struct {
		Usernames      []string `json:"usernames"`
		Namespaces     []string `json:"namespaces"`
		RuntimeClasses []string `json:"runtimeClasses"`
	}
)

// LoadConfig reads a PodSecurityConfiguration (YAML or JSON) as kube's
// loader does: strictly (unknown or duplicate fields are errors, field
// names are case-sensitive), unset levels privileged and unset versions
// latest, then validated with kube's messages.
func LoadConfig(data []byte) (*Config, error) {
	data, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("strict decoding error: %w", err)
	}
	var c config
	strict, err := kjson.UnmarshalStrict(data, &c)
	if err != nil {
		return nil, err
	}
	group, version, _ := strings.Cut(c.APIVersion, "/")
	if c.Kind != "PodSecurityConfiguration" || group != configGroup || !slices.Contains([]string{"v1", "v1beta1", "v1alpha1"}, version) {
		return nil, fmt.Errorf("expected PodSecurityConfiguration of %s/v1, v1beta1 or v1alpha1, got kind %q of apiVersion %q", configGroup, c.Kind, c.APIVersion)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("strict decoding error: %s", strings.Join(msgs, ", "))
	}
	d := &c.Defaults
	for _, f := range []*string{&d.Enforce, &d.Audit, &d.Warn} {
		if *f == "" {
			*f = string(LevelPrivileged)
		}
	}
	for _, f := range []*string{&d.EnforceVersion, &d.AuditVersion, &d.WarnVersion} {
		if *f == "" {
			*f = LatestVersion.String()
		}
	}
	var errs field.ErrorList
	defaults := field.NewPath("defaults")
	var p Policy
	for _, m := range []struct {
		name, level, version string
		to                   *LevelVersion
	}{{"enforce", d.Enforce, d.EnforceVersion, &p.Enforce}, {"warn", d.Warn, d.WarnVersion, &p.Warn}, {"audit", d.Audit, d.AuditVersion, &p.Audit}} {
		if m.to.Level, err = ParseLevel(m.level); err != nil {
			errs = append(errs, field.Invalid(defaults.Child(m.name), m.level, err.Error()))
		}
		if m.to.Version, err = ParseVersion(m.version); err != nil {
			errs = append(errs, field.Invalid(defaults.Child(m.name+"-version"), m.version, err.Error()))
		}
	}
	exemptions := field.NewPath("exemptions")
	errs = append(errs, validateNames(exemptions.Child("namespaces"), c.Exemptions.Namespaces, validation.IsDNS1123Label)...)
	errs = append(errs, validateNames(exemptions.Child("runtimeClasses"), c.Exemptions.RuntimeClasses, validation.IsDNS1123Subdomain)...)
	errs = append(errs, validateNames(exemptions.Child("usernames"), c.Exemptions.Usernames, func(name string) []string {
		if name == "" {
			return []string{"username must not be empty"}
		}
		return nil
	})...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &Config{Defaults: p, Exemptions: Exemptions{Namespaces: c.Exemptions.Namespaces,
		Usernames: c.Exemptions.Usernames, RuntimeClasses: c.Exemptions.RuntimeClasses}}, nil
}

// validateNames refuses invalid and repeated names of a list of
// exemptions.
func validateNames(path *field.Path, names []string, invalid func(string) []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, name := range names {
		switch msgs := invalid(name); {
		case len(msgs) > 0:
			errs = append(errs, field.Invalid(path.Index(i), name, strings.Join(msgs, ", ")))
		case seen[name]:
			errs = append(errs, field.Duplicate(path.Index(i), name))
		default:
			seen[name] = true
		}
	}
	return errs
}
