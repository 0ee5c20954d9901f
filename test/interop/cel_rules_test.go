package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	celcommon "k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/yaml"
)

// kubeCRD is a definition as kube's apiextensions server holds it.
type kubeCRD struct {
	v1       *apiextensionsv1.CustomResourceDefinition
	internal *apiextensions.CustomResourceDefinition
}

func readCRD(t testing.TB, file string) kubeCRD {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseCRD(t, data)
}

func parseCRD(t testing.TB, data []byte) kubeCRD {
	t.Helper()
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &v1); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var in apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &in, nil); err != nil {
		t.Fatal(err)
	}
	return kubeCRD{v1: &v1, internal: &in}
}

// createCauses is kube's answer to creating the definition: its causes.
func (c kubeCRD) createCauses(t testing.TB) []metav1.StatusCause {
	return statusCauses(crdvalidation.ValidateCustomResourceDefinition(t.Context(), c.internal))
}

// objectCauses is kube's answer to writing obj (old: the stored object on
// update, else nil) in version: defaults applied, the schema's causes,
// then the rules' as kube's strategy runs them.
func (c kubeCRD) objectCauses(t testing.TB, version string, obj, old map[string]any) []metav1.StatusCause {
	t.Helper()
	return c.validator(t, version)(t, obj, old)
}

// validator is objectCauses for many objects: kube's validators of the
// version, made once (they compile every rule).
func (c kubeCRD) validator(t testing.TB, version string) func(t testing.TB, obj, old map[string]any) []metav1.StatusCause {
	t.Helper()
	v := c.warnedValidator(t, version)
	return func(t testing.TB, obj, old map[string]any) []metav1.StatusCause {
		t.Helper()
		causes, _ := v(t, obj, old)
		return causes
	}
}

// warnedValidator is validator with the warnings kube adds to the request:
// rule failures let through by ratcheting.
func (c kubeCRD) warnedValidator(t testing.TB, version string) func(t testing.TB, obj, old map[string]any) ([]metav1.StatusCause, []string) {
	t.Helper()
	var props *apiextensions.JSONSchemaProps
	if c.internal.Spec.Validation != nil {
		props = c.internal.Spec.Validation.OpenAPIV3Schema
	}
	for _, v := range c.internal.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	ss, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	sv, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	rules := cel.NewValidator(ss, true, celconfig.PerCallLimit)
	return func(t testing.TB, obj, old map[string]any) ([]metav1.StatusCause, []string) {
		t.Helper()
		defaulting.Default(obj, ss)
		errs := validation.ValidateCustomResource(nil, obj, sv)
		if len(errs) > 0 {
			t.Fatalf("test object fails kube's schema validation, not its rules: %v", errs)
		}
		var oldObj any
		if old != nil {
			defaulting.Default(old, ss)
			oldObj = old
		}
		// kube's strategy checks list types too, duplicates on update only
		// when the stored object had none.
		var listErrs fieldpath.ErrorList
		if old == nil || len(listtype.ValidateListSetsAndMaps(nil, ss, old)) == 0 {
			listErrs = listtype.ValidateListSetsAndMaps(nil, ss, obj)
		}
		// On update kube's strategy ratchets the rules (CRDValidationRatcheting).
		var opts []cel.Option
		if old != nil {
			opts = append(opts, cel.WithRatcheting(celcommon.NewCorrelatedObject(obj, old, &model.Structural{Structural: ss})))
		}
		var warned warnings
		ctx := warning.WithWarningRecorder(t.Context(), &warned)
		celErrs, _ := rules.Validate(ctx, nil, ss, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
		return statusCauses(append(listErrs, celErrs...)), warned.list
	}
}

// statusCauses are the causes of kube's 422 for errs (apierrors.NewInvalid).
func statusCauses(errs fieldpath.ErrorList) []metav1.StatusCause {
	var out []metav1.StatusCause
	for _, e := range errs {
		out = append(out, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	return out
}

// write sends obj and returns the answer's code and causes.
func write(t testing.TB, method, url string, obj any) (int, []metav1.StatusCause, map[string]any) {
	t.Helper()
	code, causes, got, _ := writeWarned(t, method, url, obj)
	return code, causes, got
}

// writeWarned is write with the texts of the answer's Warning headers.
func writeWarned(t testing.TB, method, url string, obj any) (int, []metav1.StatusCause, map[string]any, []string) {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	code, b, header := fetchHeader(t, method, url, http.Header{"Content-Type": {"application/json"}}, body)
	warned := warningTexts(t, header)
	var st metav1.Status
	var got map[string]any
	if code >= 300 {
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, code, b)
		}
		if st.Details != nil {
			return code, st.Details.Causes, nil, warned
		}
		t.Logf("%s %s: %d %s", method, url, code, b)
		return code, nil, nil, warned
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return code, nil, got, warned
}

// warningTexts are the texts of header's Warning headers.
func warningTexts(t testing.TB, header http.Header) []string {
	t.Helper()
	parsed, errs := utilnet.ParseWarningHeaders(header.Values("Warning"))
	if len(errs) > 0 {
		t.Fatalf("Warning headers: %v", errs)
	}
	var texts []string
	for _, w := range parsed {
		texts = append(texts, w.Text)
	}
	return texts
}

// sameAnswer fails t unless listwatch's answer (code, causes) is kube's:
// success when kube has no causes, else 422 with kube's causes in order.
func sameAnswer(t testing.TB, want []metav1.StatusCause, code int, got []metav1.StatusCause) {
	t.Helper()
	if len(want) == 0 {
		if code >= 300 {
			t.Fatalf("kube accepts; listwatch answers %d %v", code, got)
		}
		return
	}
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("kube answers 422 %v; listwatch %d", want, code)
	}
	// kube's order follows its schema's map iteration, a new one each time.
	byAll := cmpopts.SortSlices(func(a, b metav1.StatusCause) bool {
		return strings.Compare(a.Field+"\x00"+string(a.Type)+"\x00"+a.Message, b.Field+"\x00"+string(b.Type)+"\x00"+b.Message) < 0
	})
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), byAll); diff != "" {
		t.Errorf("causes (-kube +listwatch):\n%s", diff)
	}
}

func sortCauses(cs []metav1.StatusCause) {
	slices.SortStableFunc(cs, func(a, b metav1.StatusCause) int { return strings.Compare(a.Field, b.Field) })
}

// jsonObject decodes YAML as kube's decoder does: integers as int64.
func jsonObject(t testing.TB, s string) map[string]any {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// celCase is a custom resource written to a real-world definition, and
// the object stored before it when the write is an update.
type celCase struct {
	name, crd, version, old, obj string
}

// thingsSchema has rules of every form at the root and below it.
const thingsSchema = `{"type":"object",
 "x-kubernetes-validations":[
  {"rule":"self.metadata.name.startsWith('t')","message":"name must start with t"},
  {"rule":"!has(self.spec) || !has(self.spec.max) || self.spec.max < 100","fieldPath":".spec.max","reason":"FieldValueForbidden","messageExpression":"'max ' + string(self.spec.max) + ' is too big'"}],
 "properties":{"spec":{"type":"object",
  "x-kubernetes-validations":[{"rule":"self.mode == oldSelf.mode","message":"mode is immutable"},{"rule":"!has(self.count) || type(self.count) == int || self.count.endsWith('%')"}],
  "properties":{"mode":{"type":"string","enum":["a","b"]},"max":{"type":"integer"},"count":{"x-kubernetes-int-or-string":true},
   "tags":{"type":"array","maxItems":5,"items":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self != 'x'","reason":"FieldValueDuplicate"}]}},
   "labels":{"type":"object","additionalProperties":{"type":"string"},"x-kubernetes-validations":[{"rule":"self.all(k, k.size() < 5)","message":"short keys"}]}}}}}`

// thingsCRD is thingsSchema bounded enough for kube's cost limits.
var thingsCRD = celDefinition(strings.NewReplacer(
	`"additionalProperties":{"type":"string"}`, `"maxProperties":10,"additionalProperties":{"type":"string","maxLength":10}`,
	`'max ' + string(self.spec.max) + ' is too big'`, `'max is too big: ' + (self.spec.max > 1000 ? 'huge' : 'big')`).Replace(thingsSchema))

var celCases = []celCase{
	{name: "root rules", crd: thingsCRD, version: "v1", obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: other}
spec: {mode: a, max: 200, count: "7", tags: ['y', 'x'], labels: {long-key: v}}`},
	{name: "root rules pass", crd: thingsCRD, version: "v1", obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: thing}
spec: {mode: a, max: 2, count: 7, tags: ['y'], labels: {k: v}}`},
	{name: "transition on spec", crd: thingsCRD, version: "v1", old: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: thing}
spec: {mode: a}`, obj: `
apiVersion: example.com/v1
kind: Thing
metadata: {name: thing}
spec: {mode: b, count: "5%"}`},
	{name: "optionalOldSelf and map values on create", crd: gaugesCRD, version: "v1", obj: `
apiVersion: example.com/v1
kind: Gauge
metadata: {name: g}
spec: {mode: late, labels: {k: bad}, ports: [{name: p, port: 1000}]}`},
	{name: "gateway valid", crd: "gateway-api-gateways.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - {name: https, protocol: HTTPS, port: 443, hostname: a.example.com, tls: {certificateRefs: [{name: cert}]}}`},
	{name: "gateway TLS on HTTP", crd: "gateway-api-gateways.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 80, tls: {certificateRefs: [{name: cert}]}}`},
	{name: "gateway HTTPS without TLS, duplicate listener names", crd: "gateway-api-gateways.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: example
  listeners:
  - {name: web, protocol: HTTPS, port: 443}
  - {name: web, protocol: HTTP, port: 80, hostname: b.example.com}`},
	{name: "gateway class name immutable once set", crd: "gateway-api-gateways.yaml", version: "v1", old: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: example
  listeners: [{name: http, protocol: HTTP, port: 80}]`, obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: other
  listeners: [{name: http, protocol: HTTP, port: 80}]`},
	{name: "httproute path without slash", crd: "gateway-api-httproutes.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
  - matches: [{path: {type: PathPrefix, value: no-slash}}]`},
	{name: "httproute valid", crd: "gateway-api-httproutes.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  hostnames: [a.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]`},
	{name: "httproute redirect and rewrite", crd: "gateway-api-httproutes.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r}
spec:
  rules:
  - matches: [{path: {type: PathPrefix, value: "/a//b"}}]
    filters:
    - {type: RequestRedirect, requestRedirect: {scheme: https}}
    - {type: URLRewrite, urlRewrite: {hostname: x.example.com}}`},
	{name: "grpcroute header match", crd: "gateway-api-grpcroutes.yaml", version: "v1", obj: `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: r}
spec:
  rules:
  - matches: [{method: {type: Exact}}]`},
	{name: "gitrepository serviceAccountName with provider generic", crd: "flux-gitrepositories.yaml", version: "v1", obj: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo}
spec: {url: "https://example.com/repo.git", interval: 1m, provider: generic, serviceAccountName: sa}`},
	{name: "gitrepository valid", crd: "flux-gitrepositories.yaml", version: "v1", obj: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo}
spec: {url: "https://example.com/repo.git", interval: 1m, provider: azure, serviceAccountName: sa}`},
	{name: "bucket sts on generic", crd: "flux-buckets.yaml", version: "v1", obj: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata: {name: b}
spec: {bucketName: b, endpoint: s3.example.com, interval: 1m, provider: generic, sts: {provider: aws, endpoint: "https://sts.example.com"}}`},
}

// TestCELRulesAsKube installs real-world definitions with CEL rules in the
// binary and writes custom resources, valid and not: the definitions are
// accepted as kube accepts them, and each write's answer (accepted, or 422
// with its causes) is the one kube's own validators compute.
func TestCELRulesAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	installed := map[string]kubeCRD{}
	for _, tt := range celCases {
		t.Run(tt.name, func(t *testing.T) {
			crd, ok := installed[tt.crd]
			if !ok {
				if strings.HasPrefix(tt.crd, "{") {
					crd = parseCRD(t, []byte(tt.crd))
				} else {
					crd = readCRD(t, "testdata/crds/"+tt.crd)
				}
				if causes := crd.createCauses(t); len(causes) > 0 {
					t.Fatalf("kube refuses %s: %v", tt.crd, causes)
				}
				if code, causes, _ := write(t, "POST", srv.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.v1); code != http.StatusCreated {
					t.Fatalf("creating %s: %d %v", tt.crd, code, causes)
				}
				installed[tt.crd] = crd
			}
			url := fmt.Sprintf("%s/apis/%s/%s/namespaces/default/%s", srv.URL, crd.v1.Spec.Group, tt.version, crd.v1.Spec.Names.Plural)
			waitServed(t, url)
			obj := jsonObject(t, tt.obj)
			name := obj["metadata"].(map[string]any)["name"].(string)
			var old map[string]any
			method, target := "POST", url
			defer write(t, "DELETE", url+"/"+name, nil)
			if tt.old != "" {
				old = jsonObject(t, tt.old)
				code, causes, stored := write(t, "POST", url, old)
				if code != http.StatusCreated {
					t.Fatalf("creating the old object: %d %v", code, causes)
				}
				obj["metadata"].(map[string]any)["resourceVersion"] = stored["metadata"].(map[string]any)["resourceVersion"]
				method, target = "PUT", url+"/"+name
			}
			want := crd.objectCauses(t, tt.version, jsonObject(t, tt.obj), old)
			code, got, _ := write(t, method, target, obj)
			sameAnswer(t, want, code, got)
		})
	}
}

// celDefinition is a definition whose one version's schema is schema.
func celDefinition(schema string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"things","kind":"Thing"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + schema + `}}]}}`
}

// TestCELDefinitionRefusedAsKube creates definitions whose rules kube
// refuses (do not compile, cost too much alone or together) and some it
// accepts at the edge: the binary's answer is kube's, causes and messages.
func TestCELDefinitionRefusedAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	list := func(items, length string) string {
		return `{"type":"array",` + items + `"items":{"type":"string"` + length + `}}`
	}
	rules := func(n int, rule string) string {
		var rs []string
		for range n {
			rs = append(rs, fmt.Sprintf(`{"rule":%q}`, rule))
		}
		return strings.Join(rs, ",")
	}
	deep := `{"type":"string","maxLength":8}`
	for range 40 {
		deep = `{"type":"object","properties":{"c":` + deep + `},"x-kubernetes-validations":[{"rule":"has(self.c)"},{"rule":"self == oldSelf"}]}`
	}
	triple := func(maxItems string) string {
		return `{"type":"object","properties":{"l":` + list(`"maxItems":`+maxItems+`,`, `,"maxLength":10`) + `},"x-kubernetes-validations":[{"rule":"self.l.exists(x, self.l.exists(y, self.l.exists(z, x + y == z)))"}]}`
	}
	tests := []struct{ name, schema string }{
		{"deep schema", deep},
		{"300 rules with messageExpressions", `{"type":"object","properties":{"s":{"type":"string","maxLength":64}},"x-kubernetes-validations":[` + strings.Repeat(`{"rule":"self.s.size() < 10","messageExpression":"self.s + self.s"},`, 299) + `{"rule":"true"}]}`},
		{"triple loop within the limit", triple("80")},
		{"triple loop over it", triple("100")},
		{"concatenation in map", `{"type":"object","properties":{"s":{"type":"string","maxLength":1000},"l":` + list(`"maxItems":2000,`, `,"maxLength":10`) + `},"x-kubernetes-validations":[{"rule":"self.l.map(x, self.s + x + self.s).all(y, y.size() > 0)"},{"rule":"(self.s + self.s + self.s + self.s).size() > 0"}]}`},
		{"syntax error", `{"type":"object","x-kubernetes-validations":[{"rule":"self.a =="}]}`},
		{"undefined variable", `{"type":"object","x-kubernetes-validations":[{"rule":"other == 1"}]}`},
		{"not a bool", `{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.a + 1"}]}`},
		{"bad messageExpression", `{"type":"object","x-kubernetes-validations":[{"rule":"true","messageExpression":"1 + 1"}]}`},
		{"nested loops, unbounded", `{"type":"object","properties":{"l":` + list(``, ``) + `},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`},
		{"nested loops, bounded", `{"type":"object","properties":{"l":` + list(`"maxItems":10,`, `,"maxLength":10`) + `},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`},
		{"nested loops, bounded by 1000", `{"type":"object","properties":{"l":` + list(`"maxItems":1000,`, `,"maxLength":10`) + `},"x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, x == y))"}]}`},
		{"one loop", `{"type":"object","properties":{"l":` + list(``, ``) + `},"x-kubernetes-validations":[{"rule":"self.l.all(x, x.startsWith('a'))"}]}`},
		{"rule on every item, unbounded list", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self.matches('^[a-z]+$')"}]}}}}`},
		{"many rules together", `{"type":"object","properties":{"l":{"type":"array","maxItems":100000,"items":{"type":"object","properties":{"s":{"type":"string","maxLength":1000}},"x-kubernetes-validations":[` + rules(20, "self.s.matches('^[a-z]+$')") + `]}}}}`},
		{"costly messageExpression and map rule", thingsSchema},
		{"oldSelf under a list", `{"type":"object","properties":{"l":{"type":"array","maxItems":5,"items":{"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a == oldSelf.a"}]}}}}`},
		{"oldSelf under a map list", `{"type":"object","properties":{"l":{"type":"array","maxItems":5,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["a"],"items":{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.b == oldSelf.b"}]}}}}`},
		{"oldSelf under an atomic map", `{"type":"object","properties":{"m":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"a":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}}`},
		{"oldSelf in map values", `{"type":"object","properties":{"m":{"type":"object","maxProperties":5,"additionalProperties":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}`},
		{"oldSelf below a set in map values", `{"type":"object","properties":{"m":{"type":"object","maxProperties":5,"additionalProperties":{"type":"array","maxItems":5,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":5,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}}`},
		{"optionalOldSelf", `{"type":"object","properties":{"a":{"type":"string","maxLength":5}},"x-kubernetes-validations":[{"rule":"oldSelf.hasValue() || self.a == 'x'","optionalOldSelf":true},{"rule":"self.a == oldSelf.a","optionalOldSelf":false}]}`},
		{"optionalOldSelf without oldSelf", `{"type":"object","x-kubernetes-validations":[{"rule":"true","optionalOldSelf":true},{"rule":"self.x ==","optionalOldSelf":false}]}`},
		{"optional oldSelf not optional", `{"type":"object","properties":{"a":{"type":"string","maxLength":5}},"x-kubernetes-validations":[{"rule":"oldSelf.a.hasValue()"},{"rule":"self.a == oldSelf.a","optionalOldSelf":true}]}`},
		{"kube library function", `{"type":"object","properties":{"q":{"type":"string","maxLength":10}},"x-kubernetes-validations":[{"rule":"quantity(self.q).isGreaterThan(quantity('1'))"},{"rule":"self.q.matches('^[0-9]+$')"}]}`},
		{"timestamps and durations", `{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"every":{"type":"string","format":"duration"}},"x-kubernetes-validations":[{"rule":"self.at > timestamp('2020-01-01T00:00:00Z') && self.every < duration('1h')"}]}`},
		{"undefined field", `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}},"x-kubernetes-validations":[{"rule":"self.spec.b == 1"}]}`},
		{"type mismatch", `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}},"x-kubernetes-validations":[{"rule":"self.spec.a == 'x'"}]}`},
		{"escaped names", `{"type":"object","properties":{"x-y":{"type":"string","maxLength":5},"namespace":{"type":"string","maxLength":5}},"x-kubernetes-validations":[{"rule":"self.x__dash__y == self.__namespace__"}]}`},
		{"versions with their own schemas", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-validations":[{"rule":"self.a"}]}}},
	{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a =="}]}}}]}}`},
		{"map values", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string","maxLength":20}}},"x-kubernetes-validations":[{"rule":"self.m.all(k, self.m[k].size() < 10)"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := tt.schema
			if !strings.HasPrefix(def, `{"apiVersion"`) {
				def = celDefinition(def)
			}
			sameDefinitionAnswer(t, srv.URL, def)
		})
	}
}

// sameDefinitionAnswer creates the definition def (of things.example.com)
// in the binary at url, and deletes it if created: the answer is kube's.
func sameDefinitionAnswer(t *testing.T, url, def string) {
	t.Helper()
	crd := parseCRD(t, []byte(def))
	want := crd.createCauses(t)
	code, got, _ := write(t, "POST", url+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.v1)
	// kube visits a schema's properties in map order.
	sortCauses(want)
	sortCauses(got)
	if code < 300 {
		defer write(t, "DELETE", url+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.com", nil)
	}
	sameAnswer(t, want, code, got)
}
