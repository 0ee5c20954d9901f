package server

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/patch"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// The admission chain, at kube's points and in its plugin order: the
// mutating admission (kube's built-in plugins, MutatingAdmissionPolicies,
// then mutating webhooks, and all again if a policy or webhook changed the
// object) runs in the handler on create (after managedFields are recorded)
// and inside the update function on update, patch and apply, before the
// registry's defaulting and validation; the built-in plugins' validation,
// ValidatingAdmissionPolicies, validating webhooks, then ResourceQuota,
// run inside the registry, after its validation, just before the store
// write (registry.Admit); on delete the webhooks and policies run there, with
// the stored object as oldObject.

// anyMutating says whether a write may be mutated: there are mutating
// policies or webhooks.
func (q *request) anyMutating(ctx context.Context) bool {
	return q.s.mutatingPolicies.Any(ctx) || q.s.webhooks.Any(ctx, true)
}

// mutate runs the mutating admission on obj, about to be created (old nil)
// or to replace old, and returns the object to write.
func (q *request) mutate(obj, old api.Object) (api.Object, error) {
	if !q.pluginsHandle() && !q.anyMutating(q.r.Context()) {
		return obj, nil
	}
	op := webhook.Update
	if old == nil {
		op = webhook.Create
		// NamespaceLifecycle comes first in kube's chain: a create in a
		// namespace that does not exist is its 404, before any plugin.
		if q.res.Namespaced {
			if _, err := q.s.webhookSource.namespace(q.r.Context(), q.info.Namespace); err != nil {
				return obj, err
			}
		}
	}
	a := q.attributes(q.r.Context(), op, obj, old)
	// The built-in plugins leave managedFields as the server recorded
	// them: they need checking only if a policy or webhook changed obj.
	var external bool
	err := webhook.MutateChain(q.r.Context(), a, q.s.plugins,
		noteChange{q.s.mutatingPolicies, &external}, noteChange{q.s.webhooks, &external})
	q.passOn(a)
	if err == nil && a.Object != nil && external {
		q.keepValidManagedFields(a.Object, obj)
	}
	return a.Object, err
}

// noteChange is a Mutator that also sets *changed when it changes the
// object.
type noteChange struct {
	webhook.Mutator
	changed *bool
}

func (n noteChange) Mutate(ctx context.Context, a *webhook.Attributes, r *webhook.Reinvocation) (bool, error) {
	c, err := n.Mutator.Mutate(ctx, a, r)
	*n.changed = *n.changed || c
	return c, err
}

// invalidManagedFieldsWarning is kube's warning when mutating admission
// left managedFields that do not decode.
const invalidManagedFieldsWarning = ".metadata.managedFields was in an invalid state after admission; " +
	"this could be caused by an outdated mutating admission controller; please fix your requests: %v"

// keepValidManagedFields puts back the managedFields obj had before the
// mutating webhooks when they left out with ones that do not decode, and
// warns, as kube's managedFields admission controller: stored, they would
// break every client that decodes the object.
func (q *request) keepValidManagedFields(out, obj api.Object) {
	md := out.Metadata()
	err := patch.CheckManagedFields(md["managedFields"])
	if err == nil {
		return
	}
	if before, ok := obj.Metadata()["managedFields"]; ok {
		md["managedFields"] = before
	} else {
		delete(md, "managedFields")
	}
	q.warnings().Add(fmt.Sprintf(invalidManagedFieldsWarning, err))
}

// admitting returns ctx making the registry's writes call the built-in
// plugins' validation and the validating webhooks (and, for a delete, the
// mutating ones first, as kube), if any.
func (q *request) admitting(ctx context.Context) context.Context {
	deleting := q.info.Verb == "delete" || q.info.Verb == "deletecollection"
	// The built-in plugins validate no deletes, nor are they charged.
	plugins := q.pluginsHandle() && !deleting
	quotas := !deleting && q.res.Namespaced && q.s.mayChargeQuota(ctx, q.info.Namespace)
	if !plugins && !quotas && !q.s.webhooks.Any(ctx, false) && !q.s.policies.Any(ctx) && (!deleting || !q.s.webhooks.Any(ctx, true)) {
		return ctx
	}
	return registry.WithAdmission(ctx, q.admit)
}

// admit runs validating admission on the request's write of obj over old
// (nil on create; obj nil on delete).
func (q *request) admit(ctx context.Context, obj, old api.Object) error {
	op := webhook.Update
	switch {
	case obj == nil:
		op = webhook.Delete
	case old == nil:
		op = webhook.Create
	}
	if q.info.Subresource == resource.ScaleSubresource.Name {
		obj, old = q.scaleView(obj), q.scaleView(old)
	}
	a := q.attributes(ctx, op, obj, old)
	defer q.passOn(a)
	// Mutating policies never handle a delete (kube's plugin handles
	// CREATE, UPDATE and CONNECT): there is no object to mutate.
	if op == webhook.Delete {
		if err := webhook.MutateChain(ctx, a, q.s.webhooks); err != nil {
			return err
		}
	}
	// As kube's plugin order: the built-in plugins,
	// ValidatingAdmissionPolicy, then the webhooks.
	if err := q.s.plugins.Validate(ctx, a); err != nil {
		return err
	}
	if err := q.s.policies.Validate(ctx, a); err != nil {
		return err
	}
	if err := q.s.webhooks.Validate(ctx, a); err != nil || op == webhook.Delete {
		return err
	}
	// ResourceQuota comes last in kube's chain.
	charged, err := q.s.chargeQuota(ctx, a)
	if charged {
		q.charged++
	}
	return err
}

// attributes describe the request's write of obj over old to webhooks.
func (q *request) attributes(ctx context.Context, op string, obj, old api.Object) *webhook.Attributes {
	name := q.info.Name
	for _, o := range []api.Object{obj, old} {
		if name == "" && o != nil {
			name = o.Name()
		}
	}
	a := &webhook.Attributes{
		Operation:   op,
		Kind:        webhook.GVK{Group: q.res.Group, Version: q.res.Version, Kind: q.res.Kind},
		Resource:    webhook.GVR{Group: q.res.Group, Version: q.res.Version, Resource: q.res.Plural},
		Subresource: q.info.Subresource, Namespace: q.info.Namespace, Name: name,
		Object: obj, OldObject: old, Options: operationOptions(op, q.r.URL.Query()),
		DryRun: registry.IsDryRun(ctx),
	}
	switch q.info.Subresource {
	case "":
	case resource.ScaleSubresource.Name:
		a.Kind = webhook.GVK{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	default:
		if sub, own := q.res.Subresource(q.info.Subresource); own { // binding, eviction
			a.Kind = webhook.GVK{Group: sub.Group, Version: sub.Version, Kind: sub.Kind}
		}
	}
	if n := noteOf(q.r); n != nil {
		a.User = n.user
	}
	a.Authorizer = q.s.authorizer()
	return a
}

// operationOptions are the options of the operation kube's admission
// attributes carry (CreateOptions, UpdateOptions, DeleteOptions), from
// the request's query.
func operationOptions(op string, query url.Values) api.Object {
	kind := map[string]string{webhook.Create: "CreateOptions", webhook.Update: "UpdateOptions", webhook.Delete: "DeleteOptions"}[op]
	o := api.Object{"apiVersion": "meta.k8s.io/v1", "kind": kind}
	if dry := query["dryRun"]; len(dry) > 0 {
		o["dryRun"] = api.StringList(dry)
	}
	if op == webhook.Delete {
		return o
	}
	for _, f := range []string{"fieldManager", "fieldValidation"} {
		if v := query.Get(f); v != "" {
			o[f] = v
		}
	}
	return o
}

// passOn gives the response the webhooks' warnings and the audit event
// their annotations.
func (q *request) passOn(a *webhook.Attributes) {
	for _, m := range a.Warnings() {
		q.warnings().Add(m)
	}
	if n := noteOf(q.r); n != nil && n.audit != nil {
		for k, v := range a.AuditAnnotations() {
			n.audit.annotate(k, v)
		}
	}
}

// webhookSource gives the dispatcher the webhook configurations from
// their watch caches, read again only when one changed, and namespaces'
// labels from theirs.
type webhookSource struct {
	s *Server
	// written is, by plural, the highest revision of an admission
	// configuration or policy written through this server: a request waits
	// for that kind's cache to reach it, so that a webhook or policy is in
	// force as soon as it is created (and an idle cache is not waited on).
	written map[string]*atomic.Int64

	mu sync.Mutex
	// guarded by mu: the webhooks of each kind ([0] validating, [1]
	// mutating) and the objects' keys and revisions they were read from.
	sets [2]webhookSet
}

type webhookSet struct {
	versions []string // key@revision of each configuration
	hooks    []*webhook.Webhook
}

var _ webhook.Source = (*webhookSource)(nil)

// admissionKinds are the plurals of the admission configurations and
// policies, whose writes the webhooks and policies wait for.
var admissionKinds = []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
	"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}

func newWebhookSource(s *Server) *webhookSource {
	ws := &webhookSource{s: s, written: map[string]*atomic.Int64{}}
	for _, k := range admissionKinds {
		ws.written[k] = new(atomic.Int64)
	}
	return ws
}

// noteWritten records the revision of an object of res written through
// this server, if it is an admission configuration or policy.
func (ws *webhookSource) noteWritten(res *resource.Resource, obj api.Object) {
	written := ws.written[res.Plural]
	if res.Group != resource.AdmissionGroup || written == nil {
		return
	}
	rev, err := registry.ParseResourceVersion(obj.ResourceVersion())
	for err == nil {
		cur := written.Load()
		if rev <= cur || written.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// checkWebhookConditions makes the webhook configurations' validation
// compile their match conditions too, as kube's does (the environment is
// the dispatcher's, which the resource package cannot import).
func checkWebhookConditions(builtins []*resource.Resource) {
	for _, r := range builtins {
		if isWebhookConfigurations(r) {
			validate := r.Validate
			r.Validate = func(obj api.Object) []api.StatusCause { return append(validate(obj), webhook.ConditionCauses(obj)...) }
		}
	}
}

func isWebhookConfigurations(res *resource.Resource) bool {
	return res.Group == resource.AdmissionGroup && (res.Kind == "MutatingWebhookConfiguration" || res.Kind == "ValidatingWebhookConfiguration")
}

// Webhooks returns the webhooks of one kind, configurations in name order
// (their keys').
func (ws *webhookSource) Webhooks(ctx context.Context, mutating bool) ([]*webhook.Webhook, error) {
	plural := "validatingwebhookconfigurations"
	if mutating {
		plural = "mutatingwebhookconfigurations"
	}
	objs, err := ws.listFresh(ctx, plural)
	if err != nil {
		return nil, err
	}
	versions := make([]string, len(objs))
	for i, o := range objs {
		versions[i] = o.Key + "@" + formatRV(o.Rev)
	}
	i := 0
	if mutating {
		i = 1
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := &ws.sets[i]
	if slices.Equal(set.versions, versions) {
		return set.hooks, nil
	}
	var hooks []*webhook.Webhook
	for _, o := range objs {
		obj, err := o.Obj()
		if err != nil {
			continue // the cache logs what it cannot decode
		}
		hs, err := webhook.Parse(obj, mutating, webhookclient.Options{Resolver: serviceResolver{ws.s}, Credentials: ws.s.cfg.WebhookCredentials[i]})
		if err != nil {
			ws.s.log.Error("webhook configuration unreadable", "name", obj.Name(), "err", err)
			continue
		}
		hooks = append(hooks, hs...)
	}
	for _, h := range set.hooks {
		h.Close()
	}
	*set = webhookSet{versions: versions, hooks: hooks}
	return hooks, nil
}

// NamespaceLabels reads a namespace's labels from its cache, else from the
// store (one created a moment ago), as kube's lister and its live GET; the
// kubernetes.io/metadata.name label is there, as kube's defaulting on read
// puts it on namespaces stored before it existed.
func (ws *webhookSource) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	obj, err := ws.namespace(ctx, name)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(obj.Labels())+1)
	maps.Copy(labels, obj.Labels())
	labels[resource.MetadataNameLabel] = name
	return labels, nil
}

// namespace reads a namespace from its cache, else from the store.
func (ws *webhookSource) namespace(ctx context.Context, name string) (api.Object, error) {
	res, _ := ws.s.catalog.Get("", "v1", "namespaces")
	if c := ws.s.caches.get(res); c != nil {
		if o := c.Get(res.Key("", name)); o != nil {
			if obj, err := o.Obj(); err == nil {
				return obj, nil
			}
		}
	}
	return ws.s.registry.Get(ctx, res, "", name)
}

// Equivalents are the resources stored under the same keys as r (kube's
// equivalent resources: a CRD's other versions; core/v1 and events.k8s.io/v1
// Events), each with conversions through the stored form. A scale
// subresource's Scales have none.
func (ws *webhookSource) Equivalents(r webhook.GVR, subresource string) []webhook.Equivalent {
	res, ok := ws.s.catalog.Get(r.Group, r.Version, r.Resource)
	if !ok || subresource == resource.ScaleSubresource.Name {
		return nil
	}
	var out []webhook.Equivalent
	for _, other := range ws.s.catalog.All() {
		if other == res || other.CreateOnly || other.KeyPrefix("") != res.KeyPrefix("") {
			continue
		}
		out = append(out, webhook.Equivalent{
			Resource: webhook.GVR{Group: other.Group, Version: other.Version, Resource: other.Plural},
			Kind:     webhook.GVK{Group: other.Group, Version: other.Version, Kind: other.Kind},
			Convert:  func(ctx context.Context, o api.Object) (api.Object, error) { return convertVia(ctx, res, other, o) },
			Back:     func(ctx context.Context, o api.Object) (api.Object, error) { return convertVia(ctx, other, res, o) },
		})
	}
	return out
}

// convertVia is a new object, obj of from as to serves it, converted
// through the stored form.
func convertVia(ctx context.Context, from, to *resource.Resource, obj api.Object) (api.Object, error) {
	stored := obj.DeepCopy()
	var err error
	switch {
	case from.ToStorage != nil:
		if stored, err = from.ToStorage(ctx, stored); err != nil {
			return nil, err
		}
	case from.Storage != nil:
		stored["apiVersion"] = from.Storage.APIVersion()
	}
	if to.FromStorage != nil {
		return to.FromStorage(ctx, stored)
	}
	stored["apiVersion"] = to.APIVersion()
	return stored, nil
}
