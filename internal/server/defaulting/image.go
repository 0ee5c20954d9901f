package defaulting

import (
	"regexp"
	"strings"
)

// pullPolicy is the image pull policy kube defaults for an image reference
// (SetDefaults_Container, SetDefaults_Volume): Always for the tag "latest",
// written or implied by a reference with neither tag nor digest, and
// IfNotPresent otherwise, a reference kube cannot parse included.
func pullPolicy(image string) string {
	if tag, ok := imageTag(image); ok && tag == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}

// The grammar of distribution/reference v0.6.0 (regexp.go), which kube's
// parsers.ParseImageName uses.
const (
	refAlnum      = `[a-z0-9]+`
	refSeparator  = `(?:[._]|__|[-]+)`
	refDomainPart = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refHost       = `(?:` + refDomainPart + `(?:\.` + refDomainPart + `)*|\[(?:[a-fA-F0-9:]+)\])`
	refDomain     = refHost + `(?::[0-9]+)?`
	refPathPart   = refAlnum + `(?:` + refSeparator + refAlnum + `)*`
	refRemote     = refPathPart + `(?:/` + refPathPart + `)*`
	refTag        = `[\w][\w.-]{0,127}`
	refDigest     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
)

var (
	referenceRE  = regexp.MustCompile(`^((?:` + refDomain + `/)?` + refRemote + `)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`)
	nameRE       = regexp.MustCompile(`^(?:(` + refDomain + `)/)?(` + refRemote + `)$`)
	identifierRE = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// digestHex holds the algorithms go-digest v1.0.0 accepts and their
	// encodings: lowercase hex of the hash's size.
	digestHex = map[string]*regexp.Regexp{
		"sha256": regexp.MustCompile(`^[a-f0-9]{64}$`),
		"sha384": regexp.MustCompile(`^[a-f0-9]{96}$`),
		"sha512": regexp.MustCompile(`^[a-f0-9]{128}$`),
	}
)

// imageTag is the tag kube's ParseImageName finds ("latest" when a reference
// has neither tag nor digest); ok is false when it rejects the reference.
func imageTag(s string) (tag string, ok bool) {
	if identifierRE.MatchString(s) {
		return "", false
	}
	// (ParseNormalizedNamed's check that the repository is lowercase is
	// the regular expression's too.)
	domain, rest := splitDockerDomain(s)
	m := referenceRE.FindStringSubmatch(domain + "/" + rest)
	if m == nil {
		return "", false
	}
	// The repository path, the name less its registry, has 255 bytes at
	// most; only a name longer than that needs splitting.
	if len(m[1]) > 255 {
		if name := nameRE.FindStringSubmatch(m[1]); name == nil || len(name[2]) > 255 {
			return "", false
		}
	}
	tag, digest := m[2], m[3]
	if digest != "" {
		alg, hex, _ := strings.Cut(digest, ":")
		if re := digestHex[alg]; re == nil || !re.MatchString(hex) {
			return "", false
		}
	}
	if tag == "" && digest == "" {
		tag = "latest"
	}
	return tag, true
}

// splitDockerDomain is distribution/reference's: a first path element is a
// registry when it is localhost or has a dot, a colon or an uppercase
// letter; Docker Hub names get their "library/" prefix.
func splitDockerDomain(name string) (domain, remote string) {
	first, rest, ok := strings.Cut(name, "/")
	switch {
	case !ok:
		return "docker.io", "library/" + name
	case first == "localhost":
		domain, remote = first, rest
	case first == "index.docker.io":
		domain, remote = "docker.io", rest
	case strings.ContainsAny(first, ".:"), strings.ToLower(first) != first:
		domain, remote = first, rest
	default:
		domain, remote = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(remote, "/") {
		remote = "library/" + remote
	}
	return domain, remote
}
