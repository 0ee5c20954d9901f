package resource

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// AdmissionGroup is the group of the webhook configurations.
const AdmissionGroup = "admissionregistration.k8s.io"

// webhookConfigurations are admissionregistration.k8s.io/v1's
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration,
// defaulted as kube's v1 defaults.go, validated as kube's
// pkg/apis/admissionregistration/validation and printed as kube's printers
// (Webhooks: their number).
func webhookConfigurations() []*Resource {
	kind := func(plural string, mutating bool) *Resource {
		return &Resource{
			Group: AdmissionGroup, Version: "v1", Plural: plural,
			Validate: func(obj api.Object) []api.StatusCause { return validateWebhooks(obj, mutating) },
			Columns: []Column{
				column("Webhooks", "integer", "", "Webhooks indicates the number of webhooks registered in this configuration", func(o api.Object) any {
					l, _ := o["webhooks"].([]any)
					return len(l)
				}),
				ageColumn(),
			},
		}
	}
	return []*Resource{
		kind("mutatingwebhookconfigurations", true),
		kind("validatingwebhookconfigurations", false),
	}
}

// The values kube's validation supports.
var (
	webhookOperations       = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	webhookScopes           = []string{"*", "Cluster", "Namespaced"}
	failurePolicies         = []string{"Fail", "Ignore"}
	matchPolicies           = []string{"Equivalent", "Exact"}
	noSideEffectClasses     = []string{"None", "NoneOnDryRun"}
	reinvocationPolicies    = []string{"IfNeeded", "Never"}
	admissionReviewVersions = []string{"v1", "v1beta1"}
)

// maxMatchConditions is kube's limit on a webhook's matchConditions.
const maxMatchConditions = 64

// validateWebhooks is kube's ValidateMutatingWebhookConfiguration and
// ValidateValidatingWebhookConfiguration as the v1 API runs them on
// create: unique webhook names, sideEffects None or NoneOnDryRun, a
// recognised admissionReviewVersion. (CEL expressions of matchConditions
// are compiled by the dispatcher, which fails a call on one that does not.)
func validateWebhooks(obj api.Object, mutating bool) []api.StatusCause {
	c := &checker{}
	names := map[string]bool{}
	for i, h := range c.list(obj["webhooks"], "webhooks") {
		p := fmt.Sprintf("webhooks[%d]", i)
		hook := c.object(h, p)
		name := c.string(hook["name"], p+".name")
		c.fullyQualified(p+".name", name)
		if name != "" {
			if names[name] {
				c.add(api.CauseTypeFieldValueDuplicate, p+".name", "Duplicate value: "+badValue(name))
			}
			names[name] = true
		}
		for j, r := range c.list(hook["rules"], p+".rules") {
			c.webhookRule(c.object(r, fmt.Sprintf("%s.rules[%d]", p, j)), fmt.Sprintf("%s.rules[%d]", p, j))
		}
		c.oneOf(hook, "failurePolicy", p, failurePolicies)
		c.oneOf(hook, "matchPolicy", p, matchPolicies)
		if hook["sideEffects"] == nil {
			c.required(p+".sideEffects", "must specify one of "+strings.Join(noSideEffectClasses, ", "))
		} else {
			c.oneOf(hook, "sideEffects", p, noSideEffectClasses)
		}
		if v, ok := hook["timeoutSeconds"]; ok && v != nil {
			if n, isInt := int32Value(v); !isInt || n < 1 || n > 30 {
				c.invalid(p+".timeoutSeconds", v, "the timeout value must be between 1 and 30 seconds")
			}
		}
		for _, f := range []string{"namespaceSelector", "objectSelector"} {
			if hook[f] != nil {
				c.validSelector(c.readSelector(hook[f], p+"."+f), p+"."+f)
			}
		}
		if mutating {
			c.oneOf(hook, "reinvocationPolicy", p, reinvocationPolicies)
		}
		c.clientConfig(c.object(hook["clientConfig"], p+".clientConfig"), p+".clientConfig")
		c.matchConditions(c.list(hook["matchConditions"], p+".matchConditions"), p+".matchConditions")
		c.reviewVersions(c.strings(hook["admissionReviewVersions"], p+".admissionReviewVersions"), p+".admissionReviewVersions", "must specify one of "+strings.Join(admissionReviewVersions, ", "))
	}
	return c.causes
}

// oneOf checks that hook's optional field, when set, is one of supported.
func (c *checker) oneOf(hook map[string]any, field, p string, supported []string) {
	if v := hook[field]; v != nil {
		s := c.string(v, p+"."+field)
		if !contains(supported, s) {
			c.notSupported(p+"."+field, s, supported...)
		}
	}
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// fullyQualified is apimachinery's IsFullyQualifiedName: a DNS subdomain
// of at least three segments.
func (c *checker) fullyQualified(field, name string) {
	if name == "" {
		c.required(field, "")
		return
	}
	name = strings.TrimSuffix(name, ".")
	if msgs := DNS1123Subdomain(name); len(msgs) > 0 {
		c.invalid(field, name, strings.Join(msgs, ","))
		return
	}
	if len(strings.Split(name, ".")) < 3 {
		c.invalid(field, name, "should be a domain with at least three segments separated by dots")
	}
}

// webhookRule is kube's validateRuleWithOperations (subresources allowed).
func (c *checker) webhookRule(rule map[string]any, p string) {
	ops := c.ruleList(rule, p, "operations", "operations")
	for i, op := range ops {
		if !contains(webhookOperations, op) {
			c.notSupported(fmt.Sprintf("%s.operations[%d]", p, i), op, webhookOperations...)
		}
	}
	c.ruleList(rule, p, "apiGroups", "API groups")
	for i, v := range c.ruleList(rule, p, "apiVersions", "API versions") {
		if v == "" {
			c.required(fmt.Sprintf("%s.apiVersions[%d]", p, i), "")
		}
	}
	c.ruleResources(c.strings(rule["resources"], p+".resources"), p+".resources")
	c.oneOf(rule, "scope", p, webhookScopes)
}

// ruleList reads a rule's list, which must not be empty nor hold "*" with
// anything else (what names the items in the message).
func (c *checker) ruleList(rule map[string]any, p, field, what string) []string {
	l := c.strings(rule[field], p+"."+field)
	if len(l) == 0 {
		c.required(p+"."+field, "")
	}
	if len(l) > 1 && contains(l, "*") {
		c.invalid(p+"."+field, l, "if '*' is present, must not specify other "+what)
	}
	return l
}

// ruleResources is kube's validateResources: "*", "*/*", "x/*" and "*/x"
// may not be given with what they cover.
func (c *checker) ruleResources(resources []string, p string) {
	if len(resources) == 0 {
		c.required(p, "")
	}
	anySub, anyRes := map[string]bool{}, map[string]bool{}
	doubleWildcard, wildcard, plain := false, false, false
	for i, rs := range resources {
		f := fmt.Sprintf("%s[%d]", p, i)
		if rs == "" {
			c.required(f, "")
			continue
		}
		doubleWildcard = doubleWildcard || rs == "*/*"
		wildcard = wildcard || rs == "*"
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*" // as kube: the last one without a subresource decides
			continue
		}
		if anySub[res] {
			c.invalid(f, rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs))
		}
		if anyRes[sub] {
			c.invalid(f, rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs))
		}
		if sub == "*" {
			anySub[res] = true
		}
		if res == "*" {
			anyRes[sub] = true
		}
	}
	if len(resources) > 1 && doubleWildcard {
		c.invalid(p, resources, "if '*/*' is present, must not specify other resources")
	}
	if wildcard && plain {
		c.invalid(p, resources, "if '*' is present, must not specify other resources without subresources")
	}
}

// ValidateConversionWebhook is kube's validation of a CRD's conversion
// webhook: its clientConfig (as an admission webhook's) at clientPath and
// its conversionReviewVersions at versionsPath, kube's internal field paths.
func ValidateConversionWebhook(clientConfig map[string]any, clientPath string, versions []string, versionsPath string) []api.StatusCause {
	c := &checker{}
	if clientConfig == nil {
		c.required(clientPath, "required when strategy is set to Webhook")
	} else {
		c.clientConfig(clientConfig, clientPath)
	}
	c.reviewVersions(versions, versionsPath, "")
	return c.causes
}

// clientConfig is exactly one of an https URL or a service reference, as
// kube's ValidateWebhookURL and ValidateWebhookService.
func (c *checker) clientConfig(cc map[string]any, p string) {
	u, svc := cc["url"], cc["service"]
	switch {
	case (u == nil) == (svc == nil):
		c.required(p, "exactly one of url or service is required")
	case u != nil:
		c.webhookURL(c.string(u, p+".url"), p+".url")
	default:
		c.webhookService(c.object(svc, p+".service"), p+".service")
	}
	if b := cc["caBundle"]; b != nil {
		c.string(b, p+".caBundle")
	}
}

func (c *checker) webhookURL(raw, p string) {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		c.required(p, "url must be a valid URL: "+err.Error()+form)
		return
	}
	if u.Scheme != "https" {
		c.invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+form)
	}
	if u.Host == "" {
		c.invalid(p, u.Host, "host must be specified"+form)
	}
	if u.User != nil {
		c.invalid(p, u.User.String(), "user information is not permitted in the URL")
	}
	if u.Fragment != "" {
		c.invalid(p, u.Fragment, "fragments are not permitted in the URL")
	}
	if u.RawQuery != "" {
		c.invalid(p, u.RawQuery, "query parameters are not permitted in the URL")
	}
}

func (c *checker) webhookService(svc map[string]any, p string) {
	if c.string(svc["name"], p+".name") == "" {
		c.required(p+".name", "")
	}
	if c.string(svc["namespace"], p+".namespace") == "" {
		c.required(p+".namespace", "")
	}
	if v := svc["port"]; v != nil {
		if n, ok := int32Value(v); !ok || n < 1 || n > 65535 {
			c.invalid(p+".port", v, "port is not valid: must be between 1 and 65535, inclusive")
		}
	}
	path, set := svc["path"].(string)
	if !set || path == "" || path == "/" {
		return
	}
	if path == "//" {
		c.invalid(p+".path", path, "segment[0] may not be empty")
		return
	}
	if !strings.HasPrefix(path, "/") {
		c.invalid(p+".path", path, "must start with a '/'")
	}
	for i, step := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/"), "/") {
		if step == "" {
			c.invalid(p+".path", path, fmt.Sprintf("segment[%d] may not be empty", i))
			continue
		}
		for _, msg := range DNS1123Subdomain(step) {
			c.invalid(p+".path", path, fmt.Sprintf("segment[%d]: %v", i, msg))
		}
	}
}

// matchConditions is kube's validateMatchConditions, expressions aside.
func (c *checker) matchConditions(conds []any, p string) {
	if len(conds) > maxMatchConditions {
		c.add("FieldValueTooMany", p, fmt.Sprintf("Too many: %d: must have at most %d items", len(conds), maxMatchConditions))
	}
	names := map[string]bool{}
	for i, mc := range conds {
		f := fmt.Sprintf("%s[%d]", p, i)
		m := c.object(mc, f)
		if strings.TrimSpace(c.string(m["expression"], f+".expression")) == "" {
			c.required(f+".expression", "")
		}
		name := c.string(m["name"], f+".name")
		if name == "" {
			c.required(f+".name", "")
			continue
		}
		for _, msg := range QualifiedName(name) {
			c.invalid(f+".name", name, msg)
		}
		if names[name] {
			c.add(api.CauseTypeFieldValueDuplicate, f+".name", "Duplicate value: "+badValue(name))
		}
		names[name] = true
	}
}

// reviewVersions is kube's validateAdmissionReviewVersions, and its
// validateConversionReviewVersions, which differ only in what they say of
// none (empty).
func (c *checker) reviewVersions(versions []string, p, empty string) {
	if len(versions) == 0 {
		c.required(p, empty)
		return
	}
	seen, known := map[string]bool{}, false
	for i, v := range versions {
		f := fmt.Sprintf("%s[%d]", p, i)
		if seen[v] {
			c.invalid(f, v, "duplicate version")
			continue
		}
		seen[v] = true
		if !dns1035Label(v) {
			c.invalid(f, v, dns1035Message)
		}
		known = known || contains(admissionReviewVersions, v)
	}
	if !known {
		c.invalid(p, versions, "must include at least one of "+strings.Join(admissionReviewVersions, ", "))
	}
}

func dns1035Label(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
	}
	return s[len(s)-1] != '-'
}
