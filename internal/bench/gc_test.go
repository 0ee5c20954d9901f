package bench

import (
	"strings"
	"testing"
)

// TestGCWatch checks that a deletion is done only once the owner and every
// dependent are, and that events out of the policy's order fail the run.
func TestGCWatch(t *testing.T) {
	event := func(typ, name string, owners ...string) gcEvent {
		var e gcEvent
		e.Type, e.Object.Metadata.Name = typ, name
		for _, uid := range owners {
			e.Object.Metadata.OwnerReferences = append(e.Object.Metadata.OwnerReferences, ownerRef{uid})
		}
		return e
	}
	for _, tt := range []struct {
		policy string
		events []gcEvent
		err    string // "" for done
	}{
		{PolicyBackground, []gcEvent{event("DELETED", "p-owner"), event("DELETED", "p-1"), event("DELETED", "p-0")}, ""},
		{PolicyBackground, []gcEvent{event("DELETED", "p-owner"), event("DELETED", "p-1"), event("MODIFIED", "p-0")}, "not done"},
		{PolicyForeground, []gcEvent{event("MODIFIED", "p-owner", "u"), event("DELETED", "p-0"), event("DELETED", "other"), event("DELETED", "p-1"), event("DELETED", "p-owner")}, ""},
		{PolicyForeground, []gcEvent{event("DELETED", "p-0"), event("DELETED", "p-owner")}, "the owner was deleted before its dependents were deleted"},
		{PolicyOrphan, []gcEvent{event("MODIFIED", "p-0"), event("MODIFIED", "p-1", "other"), event("DELETED", "p-owner")}, ""},
		{PolicyOrphan, []gcEvent{event("MODIFIED", "p-0"), event("MODIFIED", "p-1", "other", "u"), event("DELETED", "p-owner")}, "the owner was deleted before its dependents were orphaned"},
		{PolicyOrphan, []gcEvent{event("DELETED", "p-0")}, "dependent p-0 was deleted, not orphaned"},
		{PolicyBackground, []gcEvent{{Type: "ERROR"}}, "the watch failed"},
	} {
		w := newGCWatch(tt.policy, "p", 2)
		w.ownerUID = "u"
		var err error
		for _, e := range tt.events {
			if err = w.observe(e); err != nil {
				break
			}
		}
		done := w.ownerGone && len(w.pending) == 0
		switch {
		case tt.err == "" && (err != nil || !done):
			t.Errorf("%s %v: done %v, %v; want done", tt.policy, tt.events, done, err)
		case tt.err == "not done" && (err != nil || done):
			t.Errorf("%s %v: done %v, %v; want not done", tt.policy, tt.events, done, err)
		case tt.err != "" && tt.err != "not done" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%s %v: %v, want %q", tt.policy, tt.events, err, tt.err)
		}
	}
}
