package crd

import (
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/internal/kubefmt"
)

// Patterns of kube-openapi's strfmt registry, the formats kube checks.
var (
	hostnameFormat  = regexp.MustCompile(`^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$`)
	uuid3Format     = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	uuid4Format     = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`)
	uuid5Format     = regexp.MustCompile(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`)
	hexcolorFormat  = regexp.MustCompile(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	rgbcolorFormat  = regexp.MustCompile(`^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$`)
	ssnFormat       = regexp.MustCompile(`^\d{3}[- ]?\d{2}[- ]?\d{4}$`)
	bsonFormat      = regexp.MustCompile(`^[0-9a-fA-F]{24}$`)
	shortNameFormat = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	longNameFormat  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// stringFormats are the string formats kube checks, by their name without
// dashes as kube normalizes it ("date-time" is "datetime"). Formats kube
// does not support are accepted, as kube strips them from the schema.
var stringFormats = map[string]func(string) bool{
	"datetime":     kubefmt.IsDateTime,
	"date":         kubefmt.IsDate,
	"duration":     isDuration,
	"password":     func(string) bool { return true },
	"byte":         kubefmt.IsBase64,
	"uri":          func(s string) bool { _, err := url.ParseRequestURI(s); return err == nil },
	"email":        func(s string) bool { a, err := mail.ParseAddress(s); return err == nil && a.Address != "" },
	"hostname":     isHostname,
	"ipv4":         func(s string) bool { return strings.Contains(s, ".") && parseIPSloppy(s) },
	"ipv6":         func(s string) bool { return strings.Contains(s, ":") && net.ParseIP(s) != nil },
	"cidr":         isCIDR,
	"mac":          func(s string) bool { _, err := net.ParseMAC(s); return err == nil },
	"uuid":         kubefmt.IsUUID,
	"isbn":         func(s string) bool { return isISBN10(s) || isISBN13(s) },
	"isbn10":       isISBN10,
	"isbn13":       isISBN13,
	"creditcard":   isCreditCard,
	"uuid3":        uuid3Format.MatchString,
	"uuid4":        uuid4Format.MatchString,
	"uuid5":        uuid5Format.MatchString,
	"hexcolor":     hexcolorFormat.MatchString,
	"rgbcolor":     rgbcolorFormat.MatchString,
	"ssn":          func(s string) bool { return len(s) == 11 && ssnFormat.MatchString(s) },
	"bsonobjectid": bsonFormat.MatchString,
	"k8sshortname": func(s string) bool { return len(s) <= 63 && shortNameFormat.MatchString(s) },
	"k8slongname":  func(s string) bool { return len(s) <= 253 && longNameFormat.MatchString(s) },
}

// formatCheck returns the check of a string format, or nil.
func formatCheck(format string) func(string) bool {
	return stringFormats[strings.ReplaceAll(format, "-", "")]
}

var (
	isbn10Format   = regexp.MustCompile(`^(?:[0-9]{9}X|[0-9]{10})$`)
	isbn13Format   = regexp.MustCompile(`^(?:[0-9]{13})$`)
	isbnSeparators = regexp.MustCompile(`[\s-]+`)
	creditCard     = regexp.MustCompile(`^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$`)
	notDigits      = regexp.MustCompile(`[^0-9]+`)
)

// durationUnits are the unit words strfmt's ParseDuration knows, in groups:
// a unit is one of a group's words, or begins with its last.
var (
	durationUnits = [][]string{{"ns", "nano"}, {"us", "µs", "micro"}, {"ms", "milli"}, {"s", "sec"}, {"m", "min"}, {"h", "hr", "hour"}, {"d", "day"}, {"w", "wk", "week"}}
	durationTerm  = regexp.MustCompile(`((\d+)\s*([A-Za-zµ]+))`)
)

// isDuration is strfmt's IsDuration: Go's time.ParseDuration, or a
// Scala-like duration, "3 days 4h", where some number is followed by a
// unit it knows and every number fits an int.
func isDuration(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	ok := false
	for _, m := range durationTerm.FindAllStringSubmatch(s, -1) {
		if _, err := strconv.Atoi(m[2]); err != nil {
			return false
		}
		unit := strings.ToLower(strings.TrimSpace(m[3]))
		for _, words := range durationUnits {
			for i, w := range words {
				if strings.EqualFold(w, unit) || i == len(words)-1 && strings.HasPrefix(unit, w) {
					ok = true
				}
			}
		}
	}
	return ok
}

// isHostname is strfmt's IsHostname: its pattern, at most 255 bytes, and
// labels of at most 63.
func isHostname(s string) bool {
	if len(s) > 255 || !hostnameFormat.MatchString(s) {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if len(l) > 63 {
			return false
		}
	}
	return true
}

// parseIPSloppy accepts what k8s.io/utils/net's ParseIPSloppy does: an
// IPv6 address, or dotted IPv4 whose octets may have leading zeros.
func parseIPSloppy(s string) bool {
	if strings.Contains(s, ":") {
		return net.ParseIP(s) != nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n > 255 {
			return false
		}
	}
	return true
}

// isCIDR is ParseCIDRSloppy's acceptance: an address, sloppy for IPv4, and
// a prefix length that fits it.
func isCIDR(s string) bool {
	addr, bits, ok := strings.Cut(s, "/")
	if !ok || !parseIPSloppy(addr) {
		return false
	}
	n, err := strconv.ParseUint(bits, 10, 8)
	if err != nil {
		return false
	}
	if strings.Contains(addr, ":") {
		return n <= 128
	}
	return n <= 32
}

// isbnDigits is s without spaces and dashes, and whether it matches format.
func isbnDigits(s string, format *regexp.Regexp) (string, bool) {
	s = isbnSeparators.ReplaceAllString(s, "")
	return s, format.MatchString(s)
}

// isISBN10 is govalidator's IsISBN10: ten digits (the last may be X),
// spaces and dashes aside, with the mod-11 checksum.
func isISBN10(s string) bool {
	s, ok := isbnDigits(s, isbn10Format)
	if !ok {
		return false
	}
	sum := 0
	for i := range 9 {
		sum += (i + 1) * int(s[i]-'0')
	}
	if s[9] == 'X' {
		sum += 100
	} else {
		sum += 10 * int(s[9]-'0')
	}
	return sum%11 == 0
}

// isISBN13 is govalidator's IsISBN13: thirteen digits, spaces and dashes
// aside, with the 1-3 weighted checksum.
func isISBN13(s string) bool {
	s, ok := isbnDigits(s, isbn13Format)
	if !ok {
		return false
	}
	sum := 0
	for i := range 12 {
		sum += (1 + 2*(i%2)) * int(s[i]-'0')
	}
	return int(s[12]-'0') == (10-sum%10)%10
}

// isCreditCard is govalidator's IsCreditCard: the digits of s (anything
// else dropped) are a known issuer's number and pass the Luhn check.
func isCreditCard(s string) bool {
	s = notDigits.ReplaceAllString(s, "")
	if !creditCard.MatchString(s) {
		return false
	}
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		d := int(s[i] - '0')
		if double {
			d *= 2
			if d >= 10 {
				d = d%10 + 1
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}
