package webhook

import (
	"context"
	"reflect"

	"github.com/listwatch/listwatch/client/api"
)

// Reinvocation is what one mutating admission plugin (the mutating
// policies, or the mutating webhooks) keeps across the two rounds of a
// write's mutation, as kube's reinvocation context: kube's chain runs
// every mutating plugin once, and, if one changed the object, once more;
// in that second round a plugin calls again only those of its hooks with
// reinvocationPolicy IfNeeded that ran before a change, its own or
// another plugin's.
type Reinvocation struct {
	// Round is 0, then 1 in the second round.
	Round int

	last     api.Object      // the object as the plugin last left it
	invoked  map[string]bool // IfNeeded hooks called since the last change
	reinvoke map[string]bool // hooks to call again in round 1
}

// Begin starts the plugin's round on obj: one changed by another plugin
// since this one last ran has its IfNeeded hooks called again.
func (r *Reinvocation) Begin(obj api.Object) {
	if r.Round == 1 && !reflect.DeepEqual(r.last, obj) {
		r.changed()
	}
}

// Skip says whether the hook of key is not to be called in this round.
func (r *Reinvocation) Skip(key string) bool { return r.Round == 1 && !r.reinvoke[key] }

// Ran records a call of the hook of key: whether it changed the object,
// and whether it is to be called again after a later change (IfNeeded).
func (r *Reinvocation) Ran(key string, changed, ifNeeded bool) {
	if changed {
		r.changed()
	}
	if ifNeeded {
		if r.invoked == nil {
			r.invoked = map[string]bool{}
		}
		r.invoked[key] = true
	}
}

// End ends the plugin's round, which left obj.
func (r *Reinvocation) End(obj api.Object) { r.last = obj }

func (r *Reinvocation) changed() {
	if r.reinvoke == nil {
		r.reinvoke = map[string]bool{}
	}
	for k := range r.invoked {
		r.reinvoke[k] = true
	}
	clear(r.invoked)
}

// Mutator is a mutating admission plugin, called for one round.
type Mutator interface {
	Mutate(ctx context.Context, a *Attributes, r *Reinvocation) (changed bool, err error)
}

// MutateChain runs kube's mutating admission chain on a: each plugin in
// order, then, if one changed the object, each once more (kube's
// reinvoker). It returns the first refusal or failure.
func MutateChain(ctx context.Context, a *Attributes, plugins ...Mutator) error {
	rounds := make([]Reinvocation, len(plugins))
	for round := range 2 {
		changed := false
		for i, p := range plugins {
			rounds[i].Round = round
			c, err := p.Mutate(ctx, a, &rounds[i])
			if err != nil {
				return err
			}
			changed = changed || c
		}
		if !changed {
			break
		}
	}
	return nil
}
