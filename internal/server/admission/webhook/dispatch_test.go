package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// fakeSource serves fixed webhooks and namespaces.
type fakeSource struct {
	mutating, validating []*Webhook
	namespaces           map[string]map[string]string
	equivalents          map[GVR][]Equivalent
}

func (f *fakeSource) Webhooks(_ context.Context, mutating bool) ([]*Webhook, error) {
	if mutating {
		return f.mutating, nil
	}
	return f.validating, nil
}

func (f *fakeSource) Equivalents(r GVR, _ string) []Equivalent { return f.equivalents[r] }

func (f *fakeSource) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	l, ok := f.namespaces[name]
	if !ok {
		return nil, apierror.NotFound(apierror.Target{Resource: "namespaces", Name: name})
	}
	return l, nil
}

// reviewer answers AdmissionReviews with answer, recording each request.
type reviewer struct {
	mu       sync.Mutex
	requests []map[string]any
}

func (rv *reviewer) handler(t testing.TB, answer func(req map[string]any) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Request map[string]any }
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &in); err != nil {
			t.Errorf("webhook got %s: %v", b, err)
		}
		rv.mu.Lock()
		rv.requests = append(rv.requests, in.Request)
		rv.mu.Unlock()
		resp := answer(in.Request)
		resp["uid"] = in.Request["uid"]
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}
}

func (rv *reviewer) count() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return len(rv.requests)
}

// serve starts an HTTPS webhook server and returns its configuration's
// clientConfig (URL and CA bundle).
func serve(t testing.TB, h http.Handler) map[string]any {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return map[string]any{"url": srv.URL + "/review", "caBundle": base64.StdEncoding.EncodeToString(ca)}
}

// hook parses one webhook of a configuration named config.
func hook(t testing.TB, config string, mutating bool, spec map[string]any) *Webhook {
	w := map[string]any{"name": config + ".example.com", "sideEffects": "None", "admissionReviewVersions": []any{"v1"},
		"rules": []any{map[string]any{"operations": []any{"*"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"configmaps"}}}}
	for k, v := range spec {
		w[k] = v
	}
	hs, err := Parse(api.Object{"metadata": map[string]any{"name": config}, "webhooks": []any{w}}, mutating, webhookclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs[0].Close)
	return hs[0]
}

func configMap(name string, labels map[string]any) api.Object {
	return api.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns", "labels": labels}}
}

func createAttrs(obj api.Object) *Attributes {
	return &Attributes{Operation: Create, Kind: GVK{Version: "v1", Kind: "ConfigMap"}, Resource: GVR{Version: "v1", Resource: "configmaps"},
		Namespace: "ns", Name: obj.Name(), Object: obj, User: &authn.User{Name: "jane", Groups: []string{"devs"}}, Authorizer: janeCreatesConfigMaps{}}
}

// janeCreatesConfigMaps allows jane to create ConfigMaps, nothing else.
type janeCreatesConfigMaps struct{}

func (janeCreatesConfigMaps) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User != nil && a.User.Name == "jane" && a.Verb == "create" && a.Resource == "configmaps" {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
}

func newDispatcher(src *fakeSource) *Dispatcher {
	return New(src, nil, slog.New(slog.DiscardHandler))
}

func patchOp(path string, value any) map[string]any {
	b, _ := json.Marshal([]any{map[string]any{"op": "add", "path": path, "value": value}})
	return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": b}
}

// TestMutateAndReinvoke: a patch is applied, the next webhook sees it,
// and an IfNeeded webhook is called again once a later one changed the
// object (and only then).
func TestMutateAndReinvoke(t *testing.T) {
	var first, second reviewer
	a := hook(t, "a", true, map[string]any{"reinvocationPolicy": "IfNeeded", "clientConfig": serve(t, first.handler(t, func(req map[string]any) map[string]any {
		return map[string]any{"allowed": true, "warnings": []any{"from a"}, "auditAnnotations": map[string]any{"k": "v"}}
	}))})
	b := hook(t, "b", true, map[string]any{"clientConfig": serve(t, second.handler(t, func(req map[string]any) map[string]any {
		return patchOp("/data", map[string]any{"added": "by-b"})
	}))})
	d := newDispatcher(&fakeSource{mutating: []*Webhook{a, b}})
	attrs := createAttrs(configMap("x", nil))
	if err := MutateChain(context.Background(), attrs, d); err != nil {
		t.Fatal(err)
	}
	if got := resourcePath(attrs.Object, "data", "added"); got != "by-b" {
		t.Fatalf("patched object %v", attrs.Object)
	}
	if first.count() != 2 || second.count() != 1 {
		t.Fatalf("calls: a %d (want 2: reinvoked), b %d (want 1)", first.count(), second.count())
	}
	if got := resourcePath(api.Object(first.requests[1]["object"].(map[string]any)), "data", "added"); got != "by-b" {
		t.Fatalf("reinvoked webhook saw %v", first.requests[1]["object"])
	}
	if w := attrs.Warnings(); len(w) != 2 || w[0] != "from a" {
		t.Fatalf("warnings %q", w)
	}
	ann := attrs.AuditAnnotations()
	if ann["a.example.com/k"] != "v" || ann["mutation.webhook.admission.k8s.io/round_0_index_1"] != `{"configuration":"b","webhook":"b.example.com","mutated":true}` {
		t.Fatalf("annotations %v", ann)
	}
}

func resourcePath(o api.Object, path ...string) any {
	var v any = map[string]any(o)
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// TestFailures: a webhook down, slow, answering garbage or another uid
// fails the write under failurePolicy Fail with kube's message, and is
// passed over under Ignore; a slow one is given up at its timeout.
func TestFailures(t *testing.T) {
	down := serve(t, http.NotFoundHandler())
	down["url"] = "https://127.0.0.1:1/review"
	release := make(chan struct{})
	slow := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for its handlers
	garbage := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{not json")) }))
	wrongUID := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{"uid": "x", "allowed": true}})
	}))
	tests := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"down", down, `failed calling webhook "down.example.com": failed to call webhook: Post "https://127.0.0.1:1/review?timeout=`},
		{"slow", slow, `failed calling webhook "slow.example.com": failed to call webhook: Post "https://127.0.0.1:`},
		{"garbage", garbage, `failed calling webhook "garbage.example.com": failed to call webhook: decoding the response`},
		{"uid", wrongUID, `failed calling webhook "uid.example.com": received invalid webhook response: expected response.uid=`},
	}
	for _, tt := range tests {
		for _, policy := range []string{"Fail", "Ignore"} {
			t.Run(tt.name+"/"+policy, func(t *testing.T) {
				h := hook(t, tt.name, false, map[string]any{"clientConfig": tt.config, "failurePolicy": policy, "timeoutSeconds": 1})
				d := newDispatcher(&fakeSource{validating: []*Webhook{h}})
				start := time.Now()
				err := d.Validate(context.Background(), createAttrs(configMap("x", nil)))
				if took := time.Since(start); took > 3*time.Second {
					t.Fatalf("took %v past a 1 s timeout", took)
				}
				if policy == "Ignore" {
					if err != nil {
						t.Fatalf("Ignore: %v", err)
					}
					return
				}
				se := apierror.From(err)
				if se == nil || se.Status.Code != 500 || !strings.HasPrefix(se.Status.Message, "Internal error occurred: "+tt.want) {
					t.Fatalf("got %v, want 500 %q", err, tt.want)
				}
			})
		}
	}
}

// TestDenyAndSelectors: a denial reaches the client as kube's Status; the
// namespace selector reads the namespace's labels, the object selector
// the new or old object's, match conditions the request.
func TestDenyAndSelectors(t *testing.T) {
	var rv reviewer
	deny := func(map[string]any) map[string]any {
		return map[string]any{"allowed": false, "status": map[string]any{"code": 422, "message": "no way"}}
	}
	cc := serve(t, rv.handler(t, deny))
	src := &fakeSource{namespaces: map[string]map[string]string{"ns": {"team": "a"}}}
	d := newDispatcher(src)
	tests := []struct {
		name   string
		spec   map[string]any
		labels map[string]any
		denied bool
	}{
		{"all", nil, nil, true},
		{"namespace in", map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}}, nil, true},
		{"namespace out", map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": "b"}}}, nil, false},
		{"object in", map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}, map[string]any{"app": "x"}, true},
		{"object out", map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}, nil, false},
		// An absent old object matches no selector, not even one that
		// empty labels would match.
		{"object out, NotIn", map[string]any{"objectSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "skip", "operator": "NotIn", "values": []any{"yes"}}}}}, map[string]any{"skip": "yes"}, false},
		{"condition true", map[string]any{"matchConditions": []any{map[string]any{"name": "c", "expression": "request.userInfo.username == 'jane' && object.metadata.name == 'x'"}}}, nil, true},
		{"condition false", map[string]any{"matchConditions": []any{map[string]any{"name": "c", "expression": "oldObject != null"}}}, nil, false},
		{"authorizer allows", map[string]any{"matchConditions": []any{map[string]any{"name": "c",
			"expression": "authorizer.group('').resource('configmaps').namespace('ns').check('create').allowed() && authorizer.requestResource.check('create').allowed()"}}}, nil, true},
		{"authorizer refuses", map[string]any{"matchConditions": []any{map[string]any{"name": "c",
			"expression": "authorizer.group('').resource('secrets').namespace('ns').check('create').allowed()"}}}, nil, false},
		{"rule out", map[string]any{"rules": []any{map[string]any{"operations": []any{"UPDATE"}, "apiGroups": []any{"*"}, "apiVersions": []any{"*"}, "resources": []any{"*"}}}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := map[string]any{"clientConfig": cc}
			for k, v := range tt.spec {
				spec[k] = v
			}
			src.validating = []*Webhook{hook(t, "deny", false, spec)}
			err := d.Validate(context.Background(), createAttrs(configMap("x", tt.labels)))
			if !tt.denied {
				if err != nil {
					t.Fatalf("not matched, yet: %v", err)
				}
				return
			}
			se := apierror.From(err)
			want := `admission webhook "deny.example.com" denied the request: no way`
			if se == nil || se.Status.Code != 422 || se.Status.Message != want || se.Status.Reason != "" || se.Status.Details != nil {
				t.Fatalf("got %#v, want 422 %q", err, want)
			}
		})
	}
}

// TestDryRun: a webhook that may have side effects refuses dry runs with
// kube's 400; one without is called, told dryRun.
func TestDryRun(t *testing.T) {
	var rv reviewer
	cc := serve(t, rv.handler(t, func(map[string]any) map[string]any { return map[string]any{"allowed": true} }))
	for _, se := range []string{"None", "Some"} {
		h := hook(t, "dry", false, map[string]any{"clientConfig": cc, "sideEffects": se})
		a := createAttrs(configMap("x", nil))
		a.DryRun = true
		err := newDispatcher(&fakeSource{validating: []*Webhook{h}}).Validate(context.Background(), a)
		if se == "None" {
			if err != nil || rv.count() != 1 || rv.requests[0]["dryRun"] != true {
				t.Fatalf("None: %v, %d calls", err, rv.count())
			}
			continue
		}
		if s := apierror.From(err); s == nil || s.Status.Code != 400 || s.Status.Message != `admission webhook "dry.example.com" does not support dry run` {
			t.Fatalf("Some: %v", err)
		}
	}
}

// TestResponseBound: an answer of webhookclient.MaxResponseBytes is read, one byte more
// fails the call.
func TestResponseBound(t *testing.T) {
	for _, extra := range []int{0, 1} {
		cc := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var in struct{ Request struct{ UID string } }
			_ = json.NewDecoder(r.Body).Decode(&in)
			head := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"` + in.Request.UID + `","allowed":true}}`
			_, _ = w.Write([]byte(head + strings.Repeat(" ", webhookclient.MaxResponseBytes-len(head)+extra)))
		}))
		h := hook(t, "big", false, map[string]any{"clientConfig": cc})
		err := newDispatcher(&fakeSource{validating: []*Webhook{h}}).Validate(context.Background(), createAttrs(configMap("x", nil)))
		switch {
		case extra == 0 && err != nil:
			t.Fatalf("at the limit: %v", err)
		case extra == 1 && (err == nil || !strings.Contains(err.Error(), "the response is larger than 3145728 bytes")):
			t.Fatalf("past the limit: %v", err)
		}
	}
}

// TestConditionBudget: a webhook's match conditions share kube's cost
// budget: each of two conditions fits in it, both do not, and the request
// fails under failurePolicy Fail, the webhook is skipped under Ignore.
func TestConditionBudget(t *testing.T) {
	var rv reviewer
	cc := serve(t, rv.handler(t, func(map[string]any) map[string]any { return map[string]any{"allowed": true} }))
	obj := configMap("x", nil)
	obj["s"] = strings.Repeat("a", 15_000_000) // contains() costs 1,500,000 of the 2,500,000
	cond := map[string]any{"name": "c", "expression": "!object.s.contains('z')"}
	other := map[string]any{"name": "d", "expression": "!object.s.contains('y')"}
	tests := []struct {
		name   string
		conds  []any
		policy string
		calls  int
		err    string
	}{
		{"one", []any{cond}, "Fail", 1, ""},
		{"two", []any{cond, other}, "Fail", 0, `configmaps "x" is forbidden: validation failed due to running out of cost budget, no further validation rules will be run`},
		{"two, Ignore", []any{cond, other}, "Ignore", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rv.count()
			h := hook(t, "budget", false, map[string]any{"clientConfig": cc, "matchConditions": tt.conds, "failurePolicy": tt.policy})
			err := newDispatcher(&fakeSource{validating: []*Webhook{h}}).Validate(context.Background(), createAttrs(obj))
			if got := rv.count() - before; got != tt.calls {
				t.Errorf("%d calls, want %d", got, tt.calls)
			}
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}

// observed records the webhook calls a Dispatcher reports.
type observed struct {
	mu    sync.Mutex
	calls []string // "rejected code errorType"
}

func (o *observed) ObserveWebhook(_, _, _ string, _ float64, rejected bool, code int, errorType string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, fmt.Sprintf("%t %d %s", rejected, code, errorType))
}

func (o *observed) ObserveStep(string, string, float64, bool) {}

// TestRejectionMetrics: as kube's dispatchers, a webhook's refusal counts
// as no_error with its code whatever its status says, and an error of the
// server's own (a dry run the webhook does not support) as
// apiserver_internal_error with no code.
func TestRejectionMetrics(t *testing.T) {
	var rv reviewer
	cc := serve(t, rv.handler(t, func(map[string]any) map[string]any {
		return map[string]any{"allowed": false, "status": map[string]any{"code": 500, "reason": "InternalError", "message": "no"}}
	}))
	for _, tt := range []struct {
		name   string
		dryRun bool
		want   string
	}{
		{"denied", false, "true 500 no_error"},
		{"dry run", true, "true 0 apiserver_internal_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var o observed
			h := hook(t, "m", false, map[string]any{"clientConfig": cc, "sideEffects": "Some"})
			a := createAttrs(configMap("x", nil))
			a.DryRun = tt.dryRun
			if err := New(&fakeSource{validating: []*Webhook{h}}, &o, slog.New(slog.DiscardHandler)).Validate(context.Background(), a); err == nil {
				t.Fatal("allowed")
			}
			if len(o.calls) != 1 || o.calls[0] != tt.want {
				t.Errorf("observed %q, want %q", o.calls, tt.want)
			}
		})
	}
}

// TestConditionNumbers: match conditions read an object's numbers as
// CEL's int and double, as kube's unstructured objects hold them, not as
// the decoder's json.Number.
func TestConditionNumbers(t *testing.T) {
	var rv reviewer
	cc := serve(t, rv.handler(t, func(map[string]any) map[string]any {
		return map[string]any{"allowed": false, "status": map[string]any{"code": 422, "message": "no"}}
	}))
	obj, err := api.ParseObject([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"},"spec":{"replicas":3,"ratio":0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.validating = []*Webhook{hook(t, "deny", false, map[string]any{"clientConfig": cc,
		"matchConditions": []any{map[string]any{"name": "c", "expression": "object.spec.replicas > 2 && object.spec.ratio < 1.0"}}})}
	err = newDispatcher(src).Validate(context.Background(), createAttrs(obj))
	if want := `admission webhook "deny.example.com" denied the request: no`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want the webhook's denial %q", err, want)
	}
}

// TestPatchAsKube: a webhook's JSON Patch applies as kube's dispatcher
// applies it (json-patch v4: a replace of a missing member adds it), and
// one that does not apply is kube's 500 with json-patch v4's words.
func TestPatchAsKube(t *testing.T) {
	for _, tt := range []struct {
		name, patch, want string
	}{
		{"replace of a missing member", `[{"op":"replace","path":"/metadata/labels/new","value":"v"}]`, ""},
		{"remove of a missing member", `[{"op":"remove","path":"/metadata/labels/none"}]`,
			"Internal error occurred: error in remove for path: '/metadata/labels/none': Unable to remove nonexistent key: none: missing value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rv reviewer
			h := hook(t, "p", true, map[string]any{"clientConfig": serve(t, rv.handler(t, func(map[string]any) map[string]any {
				return map[string]any{"allowed": true, "patchType": "JSONPatch", "patch": []byte(tt.patch)}
			}))})
			attrs := createAttrs(configMap("x", map[string]any{"a": "1"}))
			err := MutateChain(context.Background(), attrs, newDispatcher(&fakeSource{mutating: []*Webhook{h}}))
			if tt.want == "" {
				if err != nil || resourcePath(attrs.Object, "metadata", "labels", "new") != "v" {
					t.Fatalf("%v, object %v", err, attrs.Object)
				}
				return
			}
			var se *api.StatusError
			if !errors.As(err, &se) || se.Status.Code != 500 || se.Status.Message != tt.want {
				t.Fatalf("%v, want 500 %q", err, tt.want)
			}
		})
	}
}
