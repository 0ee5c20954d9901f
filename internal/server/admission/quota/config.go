package quota

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Limited is one of the ResourceQuota plugin's limitedResources: a
// resource of which a write may consume the resources whose names
// contain one of MatchContains, or match one of MatchScopes (of any
// resource), only if a quota covers them.
type Limited struct {
	APIGroup      string   `json:"apiGroup,omitempty"`
	Resource      string   `json:"resource"`
	MatchContains []string `json:"matchContains,omitempty"`
	MatchScopes   []Scope  `json:"matchScopes,omitempty"`
}

// configKinds are the kinds of the plugin's configuration by apiVersion:
// all have the same fields.
var configKinds = map[string]string{
	"apiserver.config.k8s.io/v1":              "ResourceQuotaConfiguration",
	"resourcequota.admission.k8s.io/v1beta1":  "Configuration",
	"resourcequota.admission.k8s.io/v1alpha1": "Configuration",
}

// LoadConfig reads the ResourceQuota plugin's configuration (YAML or
// JSON) as kube's LoadConfiguration and ValidateConfiguration do:
// strictly (unknown or duplicate fields are errors, names are
// case-sensitive), each limited resource named.
func LoadConfig(data []byte) ([]Limited, error) {
	data, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("strict decoding error: %w", err)
	}
	var c struct {
		APIVersion       string    `json:"apiVersion"`
		Kind             string    `json:"kind"`
		LimitedResources []Limited `json:"limitedResources"`
	}
	strict, err := kjson.UnmarshalStrict(data, &c)
	switch {
	case err != nil:
		return nil, err
	case c.Kind == "":
		return nil, errors.New("Object 'Kind' is missing in " + string(data))
	case configKinds[c.APIVersion] != c.Kind:
		return nil, fmt.Errorf("no kind %q is registered for version %q", c.Kind, c.APIVersion)
	case len(strict) > 0:
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("strict decoding error: %s", strings.Join(msgs, ", "))
	}
	var errs field.ErrorList
	for i, l := range c.LimitedResources {
		if l.Resource == "" {
			errs = append(errs, field.Required(field.NewPath("limitedResources").Index(i).Child("resource"), ""))
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return c.LimitedResources, nil
}
