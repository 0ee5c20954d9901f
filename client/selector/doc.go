// Package selector parses and matches Kubernetes label and field selectors,
// the ?labelSelector= and ?fieldSelector= of list and watch requests. The
// server uses it to filter objects and events, the client library to build
// and check the selectors it sends. It accepts exactly the strings
// Kubernetes' apimachinery accepts and matches, prints and reports exact-match
// requirements as it does; test/interop/selector proves this against
// apimachinery on generated and fuzzed inputs.
//
// # Label selectors
//
// ParseLabels reads the string syntax: comma-separated requirements, all of
// which must hold.
//
//	app=web, app==web    label app is web
//	app!=web             label app is not web, or is missing
//	tier in (a,b)        label tier is a or b
//	tier notin (a,b)     label tier is neither a nor b, or is missing
//	tier                 label tier is present
//	!tier                label tier is missing
//	replicas>3, n<10     label is an integer greater (less) than the value
//
// Keys are an optional DNS-1123 subdomain prefix of at most 253 bytes and "/",
// then a name of 1 to 63 bytes of [A-Za-z0-9._-] starting and ending with an
// alphanumeric character; values are empty or a name of at most 63 bytes.
// Spaces, tabs, CR and LF may surround tokens. "in" and "notin" are operators
// only where an operator may stand, so "in in (in)" is valid. Values after
// =, ==, != and inside parentheses may be empty: "a=" and "a in (,b)".
//
// ValidateLabelKey and ValidateLabel apply the same key and value rules to an
// object's metadata.labels (and keys of metadata.annotations).
//
// FromLabelSelector converts the structured form of API objects
// (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist) with
// the same validation as metav1.LabelSelectorAsSelector; a nil
// *LabelSelector selects nothing.
//
// # Field selectors
//
// ParseFields reads comma-separated terms key=value, key==value and
// key!=value. Values escape "\", "," and "=" with a backslash
// (EscapeFieldValue); keys are taken literally, spaces included. The caller
// supplies an object's fields as a map; a field missing from it has the value
// "", so "spec.nodeName=" matches objects without a node. Which keys exist is
// the caller's business: the server checks Fields.Keys against the keys a
// resource supports (metadata.name and metadata.namespace for most) and uses
// RequiresExactMatch("metadata.name") to serve a watch of one object cheaply.
//
// # Canonical form
//
// String writes a selector as Kubernetes does: label requirements sorted by
// key with in/notin values sorted and deduplicated, and field terms in the
// order of their source text with values escaped. ParseLabels(s.String())
// selects the same objects.
//
// # Errors
//
// Every rejected input returns an *Error that names the selector kind, quotes
// the input and says what was wrong, suitable for a 400 Status message. No
// input panics; the package is fuzzed.
//
// # Caveats
//
// These follow Kubernetes on purpose, so that clients see the same results
// from listwatch as from kube-apiserver:
//   - A NUL byte in a label selector ends it, unless it directly follows a
//     token, where it is skipped: apimachinery's lexer cannot tell NUL from
//     the end of input.
//   - The selector that selects nothing (FromLabelSelector(nil)) prints as
//     "", which parses as the selector that selects everything.
//   - A field value that needs unescaping has invalid UTF-8 replaced by
//     U+FFFD; one that does not is kept byte for byte.
//   - Field terms are ordered by their source text, so String of a parsed
//     String may order them differently; both select the same objects.
//
// Labels and Fields are immutable values, safe for concurrent use; their zero
// values select everything.
package selector
