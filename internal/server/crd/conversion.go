package crd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// conversion is a definition's spec.conversion.
type conversion struct {
	Strategy string `json:"strategy"`
	Webhook  *struct {
		ClientConfig             webhookclient.ClientConfig `json:"clientConfig"`
		ConversionReviewVersions []string                   `json:"conversionReviewVersions"`
	} `json:"webhook"`
}

// ConversionTimeout bounds one call of a conversion webhook. The
// WebhookConversion API has no timeoutSeconds and kube's converter sets
// none of its own; a bound keeps a hung webhook from holding the request,
// or the watch cache that converts for every watcher of a version, forever.
const ConversionTimeout = 30 * time.Second

// ConversionObserver is told of each call of a conversion webhook, for
// kube's apiserver_crd_conversion_webhook_duration_seconds (crd, from and
// to version, success) and apiserver_conversion_webhook_* (failureType
// "" on success, else kube's ConversionWebhookErrorType).
type ConversionObserver interface {
	ObserveConversion(crd, from, to string, seconds float64, failureType string)
}

// kube's ConversionWebhookErrorType values.
const (
	callFailure = "conversion_webhook_call_failure"
)

// webhookConverter converts a definition's objects by calling its
// conversion webhook, as kube's webhookConverter and the
// delegatingCRConverter around it do.
type webhookConverter struct {
	crd      string // the definition's name
	group    string
	review   string // the ConversionReview version sent: v1 or v1beta1
	endpoint *webhookclient.Endpoint
	invalid  error // set when the webhook cannot be called at all
	observer ConversionObserver
	timeout  time.Duration
}

// newWebhookConverter returns the converter of a definition whose strategy
// is Webhook, r resolving its service reference. A clientConfig it cannot use fails every conversion, as
// kube's does when it cannot build the webhook's client.
func newWebhookConverter(d *definition, c *conversion, observer ConversionObserver, r webhookclient.Resolver) *webhookConverter {
	wc := &webhookConverter{crd: d.Metadata.Name, group: d.Spec.Group, observer: observer, timeout: ConversionTimeout}
	if c.Webhook == nil {
		wc.invalid = errors.New("no webhook configured")
		return wc
	}
	for _, v := range c.Webhook.ConversionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			wc.review = v
			break
		}
	}
	if wc.review == "" {
		wc.invalid = errors.New("no supported conversion review versions")
		return wc
	}
	wc.endpoint, wc.invalid = webhookclient.New(c.Webhook.ClientConfig, webhookclient.Options{Resolver: r})
	return wc
}

// close releases the webhook's idle connections, once it is replaced.
func (c *webhookConverter) close() {
	if c.endpoint != nil {
		c.endpoint.Close()
	}
}

// conversionRequest is ConversionRequest in both review versions.
type conversionRequest struct {
	UID               string       `json:"uid"`
	DesiredAPIVersion string       `json:"desiredAPIVersion"`
	Objects           []api.Object `json:"objects"`
}

// conversionResponse is ConversionResponse in both review versions.
type conversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           api.Status        `json:"result"`
}

type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *conversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

// convert returns obj as apiVersion: obj itself when it is in that version
// already (kube sends only the objects that need converting), else the
// webhook's answer, checked as kube checks it, with obj's metadata but for
// the labels and annotations the webhook may change. Errors are kube's
// messages in a 500. The call ends with ctx: the request's, or the watch
// cache's.
func (c *webhookConverter) convert(ctx context.Context, obj api.Object, apiVersion string) (api.Object, error) {
	from, _ := obj["apiVersion"].(string)
	if from == apiVersion {
		return obj, nil
	}
	kind, _ := obj["kind"].(string)
	what := gvk(from, kind)
	start := time.Now()
	converted, failure, err := c.call(ctx, obj, apiVersion)
	if c.observer != nil {
		c.observer.ObserveConversion(c.crd, versionOf(from), versionOf(apiVersion), time.Since(start).Seconds(), failure)
	}
	if err != nil {
		return nil, apierror.Internal(fmt.Errorf("conversion for %s failed: %w", what, err))
	}
	if err := checkConverted(obj, converted, apiVersion); err != nil {
		return nil, apierror.Internal(fmt.Errorf("conversion for %s returned invalid converted object at index 1: %w", what, err))
	}
	if err := restoreMeta(obj, converted); err != nil {
		return nil, apierror.Internal(fmt.Errorf("conversion for %s returned invalid metadata in object at index 1: %w", what, err))
	}
	return converted, nil
}

// call sends obj in one ConversionReview and returns the object the
// webhook answered and, on failure, kube's failure type for the metrics.
// kube's webhook converter names the list it sends in its errors, whose
// kind is empty for a single object: hence "for , Kind=".
func (c *webhookConverter) call(ctx context.Context, obj api.Object, apiVersion string) (api.Object, string, error) {
	fail := func(err error) (api.Object, string, error) {
		return nil, callFailure, fmt.Errorf("conversion webhook for , Kind= failed: %w", err)
	}
	if c.invalid != nil {
		return fail(c.invalid)
	}
	uid := registry.NewUID()
	body, err := json.Marshal(conversionReview{
		APIVersion: "apiextensions.k8s.io/" + c.review, Kind: "ConversionReview",
		Request: &conversionRequest{UID: uid, DesiredAPIVersion: apiVersion, Objects: []api.Object{obj}},
	})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rv conversionReview
	if _, err := c.endpoint.Post(ctx, body, &rv); err != nil {
		return fail(err)
	}
	objs, err := c.verify(&rv, uid)
	if err != nil {
		return fail(err)
	}
	if len(objs) != 1 {
		return nil, "conversion_webhook_partial_response_failure", fmt.Errorf("returned %d objects, expected 1", len(objs))
	}
	out, err := api.ParseObject(objs[0])
	if err != nil {
		return nil, "conversion_webhook_malformed_response_failure", err
	}
	return out, "", nil
}

// verify is kube's getConvertedObjectsFromResponse: a v1 review must be a
// v1 ConversionReview answering our uid; v1beta1 ones never were checked
// for either; both must succeed.
func (c *webhookConverter) verify(rv *conversionReview, uid string) ([]json.RawMessage, error) {
	r := rv.Response
	if c.review == "v1" {
		if rv.APIVersion != "apiextensions.k8s.io/v1" || rv.Kind != "ConversionReview" {
			return nil, fmt.Errorf("expected webhook response of %s, got %s", "apiextensions.k8s.io/v1, Kind=ConversionReview", gvk(rv.APIVersion, rv.Kind))
		}
	}
	if r == nil {
		return nil, errors.New("no response provided")
	}
	if c.review == "v1" && r.UID != uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID)
	}
	if r.Result.Status != api.StatusSuccess {
		if r.Result.Message != "" {
			return nil, errors.New(r.Result.Message)
		}
		return nil, fmt.Errorf("response.result.status was '%s', not 'Success'", r.Result.Status)
	}
	return r.ConvertedObjects, nil
}

// checkConverted is kube's checks of a converted object: the desired
// group/version, and the kind, name, namespace and uid of the original.
func checkConverted(in, out api.Object, apiVersion string) error {
	got, _ := out["apiVersion"].(string)
	if got != apiVersion {
		return fmt.Errorf("invalid groupVersion (expected %s, received %s)", apiVersion, got)
	}
	if e, a := in["kind"], out["kind"]; e != a {
		return fmt.Errorf("invalid kind (expected %v, received %v)", e, a)
	}
	for _, f := range []struct{ name, key string }{{"name", "name"}, {"namespace", "namespace"}, {"UID", "uid"}} {
		e, _ := in.Metadata()[f.key].(string)
		a, _ := out.Metadata()[f.key].(string)
		if e != a {
			return fmt.Errorf("must have the same %s: %v != %v", f.name, e, a)
		}
	}
	return nil
}

// restoreMeta is kube's restoreObjectMeta: out keeps in's metadata, but
// for the labels and annotations the webhook answered, which must be valid.
func restoreMeta(in, out api.Object) error {
	cm, found := out["metadata"]
	if !found {
		return errors.New("missing metadata in converted object")
	}
	converted, ok := cm.(map[string]any)
	if !ok {
		return fmt.Errorf("invalid metadata of type %T in converted object", cm)
	}
	result := make(map[string]any, len(in.Metadata())+2)
	for k, v := range in.Metadata() {
		result[k] = v
	}
	for _, f := range []string{"labels", "annotations"} {
		v, found := converted[f]
		if !found || v == nil {
			delete(result, f)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", f, v)
		}
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", f, k, v)
			}
			var err error
			if f == "labels" {
				err = selector.ValidateLabel(k, s)
			} else {
				err = selector.ValidateLabelKey(k)
			}
			if err != nil {
				return fmt.Errorf("metadata.%s: Invalid value: %q: %w", f, k, err)
			}
		}
		result[f] = m
	}
	out["metadata"] = result
	return nil
}

// gvk is a group/version and kind as kube's GroupVersionKind prints them.
func gvk(apiVersion, kind string) string { return apiVersion + ", Kind=" + kind }

// versionOf is the version of a group/version.
func versionOf(apiVersion string) string {
	return apiVersion[strings.LastIndexByte(apiVersion, '/')+1:]
}

// conversion checks spec.conversion as kube's
// validateCustomResourceConversion, at kube's internal paths (v1's
// webhook.clientConfig is webhookClientConfig there).
func (c *checker) conversion(obj api.Object, cv *conversion) {
	if cv == nil {
		return
	}
	const p = "spec.conversion"
	c.oneOf(p+".strategy", cv.Strategy, []string{"None", "Webhook"})
	spec, _ := obj["spec"].(map[string]any)
	raw, _ := spec["conversion"].(map[string]any)
	hook, _ := raw["webhook"].(map[string]any)
	cc, _ := hook["clientConfig"].(map[string]any)
	var versions []string
	if cv.Webhook != nil {
		versions = cv.Webhook.ConversionReviewVersions
	}
	if cv.Strategy == "Webhook" {
		c.causes = append(c.causes, resource.ValidateConversionWebhook(cc, p+".webhookClientConfig", versions, p+".conversionReviewVersions")...)
		return
	}
	const notWebhook = "Forbidden: should not be set when strategy is not set to Webhook"
	if cc != nil {
		c.add(api.CauseTypeFieldValueForbidden, p+".webhookClientConfig", notWebhook)
	}
	if len(versions) > 0 {
		c.add(api.CauseTypeFieldValueForbidden, p+".conversionReviewVersions", notWebhook)
	}
}
