package selector

import "fmt"

// Error reports a selector that was rejected. Every error returned by
// ParseLabels, ParseFields and FromLabelSelector is an *Error; its message
// names the kind of selector, quotes the input and says what was wrong, so the
// server can return it as the message of a 400 Status.
type Error struct {
	// Kind is "label" or "field".
	Kind string
	// Selector is the rejected input string; empty for a structured
	// LabelSelector.
	Selector string
	// Err says what was wrong.
	Err error
}

func (e *Error) Error() string {
	if e.Selector == "" {
		return fmt.Sprintf("invalid %s selector: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("invalid %s selector %q: %v", e.Kind, e.Selector, e.Err)
}

// Unwrap returns the underlying reason.
func (e *Error) Unwrap() error { return e.Err }
