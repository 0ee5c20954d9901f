package authz

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
)

type failingResolver struct{ rules []Rule }

func (f failingResolver) RulesFor(context.Context, *authn.User, string) ([]Rule, error) {
	return f.rules, errors.New("partly read")
}

// TestUnionRules: a union lists every resolver's rules, in order, and the
// errors of those that failed (the rules are then incomplete).
func TestUnionRules(t *testing.T) {
	partial := Rule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	got, err := UnionRules{failingResolver{[]Rule{partial}}, AlwaysAllow{}}.RulesFor(t.Context(), &authn.User{Name: "alice"}, "default")
	all, _ := AlwaysAllow{}.RulesFor(t.Context(), nil, "")
	if diff := cmp.Diff(append([]Rule{partial}, all...), got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if err == nil {
		t.Error("no error from a failing resolver")
	}
}
