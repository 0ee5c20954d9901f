package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// request is admission.k8s.io/v1 AdmissionRequest, with its JSON names.
type request struct {
	UID                string   `json:"uid"`
	Kind               GVK      `json:"kind"`
	Resource           GVR      `json:"resource"`
	SubResource        string   `json:"subResource,omitempty"`
	RequestKind        *GVK     `json:"requestKind,omitempty"`
	RequestResource    *GVR     `json:"requestResource,omitempty"`
	RequestSubResource string   `json:"requestSubResource,omitempty"`
	Name               string   `json:"name,omitempty"`
	Namespace          string   `json:"namespace,omitempty"`
	Operation          string   `json:"operation"`
	UserInfo           userInfo `json:"userInfo"`
	// Object, OldObject and Options are null when absent, as kube's
	// RawExtensions (omitempty does not leave a struct out).
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
	DryRun    *bool           `json:"dryRun,omitempty"`
	Options   json.RawMessage `json:"options"`
}

// userInfo is authentication/v1 UserInfo.
type userInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// response is admission.k8s.io/v1 AdmissionResponse.
type response struct {
	UID              string            `json:"uid"`
	Allowed          bool              `json:"allowed"`
	Result           *api.Status       `json:"status,omitempty"`
	Patch            []byte            `json:"patch,omitempty"`
	PatchType        *string           `json:"patchType,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
}

type review struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Request    *request  `json:"request,omitempty"`
	Response   *response `json:"response,omitempty"`
}

// newRequest is the request kube's CreateV1AdmissionReview builds: the
// kind and resource the webhook matched, the request's own as requestKind
// and requestResource, objects included in full.
func newRequest(a *Attributes, uid string) *request {
	dryRun := a.DryRun
	kind, res := a.Kind, a.Resource
	if a.parent != nil {
		kind, res = *a.requestKind, *a.requestResource
	}
	r := &request{
		UID: uid, Kind: a.Kind, Resource: a.Resource, SubResource: a.Subresource,
		RequestKind: &kind, RequestResource: &res, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: a.Operation, DryRun: &dryRun,
	}
	if u := a.User; u != nil {
		r.UserInfo = userInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	return r
}

// errCalling is kube's ErrCallingWebhook: the webhook could not be asked
// or answered nonsense; its failure policy decides.
type errCalling struct {
	webhook string
	reason  error
	code    int // kube's status of the failure, for the metrics
}

func (e *errCalling) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
}

// call sends one AdmissionReview and returns the webhook's verified answer.
func (d *Dispatcher) call(ctx context.Context, h *Webhook, a *Attributes) (*response, error) {
	if a.DryRun && !h.NoSideEffects {
		return nil, dryRunUnsupported(h.Name)
	}
	if h.invalid != nil {
		return nil, &errCalling{h.Name, h.invalid, http.StatusInternalServerError}
	}
	uid := registry.NewUID()
	req := newRequest(a, uid)
	var err error
	for _, o := range []struct {
		dst *json.RawMessage
		obj api.Object
	}{{&req.Object, a.Object}, {&req.OldObject, a.OldObject}, {&req.Options, a.Options}} {
		if o.obj != nil && err == nil {
			*o.dst, err = api.MarshalObject(o.obj)
		}
	}
	if err != nil {
		return nil, &errCalling{h.Name, fmt.Errorf("could not create admission objects: %w", err), http.StatusBadRequest}
	}
	body, err := json.Marshal(review{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Request: req})
	if err != nil {
		return nil, &errCalling{h.Name, fmt.Errorf("could not create admission objects: %w", err), http.StatusBadRequest}
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	resp, code, err := d.post(ctx, h, body)
	if err != nil {
		return nil, &errCalling{h.Name, fmt.Errorf("failed to call webhook: %w", err), code}
	}
	if err := verify(resp, uid, h.Mutating); err != nil {
		return nil, &errCalling{h.Name, fmt.Errorf("received invalid webhook response: %w", err), http.StatusServiceUnavailable}
	}
	return resp.Response, nil
}

// post sends body to the webhook and decodes its answer.
func (d *Dispatcher) post(ctx context.Context, h *Webhook, body []byte) (*review, int, error) {
	var rv review
	code, err := h.endpoint.Post(ctx, body, &rv)
	if err != nil {
		return nil, code, err
	}
	return &rv, code, nil
}

// verify is kube's VerifyAdmissionResponse for v1 reviews.
func verify(rv *review, uid string, mutating bool) error {
	r := rv.Response
	if r == nil {
		return errors.New("webhook response was absent")
	}
	if r.UID != uid {
		return fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID)
	}
	if rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" {
		return fmt.Errorf("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", rv.APIVersion, rv.Kind)
	}
	if !mutating {
		if len(r.Patch) > 0 {
			return errors.New("validating webhook may not return response.patch")
		}
		if r.PatchType != nil {
			return errors.New("validating webhook may not return response.patchType")
		}
		return nil
	}
	switch {
	case len(r.Patch) > 0 && r.PatchType == nil:
		return errors.New("webhook returned response.patch but not response.patchType")
	case len(r.Patch) == 0 && r.PatchType != nil:
		return errors.New("webhook returned response.patchType but not response.patch")
	case r.PatchType != nil && *r.PatchType == "":
		return fmt.Errorf("webhook returned invalid response.patchType of %q", *r.PatchType)
	}
	return nil
}

// rejection is kube's ToStatusErr: the webhook's status is the request's
// error as it is, but for its message, prefixed with who denied it, a code
// of at least 400 and a status of Failure.
func rejection(webhook string, result *api.Status) *api.StatusError {
	st := api.Status{}
	if result != nil {
		st = *result
	}
	st.TypeMeta = api.TypeMeta{APIVersion: "v1", Kind: "Status"}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == api.StatusSuccess {
		st.Status = api.StatusFailure
	}
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", webhook)
	switch {
	case st.Message != "":
		st.Message = deniedBy + ": " + st.Message
	case st.Reason != "":
		st.Message = deniedBy + ": " + string(st.Reason)
	default:
		st.Message = deniedBy + " without explanation"
	}
	st.Message = apierror.Truncate(st.Message, apierror.MaxWarningRunes)
	return &api.StatusError{Status: st}
}
