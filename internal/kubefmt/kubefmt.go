// Package kubefmt holds the checks of names and string formats that
// kube's validation applies (k8s.io/apimachinery's api/validate/content and
// kube-openapi's strfmt), with kube's messages, for every part of the server
// that must answer as kube does.
package kubefmt

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The formats and messages of apimachinery's pkg/api/validate/content.
const (
	dnsLabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dnsSubdomainFmt = dnsLabelFmt + "(\\." + dnsLabelFmt + ")*"
	dns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?"
	labelKeyFmt     = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	labelValueFmt   = "(" + labelKeyFmt + ")?"
	labelKeyMsg     = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)

var (
	dnsLabelRE     = regexp.MustCompile("^" + dnsLabelFmt + "$")
	dnsSubdomainRE = regexp.MustCompile("^" + dnsSubdomainFmt + "$")
	dns1035LabelRE = regexp.MustCompile("^" + dns1035LabelFmt + "$")
	labelKeyRE     = regexp.MustCompile("^" + labelKeyFmt + "$")
	labelValueRE   = regexp.MustCompile("^" + labelValueFmt + "$")
)

// regexError is content.RegexError.
func regexError(msg, format string, examples ...string) string {
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + format + "')"
}

// Checks are apimachinery's checks of DNS names, which it has twice: in
// api/validate/content, whose messages count bytes, and in the older
// util/validation, whose messages count characters.
type Checks struct{ unit string }

var (
	// Content are api/validate/content's checks.
	Content = Checks{unit: "bytes"}
	// Util are util/validation's checks (those of object names, and of
	// the CEL format library).
	Util = Checks{unit: "characters"}
)

// maxLen is MaxLenError.
func (c Checks) maxLen(n int) string { return fmt.Sprintf("must be no more than %d %s", n, c.unit) }

// DNS1123Label is IsDNS1123Label (namespace names).
func (c Checks) DNS1123Label(s string) []string {
	var msgs []string
	if len(s) > 63 {
		msgs = append(msgs, c.maxLen(63))
	}
	if !dnsLabelRE.MatchString(s) {
		if dnsSubdomainRE.MatchString(s) {
			msgs = append(msgs, "must not contain dots")
		} else {
			msgs = append(msgs, regexError("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", dnsLabelFmt, "my-name", "123-abc"))
		}
	}
	return msgs
}

// DNS1123Subdomain is IsDNS1123Subdomain (most object names).
func (c Checks) DNS1123Subdomain(s string) []string {
	var msgs []string
	if len(s) > 253 {
		msgs = append(msgs, c.maxLen(253))
	}
	if !dnsSubdomainRE.MatchString(s) {
		msgs = append(msgs, regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", dnsSubdomainFmt, "example.com"))
	}
	return msgs
}

var wildcardDNSSubdomainRE = regexp.MustCompile(`^\*\.` + dnsSubdomainFmt + "$")

// WildcardDNS1123Subdomain is IsWildcardDNS1123Subdomain ("*.example.com").
func (c Checks) WildcardDNS1123Subdomain(s string) []string {
	var msgs []string
	if len(s) > 253 {
		msgs = append(msgs, c.maxLen(253))
	}
	if !wildcardDNSSubdomainRE.MatchString(s) {
		msgs = append(msgs, regexError("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character", `\*\.`+dnsSubdomainFmt, "*.example.com"))
	}
	return msgs
}

// PathSegmentName is content.IsPathSegmentName: a name that can be a
// segment of a URL path.
func PathSegmentName(s string) []string {
	if s == "." || s == ".." {
		return []string{"may not be '" + s + "'"}
	}
	var msgs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(s, bad) {
			msgs = append(msgs, "may not contain '"+bad+"'")
		}
	}
	return msgs
}

// DNS1035Label is IsDNS1035Label (Service names).
func (c Checks) DNS1035Label(s string) []string {
	var msgs []string
	if len(s) > 63 {
		msgs = append(msgs, c.maxLen(63))
	}
	if !dns1035LabelRE.MatchString(s) {
		msgs = append(msgs, regexError("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character", dns1035LabelFmt, "my-name", "abc-123"))
	}
	return msgs
}

// MaskTrailingDash is how apimachinery checks a generateName prefix: a
// trailing dash is allowed. Kube replaces the last two bytes by "a", so
// the checked string is one byte shorter; so do we.
func MaskTrailingDash(s string) string {
	if len(s) > 1 && strings.HasSuffix(s, "-") {
		return s[:len(s)-2] + "a"
	}
	return s
}

// LabelKey is content.IsLabelKey (IsQualifiedName): an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters.
func LabelKey(k string) []string {
	var msgs []string
	parts := strings.Split(k, "/")
	name := parts[0]
	switch len(parts) {
	case 1:
	case 2:
		name = parts[1]
		if parts[0] == "" {
			msgs = append(msgs, "prefix part must be non-empty")
			break
		}
		for _, m := range Content.DNS1123Subdomain(parts[0]) {
			msgs = append(msgs, "prefix part "+m)
		}
	default:
		return []string{"a valid label key " + regexError(labelKeyMsg, labelKeyFmt, "MyName", "my.name", "123-abc") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
	}
	if name == "" {
		msgs = append(msgs, "name part must be non-empty")
	} else if len(name) > 63 {
		msgs = append(msgs, "name part "+Content.maxLen(63))
	}
	if !labelKeyRE.MatchString(name) {
		msgs = append(msgs, "name part "+regexError(labelKeyMsg, labelKeyFmt, "MyName", "my.name", "123-abc"))
	}
	return msgs
}

// configKeyFmt is what a ConfigMap's or Secret's data key may hold.
const configKeyFmt = "[-._a-zA-Z0-9]+"

var configKeyRE = regexp.MustCompile("^" + configKeyFmt + "$")

// ConfigMapKey is util/validation's IsConfigMapKey: a key of a ConfigMap's
// or Secret's data, which kubelets make file names.
func ConfigMapKey(k string) []string {
	var msgs []string
	if len(k) > 253 {
		msgs = append(msgs, Util.maxLen(253))
	}
	if !configKeyRE.MatchString(k) {
		msgs = append(msgs, regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", configKeyFmt, "key.name", "KEY_NAME", "key-name"))
	}
	switch {
	case k == "." || k == "..":
		msgs = append(msgs, "must not be '"+k+"'")
	case strings.HasPrefix(k, ".."):
		msgs = append(msgs, "must not start with '..'")
	}
	return msgs
}

// LabelValue is content.IsLabelValue.
func LabelValue(v string) []string {
	var msgs []string
	if len(v) > 63 {
		msgs = append(msgs, Content.maxLen(63))
	}
	if !labelValueRE.MatchString(v) {
		msgs = append(msgs, regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return msgs
}

const conditionReasonFmt = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"

var conditionReasonRE = regexp.MustCompile("^" + conditionReasonFmt + "$")

// ConditionReason is metav1 validation's IsValidConditionReason, the rule
// of a metav1.Condition's reason.
func ConditionReason(s string) []string {
	if !conditionReasonRE.MatchString(s) {
		return []string{regexError("a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
			conditionReasonFmt, "my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")}
	}
	return nil
}

var percentRE = regexp.MustCompile(`^[0-9]+%$`)

// Percent is util/validation's IsValidPercent.
func Percent(s string) []string {
	if !percentRE.MatchString(s) {
		return []string{regexError("a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%")}
	}
	return nil
}

// The patterns of kube-openapi's strfmt registry.
const (
	// UUIDPattern is strfmt's uuid.
	UUIDPattern = `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`
	// DateTimePattern is strfmt's pattern of a date-time's time part.
	DateTimePattern = `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$`
	base64Pattern   = `^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`
)

var (
	uuidRE     = regexp.MustCompile(UUIDPattern)
	dateTimeRE = regexp.MustCompile(DateTimePattern)
	base64RE   = regexp.MustCompile(base64Pattern)
)

// IsUUID is strfmt's uuid check.
func IsUUID(s string) bool { return uuidRE.MatchString(s) }

// IsBase64 is strfmt's byte check (govalidator's IsBase64): padded
// standard base64 of at least one byte.
func IsBase64(s string) bool { return base64RE.MatchString(s) }

// IsDate is strfmt's date check: RFC 3339's full-date.
func IsDate(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// IsDateTime is strfmt's datetime check: a date, "t" in any case, and a
// time whose fields are compared as text.
func IsDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	parts := strings.Split(strings.ToLower(s), "t")
	if len(parts) < 2 || !IsDate(parts[0]) {
		return false
	}
	m := dateTimeRE.FindStringSubmatch(parts[1])
	return m != nil && m[1] <= "23" && m[2] <= "59" && m[3] <= "59"
}
