package audit

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/internal/server/authz"
)

// Policy is an audit.k8s.io/v1 Policy: the first of its rules a request
// matches sets its level; a request no rule matches is not logged.
type Policy struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   any          `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
	// OmitStages are never logged, whichever rule matches.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields leaves metadata.managedFields out of the logged
	// objects, unless a rule says otherwise.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule matches requests by every field it sets; an empty field
// matches everything.
type PolicyRule struct {
	Level      Level    `json:"level"`
	Users      []string `json:"users,omitempty"`
	UserGroups []string `json:"userGroups,omitempty"`
	Verbs      []string `json:"verbs,omitempty"`
	// Resources and Namespaces match resource requests only;
	// NonResourceURLs non-resource requests only.
	Resources         []GroupResources `json:"resources,omitempty"`
	Namespaces        []string         `json:"namespaces,omitempty"`
	NonResourceURLs   []string         `json:"nonResourceURLs,omitempty"`
	OmitStages        []Stage          `json:"omitStages,omitempty"`
	OmitManagedFields *bool            `json:"omitManagedFields,omitempty"`
}

// GroupResources are resources of one API group ("*": every group):
// "pods", "pods/log",
// "*" (every resource and subresource), "pods/*", "*/scale".
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// RequestConfig is how a request is audited.
type RequestConfig struct {
	Level             Level
	OmitStages        []Stage
	OmitManagedFields bool
}

// Omits says whether stage is not logged.
func (c RequestConfig) Omits(stage Stage) bool { return slices.Contains(c.OmitStages, stage) }

// LoadPolicy reads a policy file (--audit-policy-file), YAML or JSON.
// warning, if not empty, names the fields it does not know, which are
// ignored, as kube's lenient decoding does after its strict one fails.
func LoadPolicy(path string) (p *Policy, warning string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	p, warning, err = ParsePolicy(b)
	if err != nil {
		return nil, "", fmt.Errorf("%w: from file %s", err, path)
	}
	return p, warning, nil
}

// ParsePolicy decodes and validates a policy as kube's
// LoadPolicyFromBytes does.
func ParsePolicy(b []byte) (p *Policy, warning string, err error) {
	p = &Policy{}
	if err := yaml.Unmarshal(b, p); err != nil {
		return nil, "", fmt.Errorf("failed decoding: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &Policy{}); err != nil {
		warning = fmt.Sprintf("audit policy contains errors, falling back to lenient decoding: %v", err)
	}
	if p.APIVersion != "audit.k8s.io/v1" || p.Kind != "Policy" {
		return nil, "", fmt.Errorf("want apiVersion audit.k8s.io/v1 and kind Policy, got %q and %q", p.APIVersion, p.Kind)
	}
	if errs := p.validate(); len(errs) > 0 {
		return nil, "", aggregate(errs)
	}
	if len(p.Rules) == 0 {
		return nil, "", fmt.Errorf("loaded illegal policy with 0 rules")
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		r.OmitStages = union(p.OmitStages, r.OmitStages)
	}
	return p, warning, nil
}

// aggregate joins errors as kube's utilerrors.Aggregate prints them.
func aggregate(errs []string) error {
	if len(errs) == 1 {
		return fmt.Errorf("%s", errs[0])
	}
	return fmt.Errorf("[%s]", strings.Join(errs, ", "))
}

func union(a, b []Stage) []Stage {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

var (
	validLevels = []Level{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}
	validStages = []Stage{StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic}
	// groupName is a DNS-1123 subdomain, as kube requires of API groups.
	groupName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// validate is kube's ValidatePolicy, with its messages.
func (p *Policy) validate() []string {
	errs := validateStages(p.OmitStages, "omitStages")
	for i, r := range p.Rules {
		path := fmt.Sprintf("rules[%d]", i)
		switch {
		case r.Level == "":
			errs = append(errs, path+".level: Required value")
		case !slices.Contains(validLevels, r.Level):
			errs = append(errs, fmt.Sprintf("%s.level: Unsupported value: %q: supported values: %s", path, r.Level, quoted(validLevels)))
		}
		for j, u := range r.NonResourceURLs {
			if u == "*" {
				continue
			}
			if !strings.HasPrefix(u, "/") {
				errs = append(errs, fmt.Sprintf("%s.nonResourceURLs[%d]: Invalid value: %q: non-resource URL rules must begin with a '/' character", path, j, u))
			}
			if u != "" && strings.Contains(u[:len(u)-1], "*") {
				errs = append(errs, fmt.Sprintf("%s.nonResourceURLs[%d]: Invalid value: %q: non-resource URL wildcards '*' must be the final character of the rule", path, j, u))
			}
		}
		for _, gr := range r.Resources {
			if gr.Group != "" && gr.Group != "*" && (len(gr.Group) > 253 || !groupName.MatchString(gr.Group)) {
				errs = append(errs, fmt.Sprintf("%s.resources.group: Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')", path, gr.Group))
			}
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				errs = append(errs, fmt.Sprintf("%s.resources.resourceNames: Invalid value: %#v: using resourceNames requires at least one resource", path, gr.ResourceNames))
			}
		}
		errs = append(errs, validateStages(r.OmitStages, path+".omitStages")...)
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, fmt.Sprintf("%s.nonResourceURLs: Invalid value: %#v: rules cannot apply to both regular resources and non-resource URLs", path, r.NonResourceURLs))
		}
	}
	return errs
}

func validateStages(stages []Stage, path string) []string {
	var errs []string
	for i, s := range stages {
		if !slices.Contains(validStages, s) {
			var names []string
			for _, v := range validStages {
				names = append(names, string(v))
			}
			errs = append(errs, fmt.Sprintf("%s[%d]: Invalid value: %q: allowed stages are %s", path, i, s, strings.Join(names, ",")))
		}
	}
	return errs
}

func quoted(levels []Level) string {
	q := make([]string, len(levels))
	for i, l := range levels {
		q[i] = fmt.Sprintf("%q", l)
	}
	return strings.Join(q, ", ")
}

// Evaluate is how a request is audited: as the first rule it matches
// says, else not at all (kube's policyRuleEvaluator).
func (p *Policy) Evaluate(a authz.Attributes) RequestConfig {
	for i := range p.Rules {
		if r := &p.Rules[i]; r.matches(a) {
			omit := p.OmitManagedFields
			if r.OmitManagedFields != nil {
				omit = *r.OmitManagedFields
			}
			return RequestConfig{Level: r.Level, OmitStages: r.OmitStages, OmitManagedFields: omit}
		}
	}
	return RequestConfig{Level: LevelNone, OmitStages: p.OmitStages, OmitManagedFields: p.OmitManagedFields}
}

func (r *PolicyRule) matches(a authz.Attributes) bool {
	if len(r.Users) > 0 && (a.User == nil || !slices.Contains(r.Users, a.User.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 && (a.User == nil || !slices.ContainsFunc(a.User.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) })) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	switch {
	case len(r.Namespaces) > 0 || len(r.Resources) > 0:
		return r.matchesResource(a)
	case len(r.NonResourceURLs) > 0:
		return !a.ResourceRequest && slices.ContainsFunc(r.NonResourceURLs, func(spec string) bool { return pathMatches(a.Path, spec) })
	}
	return true
}

// pathMatches: "*", the path itself, or a prefix ending in "*".
func pathMatches(path, spec string) bool {
	if spec == "*" || spec == path {
		return true
	}
	prefix, ok := strings.CutSuffix(spec, "*")
	return ok && strings.HasPrefix(path, strings.TrimRight(prefix, "*"))
}

func (r *PolicyRule) matchesResource(a authz.Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) { // "" is cluster-scoped
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != a.APIGroup && gr.Group != "*" {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == combined || res == "*":
				return true
			case a.Subresource != "" && res == "*/"+a.Subresource:
				return true
			case strings.HasSuffix(res, "/*") && a.Resource == strings.TrimSuffix(res, "/*"):
				return true
			}
		}
	}
	return false
}
