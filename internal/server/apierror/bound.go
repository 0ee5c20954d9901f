package apierror

import (
	"context"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// The bounds on what an answer repeats of a request, kube-apiserver's for
// warnings (k8s.io/apiserver endpoints/filters/warning.go): a request's
// warnings write at most MaxWarningRunes runes, and once they would pass
// it each says at most MaxItemRunes. Status messages and causes, which kube
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

// Warnings adds a request's warnings to its response as Warning headers,
// each once, each cut to MaxItemRunes, until they hold MaxWarningRunes
// (kube cuts them only once they would pass that; ours are cut always, so
// that a few long ones do not crowd out the rest).
type Warnings struct {
	header http.Header
	seen   map[string]bool
	runes  int
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
	msg = Truncate(msg, MaxItemRunes)
	if w.runes >= MaxWarningRunes || w.seen[msg] {
		return
	}
	if w.seen == nil { // most responses have none
		w.seen = map[string]bool{}
	}
	w.seen[msg] = true
	w.runes += utf8.RuneCountInString(msg)
	w.header.Add("Warning", "299 - "+strconv.Quote(msg))
}
