// Package webhook calls the admission webhooks of admissionregistration.k8s.io/v1
// as kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
// plugins do (k8s.io/apiserver/pkg/admission/plugin/webhook): which webhooks
// a write reaches (rules, namespaceSelector, objectSelector, matchConditions
// in CEL), the AdmissionReview v1 each is sent, and what its answer does
// (allowed, status, JSON patch, warnings, audit annotations), with kube's
// failure policies, timeouts, dry-run rules and error messages.
//
// Mutating webhooks are called one after another in the order of their
// configurations' names and of the webhooks within each, each seeing the
// object as the ones before it left it; a webhook with reinvocationPolicy
// IfNeeded is called once more when a later change, a webhook's or a
// mutating policy's, followed it (MutateChain, kube's reinvoker).
// Validating webhooks are called in parallel, and the write is refused if
// any refuses it.
//
// # Caveats
//
// A service reference is
// called at a ready endpoint of its stored EndpointSlices, as kube-apiserver
// with --enable-aggregator-routing (nothing routes a clusterIP here); a
// Service not stored, or with no EndpointSlice, is called by its DNS name
// where kube fails the call. Client credentials come from the admission
// configuration's kubeConfigFile; kube's egress selector and its
// kubernetes.default.svc loopback are not supported.
//
// # Concurrency
//
// A Dispatcher is safe for concurrent use. Every call of a webhook is
// bounded by its timeoutSeconds and by the request's context; Validate
// returns only once every goroutine it started has.
package webhook

import (
	"context"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// The operations of an admission request.
const (
	Create = "CREATE"
	Update = "UPDATE"
	Delete = "DELETE"
)

// GVK is a group, version and kind.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// GVR is a group, version and resource.
type GVR struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

// Attributes describe one write to admit, as kube's admission.Attributes.
type Attributes struct {
	Operation   string
	Kind        GVK
	Resource    GVR
	Subresource string
	Namespace   string
	Name        string
	// Object is the object to write (nil for DELETE); Mutate replaces it
	// with a webhook's patched one. OldObject is the stored one (nil on
	// CREATE).
	Object, OldObject api.Object
	// Options are the request's CreateOptions, UpdateOptions or
	// DeleteOptions, as JSON (apiVersion and kind included).
	Options api.Object
	DryRun  bool
	User    *authn.User
	// Authorizer answers the checks of the authorizer variables of
	// expressions (nil: they are unbound, and fail).
	Authorizer authz.Authorizer

	// parent is set on the view of a request through an equivalent
	// resource (matchPolicy Equivalent): the request's own attributes,
	// which get what webhooks answer; requestKind and requestResource are
	// its kind and resource; convert and back convert an object to this
	// view's form and to the request's.
	parent          *Attributes
	requestKind     *GVK
	requestResource *GVR
	convert, back   func(context.Context, api.Object) (api.Object, error)

	mu sync.Mutex // guards what webhooks answer, which parallel calls add
	// guarded by mu:
	warnings    []string
	annotations map[string]string
}

// Warnings are the warnings the webhooks called so far answered, in order.
func (a *Attributes) Warnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.warnings
}

// AuditAnnotations are the annotations the request's audit event gets: the
// webhooks' auditAnnotations ("<webhook>/<key>") and kube's own.
func (a *Attributes) AuditAnnotations() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.annotations
}

// Warn adds warnings for the response.
func (a *Attributes) Warn(w ...string) {
	if a.parent != nil {
		a.parent.Warn(w...)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.warnings = append(a.warnings, w...)
}

// Annotate adds an audit annotation; the first value of a key stays.
func (a *Attributes) Annotate(key, value string) {
	if a.parent != nil {
		a.parent.Annotate(key, value)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	if _, taken := a.annotations[key]; !taken { // as kube: the first value stays
		a.annotations[key] = value
	}
}

// Source gives the webhooks in force and the namespaces' labels, from the
// server's caches (no store read per request).
type Source interface {
	// Webhooks returns the webhooks of every configuration of one kind,
	// in kube's order: configurations by name, then as listed.
	Webhooks(ctx context.Context, mutating bool) ([]*Webhook, error)
	// NamespaceLabels returns the labels of a namespace, or an error
	// (a Status 404 when it does not exist).
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
	// Equivalents are the other resources whose objects are those of r
	// (kube's equivalent resources: a CRD's other versions, the other
	// group's Events), for webhooks with matchPolicy Equivalent.
	Equivalents(r GVR, subresource string) []Equivalent
}

// Equivalent is a resource equivalent to a request's.
type Equivalent struct {
	Resource GVR
	Kind     GVK
	// Convert turns an object of the request's resource into this one's
	// form, Back the other way; each returns a new object, or fails as a
	// CRD's conversion webhook does.
	Convert, Back func(context.Context, api.Object) (api.Object, error)
}

// As is the view of a through eq: its kind, resource and objects.
func (a *Attributes) As(ctx context.Context, eq Equivalent) (*Attributes, error) {
	v := &Attributes{
		Operation: a.Operation, Kind: eq.Kind, Resource: eq.Resource, Subresource: a.Subresource,
		Namespace: a.Namespace, Name: a.Name, Options: a.Options, DryRun: a.DryRun, User: a.User, Authorizer: a.Authorizer,
		parent: a, requestKind: &a.Kind, requestResource: &a.Resource, convert: eq.Convert, back: eq.Back,
	}
	var err error
	if a.Object != nil {
		v.Object, err = eq.Convert(ctx, a.Object)
	}
	if a.OldObject != nil && err == nil {
		v.OldObject, err = eq.Convert(ctx, a.OldObject)
	}
	return v, err
}

// Reload makes a view's object its request's as it is now (a mutation
// may have changed it since the view was made); it does nothing to a
// request's own attributes.
func (a *Attributes) Reload(ctx context.Context) error {
	if a.parent == nil || a.parent.Object == nil {
		return nil
	}
	obj, err := a.convert(ctx, a.parent.Object)
	if err == nil {
		a.Object = obj
	}
	return err
}

// Store makes a view's object, which a mutation changed, its request's,
// converted back; it does nothing to a request's own attributes.
func (a *Attributes) Store(ctx context.Context) error {
	if a.parent == nil {
		return nil
	}
	obj, err := a.back(ctx, a.Object)
	if err == nil {
		a.parent.Object = obj
	}
	return err
}

// Observer is told of each webhook call and each admission step, for
// kube's apiserver_admission_* metrics. typ is "admit" (mutating) or
// "validating"; code is the HTTP status of the call (0 when there was
// none); errorType is kube's rejection error type, "" when not rejected.
type Observer interface {
	ObserveWebhook(name, typ, operation string, seconds float64, rejected bool, code int, errorType string)
	ObserveStep(typ, operation string, seconds float64, rejected bool)
}
