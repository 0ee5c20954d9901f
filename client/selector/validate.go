package selector

import (
	"errors"
	"fmt"
	"strings"
)

// Limits from Kubernetes' label validation (apimachinery
// api/validate/content: IsLabelKey, IsLabelValue, IsDNS1123Subdomain).
const (
	// maxNameLen bounds a label key's name part and a label value.
	maxNameLen = 63
	// maxPrefixLen bounds a label key's prefix, a DNS-1123 subdomain.
	maxPrefixLen = 253
)

const (
	nameRule = "must consist of alphanumeric characters, '-', '_' or '.', " +
		"and must start and end with an alphanumeric character"
	subdomainRule = "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.', " +
		"with each dot-separated part starting and ending with an alphanumeric character"
)

// validateKey checks a label key: an optional DNS-1123 subdomain prefix of at
// most 253 bytes and "/", then a name of 1 to 63 bytes of [A-Za-z0-9._-]
// that starts and ends with an alphanumeric character.
func validateKey(key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	return nil
}

func checkKey(key string) error {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name = prefix
	}
	if strings.Contains(name, "/") {
		return errors.New("must be a name with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if hasPrefix {
		if err := checkPrefix(prefix); err != nil {
			return fmt.Errorf("prefix part %w", err)
		}
	}
	switch {
	case name == "":
		return errors.New("name part must be non-empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("name part must be no more than %d bytes", maxNameLen)
	case !isName(name):
		return errors.New("name part " + nameRule)
	}
	return nil
}

func checkPrefix(prefix string) error {
	switch {
	case prefix == "":
		return errors.New("must be non-empty")
	case len(prefix) > maxPrefixLen:
		return fmt.Errorf("must be no more than %d bytes", maxPrefixLen)
	case !isSubdomain(prefix):
		return errors.New(subdomainRule)
	}
	return nil
}

// validateValue checks a label value: empty, or a name of at most 63 bytes.
func validateValue(key, value string) error {
	switch {
	case len(value) > maxNameLen:
		return fmt.Errorf("value %q of key %q: must be no more than %d bytes", value, key, maxNameLen)
	case value != "" && !isName(value):
		return fmt.Errorf("value %q of key %q: must be empty or %s", value, key, strings.TrimPrefix(nameRule, "must "))
	}
	return nil
}

// isName reports whether s is non-empty, made of [A-Za-z0-9._-], and starts
// and ends with an alphanumeric character.
func isName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isSubdomain reports whether s is dot-separated parts, each non-empty, made
// of [a-z0-9-], starting and ending with [a-z0-9]. Like Kubernetes, it does
// not limit the length of a part.
func isSubdomain(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || !isLowerAlnum(part[0]) || !isLowerAlnum(part[len(part)-1]) {
			return false
		}
		for i := range len(part) {
			if c := part[i]; !isLowerAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }
