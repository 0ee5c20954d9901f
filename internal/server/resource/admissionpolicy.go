package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// admissionPolicies are admissionregistration.k8s.io/v1's
// ValidatingAdmissionPolicy (with its status subresource and generation)
// and ValidatingAdmissionPolicyBinding, cluster-scoped, defaulted as kube's
// v1 defaults.go and validated as kube's
// pkg/apis/admissionregistration/validation, CEL expressions aside (the
// server compiles them: the environment is the admission package's).
func admissionPolicies() []*Resource {
	return []*Resource{
		{
			Group: AdmissionGroup, Version: "v1", Plural: "validatingadmissionpolicies",
			Validate: validatePolicy,
			Columns: []Column{
				column("Validations", "integer", "", "Validations indicates the number of validation rules defined in this configuration", func(o api.Object) any {
					l, _ := specOf(o)["validations"].([]any)
					return len(l)
				}),
				paramKindColumn,
				ageColumn(),
			},
		},
		{
			Group: AdmissionGroup, Version: "v1", Plural: "validatingadmissionpolicybindings",
			Validate: validatePolicyBinding,
			Columns: []Column{
				policyNameColumn,
				paramRefColumn,
				ageColumn(),
			},
		},
	}
}

// The columns kube's printers show for both kinds of policy and binding.
var (
	policyNameColumn = column("PolicyName", "string", "", "PolicyName indicates the policy definition which the policy binding binded to", stringCell("spec", "policyName"))
	paramKindColumn  = column("ParamKind", "string", "", "ParamKind specifies the kind of resources used to parameterize this policy", func(o api.Object) any {
		pk, _ := specOf(o)["paramKind"].(map[string]any)
		if pk == nil {
			return "<unset>"
		}
		return fmt.Sprintf("%v/%v", pk["apiVersion"], pk["kind"])
	})
	paramRefColumn = column("ParamRef", "string", "", "ParamRef indicates the param resource which sets the configuration param", func(o api.Object) any {
		pr, _ := specOf(o)["paramRef"].(map[string]any)
		if pr == nil {
			return "<unset>"
		}
		name, _ := pr["name"].(string)
		ns, _ := pr["namespace"].(string)
		switch {
		case name != "" && ns != "":
			return ns + "/" + name
		case name != "":
			return "*/" + name // as kube: the param's scope is not known here
		case pr["selector"] != nil:
			return selectorString(pr["selector"])
		}
		return "<unset>"
	})
)

// selectorString is a LabelSelector as kube's printer shows it: the Go
// type's generated String(), labels sorted by key.
func selectorString(v any) string {
	m := asMap(v)
	var b strings.Builder
	b.WriteString("&LabelSelector{MatchLabels:map[string]string{")
	labels := asMap(m["matchLabels"])
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + ": " + str(labels[k]) + ",")
	}
	b.WriteString("},MatchExpressions:[]LabelSelectorRequirement{")
	exprs, _ := m["matchExpressions"].([]any)
	for _, e := range exprs {
		em := asMap(e)
		b.WriteString("LabelSelectorRequirement{Key:" + str(em["key"]) + ",Operator:" + str(em["operator"]) + ",Values:[" + strings.Join(strings2(em["values"]), " ") + "],},")
	}
	b.WriteString("},}")
	return b.String()
}

func specOf(o api.Object) map[string]any {
	spec, _ := o["spec"].(map[string]any)
	return spec
}

// The values kube's validation supports.
var (
	validationActions       = []string{"Audit", "Deny", "Warn"}
	parameterNotFoundAction = []string{"Deny", "Allow"}
	policyReasons           = []string{"Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"}
)

// maxAuditAnnotations is kube's limit on a policy's auditAnnotations.
const maxAuditAnnotations = 20

// validatePolicy is kube's validateValidatingAdmissionPolicySpec without
// the compilation of expressions.
func validatePolicy(obj api.Object) []api.StatusCause {
	c := &checker{}
	spec := c.policySpec(obj)
	validations := c.list(spec["validations"], "spec.validations")
	annotations := c.list(spec["auditAnnotations"], "spec.auditAnnotations")
	if len(validations) == 0 && len(annotations) == 0 {
		c.required("spec.validations", "validations or auditAnnotations must contain at least one item")
		c.required("spec.auditAnnotations", "validations or auditAnnotations must contain at least one item")
		return c.causes
	}
	for i, v := range validations {
		c.validation(c.object(v, fmt.Sprintf("spec.validations[%d]", i)), fmt.Sprintf("spec.validations[%d]", i))
	}
	if len(annotations) > maxAuditAnnotations {
		c.invalid("spec.auditAnnotations", annotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations))
	}
	keys := map[string]bool{}
	for i, a := range annotations {
		p := fmt.Sprintf("spec.auditAnnotations[%d]", i)
		m := c.object(a, p)
		key := c.string(m["key"], p+".key")
		for _, msg := range QualifiedName(obj.Name() + "/" + key) {
			c.invalid(p+".key", obj.Name()+"/"+key, msg)
		}
		if strings.TrimSpace(c.string(m["valueExpression"], p+".valueExpression")) == "" {
			c.required(p+".valueExpression", "valueExpression is not specified")
		}
		if keys[key] {
			c.add(api.CauseTypeFieldValueDuplicate, p+".key", "Duplicate value: "+badValue(key))
		}
		keys[key] = true
	}
	return c.causes
}

// policySpec checks what the specs of both kinds of policy share: their
// failurePolicy, paramKind, matchConstraints, matchConditions and
// variables, and returns the spec.
func (c *checker) policySpec(obj api.Object) map[string]any {
	spec := c.object(obj["spec"], "spec")
	if spec["failurePolicy"] == nil {
		c.required("spec.failurePolicy", "")
	} else {
		c.oneOf(spec, "failurePolicy", "spec", failurePolicies)
	}
	if pk := spec["paramKind"]; pk != nil {
		c.paramKind(c.object(pk, "spec.paramKind"), "spec.paramKind")
	}
	if mc := spec["matchConstraints"]; mc == nil {
		c.required("spec.matchConstraints", "")
	} else {
		m := c.object(mc, "spec.matchConstraints")
		c.matchResources(m, "spec.matchConstraints")
		if len(c.list(m["resourceRules"], "spec.matchConstraints.resourceRules")) == 0 {
			c.required("spec.matchConstraints.resourceRules", "")
		}
	}
	c.matchConditions(c.list(spec["matchConditions"], "spec.matchConditions"), "spec.matchConditions")
	for i, v := range c.list(spec["variables"], "spec.variables") {
		p := fmt.Sprintf("spec.variables[%d]", i)
		m := c.object(v, p)
		if name := c.string(m["name"], p+".name"); strings.TrimSpace(name) == "" {
			c.required(p+".name", "name is not specified")
		} else if !celIdentifier(name) {
			c.invalid(p+".name", name, "must be a valid CEL identifier")
		}
		if strings.TrimSpace(c.string(m["expression"], p+".expression")) == "" {
			c.required(p+".expression", "expression is not specified")
		}
	}
	return spec
}

// validation is kube's validateValidation, expressions not compiled.
func (c *checker) validation(v map[string]any, p string) {
	if strings.TrimSpace(c.string(v["expression"], p+".expression")) == "" {
		c.required(p+".expression", "expression is not specified")
	}
	if me := c.string(v["messageExpression"], p+".messageExpression"); me != "" && strings.TrimSpace(me) == "" {
		c.invalid(p+".messageExpression", me, "must be non-empty if specified")
	}
	msg := c.string(v["message"], p+".message")
	switch {
	case msg != "" && strings.TrimSpace(msg) == "":
		c.invalid(p+".message", msg, "must be non-empty if specified")
	case strings.ContainsAny(strings.TrimSpace(msg), "\r\n"):
		c.invalid(p+".message", msg, "must not contain line breaks")
	}
	c.oneOf(v, "reason", p, policyReasons)
}

// paramKind is kube's validateParamKind.
func (c *checker) paramKind(pk map[string]any, p string) {
	av := c.string(pk["apiVersion"], p+".apiVersion")
	switch group, version, _ := strings.Cut(av, "/"); {
	case av == "":
		c.required(p+".apiVersion", "")
	case strings.Count(av, "/") > 1:
		c.invalid(p+".apiVersion", av, "unexpected GroupVersion string: "+av)
	default:
		if !strings.Contains(av, "/") {
			group, version = "", av
		}
		if group != "" {
			if msgs := DNS1123Subdomain(group); len(msgs) > 0 {
				c.invalid(p+".apiVersion", group, strings.Join(msgs, ","))
			}
		}
		if version == "" {
			c.invalid(p+".apiVersion", av, "version must be specified")
		} else if !dns1035Label(version) {
			c.invalid(p+".apiVersion", version, dns1035Message)
		}
	}
	if kind := c.string(pk["kind"], p+".kind"); kind == "" {
		c.required(p+".kind", "")
	} else if !dns1035Label(strings.ToLower(kind)) {
		c.invalid(p+".kind", kind, "may have mixed case, but should otherwise match: "+dns1035Message)
	}
}

// matchResources is kube's validateMatchResources.
func (c *checker) matchResources(mr map[string]any, p string) {
	if mr == nil {
		return
	}
	if mr["matchPolicy"] == nil {
		c.required(p+".matchPolicy", "")
	} else {
		c.oneOf(mr, "matchPolicy", p, matchPolicies)
	}
	for _, f := range []string{"namespaceSelector", "objectSelector"} {
		if mr[f] == nil {
			c.required(p+"."+f, "")
		} else {
			c.validSelector(c.readSelector(mr[f], p+"."+f), p+"."+f)
		}
	}
	for _, f := range []string{"resourceRules", "excludeResourceRules"} {
		for i, r := range c.list(mr[f], p+"."+f) {
			rp := fmt.Sprintf("%s.%s[%d]", p, f, i)
			rule := c.object(r, rp)
			names := map[string]bool{}
			for j, n := range c.strings(rule["resourceNames"], rp+".resourceNames") {
				np := fmt.Sprintf("%s.resourceNames[%d]", rp, j)
				for _, msg := range pathSegmentName(n) {
					c.invalid(np, n, msg)
				}
				if names[n] {
					c.add(api.CauseTypeFieldValueDuplicate, np, "Duplicate value: "+badValue(n))
				}
				names[n] = true
			}
			c.webhookRule(rule, rp)
		}
	}
}

// validatePolicyBinding is kube's validateValidatingAdmissionPolicyBindingSpec.
func validatePolicyBinding(obj api.Object) []api.StatusCause {
	c := &checker{}
	spec := c.bindingSpec(obj)
	actions := c.strings(spec["validationActions"], "spec.validationActions")
	seen := map[string]bool{}
	for i, a := range actions {
		f := fmt.Sprintf("spec.validationActions[%d]", i)
		if !contains(validationActions, a) {
			c.notSupported(f, a, validationActions...)
		}
		if seen[a] {
			c.add(api.CauseTypeFieldValueDuplicate, f, "Duplicate value: "+badValue(a))
		}
		seen[a] = true
	}
	if seen["Deny"] && seen["Warn"] {
		c.invalid("spec.validationActions", actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)")
	}
	if len(seen) == 0 {
		c.required("spec.validationActions", "at least one validation action is required")
	}
	return c.causes
}

// bindingSpec checks what the specs of both kinds of binding share: their
// policyName, paramRef and matchResources, and returns the spec.
func (c *checker) bindingSpec(obj api.Object) map[string]any {
	spec := c.object(obj["spec"], "spec")
	if name := c.string(spec["policyName"], "spec.policyName"); name == "" {
		c.required("spec.policyName", "")
	} else {
		for _, msg := range DNS1123Subdomain(name) {
			c.invalid("spec.policyName", name, msg)
		}
	}
	if pr := spec["paramRef"]; pr != nil {
		c.paramRef(c.object(pr, "spec.paramRef"), "spec.paramRef")
	}
	if mr := spec["matchResources"]; mr != nil {
		c.matchResources(c.object(mr, "spec.matchResources"), "spec.matchResources")
	}
	return spec
}

// paramRef is kube's validateParamRef.
func (c *checker) paramRef(pr map[string]any, p string) {
	name := c.string(pr["name"], p+".name")
	sel := pr["selector"]
	if name != "" {
		for _, msg := range pathSegmentName(name) {
			c.invalid(p+".name", name, msg)
		}
		if sel != nil {
			c.add(api.CauseTypeFieldValueForbidden, p+".name", "Forbidden: name and selector are mutually exclusive")
		}
	}
	if sel != nil {
		c.validSelector(c.readSelector(sel, p+".selector"), p+".selector")
		if name != "" {
			c.add(api.CauseTypeFieldValueForbidden, p+".selector", "Forbidden: name and selector are mutually exclusive")
		}
	}
	if name == "" && sel == nil {
		c.required(p, "one of name or selector must be specified")
	}
	if a := c.string(pr["parameterNotFoundAction"], p+".parameterNotFoundAction"); a == "" {
		c.required(p+".parameterNotFoundAction", "")
	} else if !contains(parameterNotFoundAction, a) {
		c.notSupported(p+".parameterNotFoundAction", a, parameterNotFoundAction...)
	}
}

const dns1035Message = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

// pathSegmentName is apimachinery's IsPathSegmentName.
func pathSegmentName(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var msgs []string
	for _, illegal := range []string{"/", "%"} {
		if strings.Contains(name, illegal) {
			msgs = append(msgs, fmt.Sprintf(`may not contain '%s'`, illegal))
		}
	}
	return msgs
}

// celIdentifier is kube's isCELIdentifier: [a-zA-Z_][a-zA-Z0-9_]*, not a
// reserved word.
func celIdentifier(name string) bool {
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	switch name {
	case "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
		"import", "let", "loop", "package", "namespace", "return", "var", "void", "while":
		return false
	}
	return name != ""
}
