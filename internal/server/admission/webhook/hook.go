package webhook

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// Webhook is one webhook of a configuration, read and prepared once per
// version of its configuration: selectors parsed, match conditions
// compiled, an HTTP client for its CA bundle.
type Webhook struct {
	Configuration string // the configuration's name
	Name          string
	Mutating      bool
	// UID tells webhooks apart across configurations (kube's accessor UID:
	// configuration name and index).
	UID               string
	Rules             []Rule
	Ignore            bool // failurePolicy Ignore
	Equivalent        bool // matchPolicy Equivalent
	NamespaceSelector selector.Labels
	ObjectSelector    selector.Labels
	// NoSideEffects says sideEffects is None or NoneOnDryRun: the webhook
	// may be called on dry runs.
	NoSideEffects bool
	Timeout       time.Duration
	Reinvoke      bool // reinvocationPolicy IfNeeded
	conditions    *conditions
	endpoint      *webhookclient.Endpoint
	// invalid, when set, fails every call (a selector or condition that
	// does not parse; kube fails them as internal errors too).
	invalid error
}

// Rule is one of a webhook's rules.
type Rule struct {
	Operations, APIGroups, APIVersions, Resources []string
	Scope                                         string
}

// config is a webhook as its configuration's JSON holds it.
type config struct {
	Name         string                     `json:"name"`
	ClientConfig webhookclient.ClientConfig `json:"clientConfig"`
	Rules        []struct {
		Operations  []string `json:"operations"`
		APIGroups   []string `json:"apiGroups"`
		APIVersions []string `json:"apiVersions"`
		Resources   []string `json:"resources"`
		Scope       *string  `json:"scope"`
	} `json:"rules"`
	FailurePolicy      *string                 `json:"failurePolicy"`
	MatchPolicy        *string                 `json:"matchPolicy"`
	NamespaceSelector  *selector.LabelSelector `json:"namespaceSelector"`
	ObjectSelector     *selector.LabelSelector `json:"objectSelector"`
	SideEffects        *string                 `json:"sideEffects"`
	TimeoutSeconds     *int32                  `json:"timeoutSeconds"`
	ReinvocationPolicy *string                 `json:"reinvocationPolicy"`
	MatchConditions    []condition             `json:"matchConditions"`
}

// defaultTimeout is kube's when a webhook has no timeoutSeconds.
const defaultTimeout = 10 * time.Second

// Parse reads the webhooks of a configuration object, as stored (defaults
// applied). A webhook whose selectors or conditions do not parse is kept,
// failing its calls, as kube does. opts are the webhooks' clients'.
func Parse(obj api.Object, mutating bool, opts webhookclient.Options) ([]*Webhook, error) {
	var cfg struct {
		Webhooks []config `json:"webhooks"`
	}
	b, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the webhooks of %s: %w", obj.Name(), err)
	}
	hooks := make([]*Webhook, len(cfg.Webhooks))
	for i, c := range cfg.Webhooks {
		hooks[i] = newWebhook(obj.Name(), i, c, mutating, opts)
	}
	return hooks, nil
}

func newWebhook(configuration string, index int, c config, mutating bool, opts webhookclient.Options) *Webhook {
	h := &Webhook{
		Configuration: configuration, Name: c.Name, Mutating: mutating,
		UID:           configuration + "/" + strconv.Itoa(index),
		Ignore:        c.FailurePolicy != nil && *c.FailurePolicy == "Ignore",
		Equivalent:    c.MatchPolicy == nil || *c.MatchPolicy == "Equivalent",
		NoSideEffects: c.SideEffects != nil && (*c.SideEffects == "None" || *c.SideEffects == "NoneOnDryRun"),
		Timeout:       defaultTimeout,
		Reinvoke:      c.ReinvocationPolicy != nil && *c.ReinvocationPolicy == "IfNeeded",
	}
	if c.TimeoutSeconds != nil {
		h.Timeout = time.Duration(*c.TimeoutSeconds) * time.Second
	}
	for _, r := range c.Rules {
		scope := "*"
		if r.Scope != nil {
			scope = *r.Scope
		}
		h.Rules = append(h.Rules, Rule{r.Operations, r.APIGroups, r.APIVersions, r.Resources, scope})
	}
	h.NamespaceSelector, h.invalid = labelSelector(c.NamespaceSelector)
	if h.invalid == nil {
		h.ObjectSelector, h.invalid = labelSelector(c.ObjectSelector)
	}
	if h.invalid == nil {
		h.conditions, h.invalid = compileConditions(c.MatchConditions, h.Ignore)
	}
	if h.invalid == nil {
		if h.endpoint, h.invalid = webhookclient.New(c.ClientConfig, opts); h.invalid != nil {
			h.invalid = fmt.Errorf("webhook %q: %w", c.Name, h.invalid)
		}
	}
	return h
}

// labelSelector is a webhook's selector; none selects everything, as
// kube's default ({}) does.
func labelSelector(ls *selector.LabelSelector) (selector.Labels, error) {
	if ls == nil {
		ls = &selector.LabelSelector{}
	}
	return selector.FromLabelSelector(ls)
}

// Close releases the webhook's idle connections, once it is replaced.
func (h *Webhook) Close() {
	if h.endpoint != nil {
		h.endpoint.Close()
	}
}
