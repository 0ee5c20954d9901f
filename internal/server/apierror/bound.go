package apierror

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The bounds on what an answer repeats of a request, kube-apiserver's for
// warnings (k8s.io/apiserver endpoints/filters/warning.go): a request's
// warnings write at most MaxWarningRunes runes whole, and once they would
// pass it each says at most MaxItemRunes (see Warnings). Status messages and causes, which kube
// does not bound, take the same figures: a message at most MaxWarningRunes,
// an item of user input in it (a name, a field path) at most MaxItemRunes,
// and at most MaxCauses causes, each at most MaxCauseRunes.
const (
	MaxWarningRunes = 4 * 1024
	MaxItemRunes    = 256
	MaxCauses       = 100

	MaxCauseRunes = 4 * MaxItemRunes // a cause's message, which may quote a value
)

// Truncate returns s cut to at most n runes, "..." marking a cut.
func Truncate(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i, runes := 0, 0
	for i = range s {
		if runes == n {
			break
		}
		runes++
	}
	return s[:i] + "..."
}

// Quote is strconv.Quote of s truncated to MaxItemRunes: user input as a
// message names it.
func Quote(s string) string { return strconv.Quote(Truncate(s, MaxItemRunes)) }

// Warnings adds a request's warnings to its response as Warning headers
// by kube-apiserver's rules (endpoints/filters/warning.go): each text
// once; while they hold at most MaxWarningRunes, each whole; once one
// would pass that, every warning so far is written again cut to
// MaxItemRunes (no marker), and the later ones cut so, until they hold
// MaxWarningRunes. A text a header cannot carry (not UTF-8, or with
// control characters) is left out, as kube's NewWarningHeader refuses it.
type Warnings struct {
	header     http.Header
	seen       map[string]bool
	added      []string // every text, in order, for writing them again cut
	runes      int      // of the texts written
	truncating bool
}

// NewWarnings returns the warnings of a response with header h.
func NewWarnings(h http.Header) *Warnings { return &Warnings{header: h} }

type warningsKey struct{}

// WithWarnings returns ctx carrying a request's warnings, so that the code
// serving it can add to them (as kube's warning.AddWarning).
func WithWarnings(ctx context.Context, w *Warnings) context.Context {
	return context.WithValue(ctx, warningsKey{}, w)
}

// Warn adds msg to the warnings ctx carries, if any.
func Warn(ctx context.Context, msg string) {
	if w, ok := ctx.Value(warningsKey{}).(*Warnings); ok {
		w.Add(msg)
	}
}

// Add adds one warning.
func (w *Warnings) Add(msg string) {
	if msg == "" || w.truncating && w.runes >= MaxWarningRunes || w.seen[msg] {
		return
	}
	if w.seen == nil { // most responses have none
		w.seen = map[string]bool{}
	}
	w.seen[msg] = true
	w.added = append(w.added, msg)
	if w.truncating {
		w.write(cutRunes(msg, MaxItemRunes))
		return
	}
	if !headerText(msg) {
		return
	}
	if w.runes+utf8.RuneCountInString(msg) <= MaxWarningRunes {
		w.write(msg)
		return
	}
	w.truncating, w.runes = true, 0
	w.header.Del("Warning")
	for _, m := range w.added {
		w.write(cutRunes(m, MaxItemRunes))
	}
}

// write adds text as a Warning header, if a header can carry it.
func (w *Warnings) write(text string) {
	if !headerText(text) {
		return
	}
	w.runes += utf8.RuneCountInString(text)
	w.header.Add("Warning", "299 - "+quoteWarning(text))
}

// cutRunes is kube's cut of a warning: its first n runes, invalid bytes
// becoming U+FFFD as Go's []rune makes them.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// headerText reports whether kube's NewWarningHeader takes text.
func headerText(text string) bool {
	return utf8.ValidString(text) && !strings.ContainsFunc(text, unicode.IsControl)
}

// quoteWarning is RFC 7230's quoted-string as kube writes it: only '"'
// and '\' escaped.
func quoteWarning(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2)
	b.WriteByte('"')
	for _, r := range text {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}
