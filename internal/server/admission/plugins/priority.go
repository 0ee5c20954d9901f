package plugins

import (
	"context"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// preemptLowerPriority is the preemption policy of a pod when no class is
// the default (kube's DefaultPriorityWhenNoDefaultClassExists is 0).
const preemptLowerPriority = "PreemptLowerPriority"

// priority is kube's Priority plugin: a new pod gets the priority and
// preemption policy of its PriorityClass, else of the default class (one
// with globalDefault, the lowest if several), else 0; an update keeps
// them. A PriorityClass may be the default only if no other is.
type priority struct{ src Source }

func (p *priority) admit(ctx context.Context, a *webhook.Attributes) error {
	spec := podSpec(a)
	if spec == nil {
		return nil
	}
	if a.Operation == webhook.Update {
		// The plugin set them on create, and validation refuses changing
		// them: an update that leaves them out keeps them.
		oldSpec, _ := a.OldObject["spec"].(map[string]any)
		for _, f := range []string{"priority", "preemptionPolicy"} {
			if spec[f] == nil && oldSpec[f] != nil {
				spec[f] = oldSpec[f]
			}
		}
		return nil
	}
	if a.Operation != webhook.Create {
		return nil
	}
	name, value, policy, err := p.class(ctx, a, str(spec, "priorityClassName"))
	if err != nil {
		return err
	}
	if name == "" {
		delete(spec, "priorityClassName")
	} else {
		spec["priorityClassName"] = name
	}
	if given, ok := integer(spec, "priority"); spec["priority"] != nil && (!ok || given != value) {
		return Forbidden(a, fmt.Sprintf("the integer value of priority (%v) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", spec["priority"], value))
	}
	spec["priority"] = number(value)
	if policy != "" {
		if given := spec["preemptionPolicy"]; given != nil && given != policy {
			return Forbidden(a, fmt.Sprintf("the string value of PreemptionPolicy (%v) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", given, policy))
		}
		spec["preemptionPolicy"] = policy
	}
	return nil
}

// class resolves a pod's class name: its class's name, value and
// preemption policy, or the default class's when it names none.
func (p *priority) class(ctx context.Context, a *webhook.Attributes, name string) (string, int64, string, error) {
	if name == "" {
		def, err := p.defaultClass(ctx)
		if err != nil {
			return "", 0, "", apierror.Internal(fmt.Errorf("error occurred while retrieving default priority class: %w", err))
		}
		if def == nil {
			return "", 0, preemptLowerPriority, nil
		}
		value, _ := integer(def, "value")
		return def.Name(), value, str(def, "preemptionPolicy"), nil
	}
	pc, err := p.src.Get(ctx, PriorityClasses, "", name)
	if err != nil {
		return "", 0, "", apierror.Internal(fmt.Errorf("failed to resolve PriorityClass with name %s: %w", name, err))
	}
	if pc == nil {
		return "", 0, "", Forbidden(a, fmt.Sprintf("no PriorityClass with name %v was found", name))
	}
	value, _ := integer(pc, "value")
	return name, value, str(pc, "preemptionPolicy"), nil
}

// defaultClass is the class with globalDefault, the lowest valued if
// several were made at once; nil if none.
func (p *priority) defaultClass(ctx context.Context) (api.Object, error) {
	classes, err := p.src.List(ctx, PriorityClasses, "")
	if err != nil {
		return nil, err
	}
	var def api.Object
	var lowest int64
	for _, pc := range classes {
		if isDefault, _ := pc["globalDefault"].(bool); !isDefault {
			continue
		}
		if value, _ := integer(pc, "value"); def == nil || value < lowest {
			def, lowest = pc, value
		}
	}
	return def, nil
}

func (p *priority) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Resource.Group != PriorityClasses.Group || a.Resource.Resource != PriorityClasses.Plural || a.Subresource != "" {
		return nil
	}
	if isDefault, _ := a.Object["globalDefault"].(bool); !isDefault || a.Operation != webhook.Create && a.Operation != webhook.Update {
		return nil
	}
	def, err := p.defaultClass(ctx)
	if err != nil {
		return apierror.Internal(fmt.Errorf("failed to get default priority class: %w", err))
	}
	if def != nil && (a.Operation == webhook.Create || def.Name() != a.Object.Name()) {
		return Forbidden(a, fmt.Sprintf("PriorityClass %v is already marked as default. Only one default can exist", def.Name()))
	}
	return nil
}
