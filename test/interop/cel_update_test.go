package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/listwatch/listwatch/internal/testwait"
)

// gaugesCRD has the rule forms whose answer on update differs from create:
// plain rules on values that may be left unchanged (ratcheting), transition
// rules on list-type map items and map values, optionalOldSelf rules.
const gaugesCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gauges.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
 "names":{"plural":"gauges","kind":"Gauge"},
 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",
  "x-kubernetes-validations":[{"rule":"!has(self.b) || self.b != 'bad'","message":"b must not be bad"}],
  "properties":{
   "a":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self != 'bad'"}]},
   "b":{"type":"string","maxLength":10},
   "ports":{"type":"array","maxItems":10,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
    "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string","maxLength":10},"port":{"type":"integer"}},
     "x-kubernetes-validations":[{"rule":"self.port >= oldSelf.port","message":"port may only grow"},{"rule":"self.port < 1000","reason":"FieldValueForbidden","fieldPath":".port"}]}},
   "tags":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self != 'bad'","messageExpression":"'tag ' + self + ' is bad'"}]}},
   "labels":{"type":"object","maxProperties":5,"additionalProperties":{"type":"string","maxLength":10,
    "x-kubernetes-validations":[{"rule":"self == oldSelf","message":"labels are immutable"},{"rule":"self != 'bad'"}]}},
   "mode":{"type":"string","maxLength":10,"x-kubernetes-validations":[
    {"rule":"!oldSelf.hasValue() || oldSelf.value() == self || self == 'free'","optionalOldSelf":true,"message":"mode is fixed"},
    {"rule":"oldSelf.hasValue() || self != 'late'","optionalOldSelf":true,"message":"late only on update"}]}}}}}}}]}}`

// celUpdateCase is an object stored, then updated in turn: each update's
// answer must be kube's, with the stored object the last one accepted.
type celUpdateCase struct {
	name, crd, version, stored string
	updates                    []string
}

var celUpdateCases = []celUpdateCase{
	{name: "crafted", crd: gaugesCRD, version: "v1", stored: `
apiVersion: example.com/v1
kind: Gauge
metadata: {name: g}
spec: {a: bad, tags: [bad], ports: [{name: p, port: 1}, {name: q, port: 5000}], labels: {k: bad}, mode: m}`,
		updates: []string{
			// Every invalid value unchanged: kube ratchets them all.
			`{spec: {a: bad, b: x, tags: [bad], ports: [{name: p, port: 1}, {name: q, port: 5000}], labels: {k: bad}, mode: m}}`,
			// A list-type map reordered is unchanged; the atomic list is not.
			`{spec: {a: bad, b: x, tags: [bad, ok], ports: [{name: q, port: 5000}, {name: p, port: 1}], labels: {k: bad}, mode: m}}`,
			// Items pair with old ones by key; a new one has none.
			`{spec: {a: bad, b: x, tags: [bad], ports: [{name: q, port: 4}, {name: p, port: 1}, {name: z, port: 0}], labels: {k: bad}, mode: m}}`,
			`{spec: {a: bad, b: x, tags: [bad], ports: [{name: p, port: 1}, {name: q, port: 5000}], labels: {k: worse, n: v}, mode: m}}`,
			`{spec: {a: bad, b: x, tags: [bad], ports: [{name: p, port: 1}, {name: q, port: 5000}], labels: {k: bad}, mode: late}}`,
			`{spec: {a: worse, b: bad, tags: [bad], ports: [{name: p, port: 1}, {name: q, port: 5000}], labels: {k: bad}, mode: m}}`,
			`{spec: {a: good, b: x, tags: [ok], ports: [{name: p, port: 2}, {name: q, port: 5001}], labels: {k: bad}, mode: m}}`,
			`{spec: {a: good, b: x, tags: [ok], ports: [{name: p, port: 2}], labels: {k: bad}, mode: free}}`,
		}},
	{name: "gatewayclass controllerName immutable", crd: "gateway-api-gatewayclasses.yaml", version: "v1", stored: `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: gc}
spec: {controllerName: example.com/a}`,
		updates: []string{
			`{spec: {controllerName: example.com/a, description: changed}}`,
			`{spec: {controllerName: example.com/b}}`,
		}},
	{name: "gateway listeners ratchet", crd: "gateway-api-gateways.yaml", version: "v1", stored: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 80, tls: {certificateRefs: [{name: cert}]}}
  - {name: other, protocol: HTTP, port: 81}`,
		updates: []string{
			`{spec: {gatewayClassName: changed, listeners: [{name: http, protocol: HTTP, port: 80, tls: {certificateRefs: [{name: cert}]}}, {name: other, protocol: HTTP, port: 81}]}}`,
			`{spec: {gatewayClassName: changed, listeners: [{name: http, protocol: HTTP, port: 80, tls: {certificateRefs: [{name: cert}]}}, {name: other, protocol: HTTP, port: 82}]}}`,
			`{spec: {gatewayClassName: changed, listeners: [{name: other, protocol: HTTP, port: 81}]}}`,
		}},
}

// TestCELUpdatesAsKube stores an object, under the definition without its
// rules when they refuse it (as after a definition tightened), then updates
// it through the binary: each answer (accepted, or 422 with its causes) is
// the one kube's validator computes with its ratcheting of rules, with the
// warnings kube adds for the failures ratcheting lets through, and oldSelf
// is the last object accepted.
func TestCELUpdatesAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	crds := srv.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, tt := range celUpdateCases {
		t.Run(tt.name, func(t *testing.T) {
			var crd kubeCRD
			if strings.HasPrefix(tt.crd, "{") {
				crd = parseCRD(t, []byte(tt.crd))
			} else {
				crd = readCRD(t, "testdata/crds/"+tt.crd)
			}
			if causes := crd.createCauses(t); len(causes) > 0 {
				t.Fatalf("kube refuses %s: %v", tt.crd, causes)
			}
			ns := "namespaces/default/"
			if crd.v1.Spec.Scope == "Cluster" {
				ns = ""
			}
			url := fmt.Sprintf("%s/apis/%s/%s/%s%s", srv.URL, crd.v1.Spec.Group, tt.version, ns, crd.v1.Spec.Names.Plural)
			stored := tt.stored
			refused := len(crd.objectCauses(t, tt.version, jsonObject(t, stored), nil)) > 0
			var def any = crd.v1
			if refused {
				def = withoutRules(t, crd.v1)
			}
			if code, causes, _ := write(t, "POST", crds, def); code != http.StatusCreated {
				t.Fatalf("creating %s: %d %v", tt.crd, code, causes)
			}
			defer write(t, "DELETE", crds+"/"+crd.v1.Name, nil)
			waitServed(t, url)
			code, causes, obj := write(t, "POST", url, jsonObject(t, stored))
			if code != http.StatusCreated {
				t.Fatalf("storing the object: %d %v", code, causes)
			}
			name := obj["metadata"].(map[string]any)["name"].(string)
			rv := obj["metadata"].(map[string]any)["resourceVersion"]
			if refused {
				tighten(t, crds+"/"+crd.v1.Name, crd, url, stored)
			}
			kube := crd.warnedValidator(t, tt.version)
			for i, u := range tt.updates {
				next := jsonObject(t, u)
				for k, v := range jsonObject(t, stored) {
					if _, ok := next[k]; !ok {
						next[k] = v
					}
				}
				b, err := json.Marshal(next)
				if err != nil {
					t.Fatal(err)
				}
				want, wantWarned := kube(t, jsonObject(t, string(b)), jsonObject(t, stored))
				next["metadata"] = map[string]any{"name": name, "resourceVersion": rv}
				code, got, obj, warned := writeWarned(t, "PUT", url+"/"+name, next)
				t.Logf("update %d: kube %v, warnings %q", i, want, wantWarned)
				sameAnswer(t, want, code, got)
				// kube's order of warnings follows its schema's map iteration.
				if diff := cmp.Diff(wantWarned, warned, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
					t.Errorf("warnings (-kube +listwatch):\n%s", diff)
				}
				if code == http.StatusOK {
					stored, rv = string(b), obj["metadata"].(map[string]any)["resourceVersion"]
				}
			}
		})
	}
}

// withoutRules is the definition without its x-kubernetes-validations.
func withoutRules(t testing.TB, def any) map[string]any {
	t.Helper()
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var drop func(any)
	drop = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "x-kubernetes-validations")
			for _, x := range v {
				drop(x)
			}
		case []any:
			for _, x := range v {
				drop(x)
			}
		}
	}
	drop(m)
	return m
}

// tighten gives the definition at defURL its rules again and waits until
// they refuse a new object like stored, written with dryRun.
func tighten(t *testing.T, defURL string, crd kubeCRD, url, stored string) {
	t.Helper()
	versions, err := json.Marshal(crd.v1.Spec.Versions)
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"versions":` + string(versions) + `}}`)
	if code, b := fetch(t, "PATCH", defURL, http.Header{"Content-Type": {"application/merge-patch+json"}}, patch); code != http.StatusOK {
		t.Fatalf("adding the rules: %d %s", code, b)
	}
	probe := jsonObject(t, stored)
	probe["metadata"] = map[string]any{"name": "probe"}
	testwait.UntilNil(t, binStartTimeout, "the rules to apply", func() error {
		if code, _, _ := write(t, "POST", url+"?dryRun=All", probe); code != http.StatusUnprocessableEntity {
			return fmt.Errorf("a probe answered %d", code)
		}
		return nil
	})
}

// TestCELRatchetNumberFormsAsKube updates a number that fails its rule
// to the same number written otherwise: kube's ratcheting compares the
// decoded values with reflect.DeepEqual, so an integer (int64) and the
// same integer written as a float (float64) differ, and the rule blocks.
func TestCELRatchetNumberFormsAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	crds := srv.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := parseCRD(t, []byte(celDefinition(`{"type":"object","properties":{"spec":{"type":"object","properties":{
		"n":{"type":"number","x-kubernetes-validations":[{"rule":"self < 1.0"}]},
		"l":{"type":"array","maxItems":5,"items":{"type":"number"},"x-kubernetes-validations":[{"rule":"self.all(x, x < 1.0)"}]}}}}}`)))
	if code, causes, _ := write(t, "POST", crds, withoutRules(t, crd.v1)); code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", code, causes)
	}
	url := srv.URL + "/apis/example.com/v1/namespaces/default/things"
	waitServed(t, url)
	const stored = `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"n"},"spec":{"n":5,"l":[5.0,1e1]}}`
	code, b, _ := fetchHeader(t, "POST", url, http.Header{"Content-Type": {"application/json"}}, []byte(stored))
	if code != http.StatusCreated {
		t.Fatalf("storing the object: %d %s", code, b)
	}
	tighten(t, crds+"/"+crd.v1.Name, crd, url, stored)
	kube := crd.warnedValidator(t, "v1")
	decode := func(s string) map[string]any {
		var m map[string]any
		if err := utiljson.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, spec := range []string{`{"n":5,"l":[5.0,1e1]}`, `{"n":5.0,"l":[5.0,1e1]}`, `{"n":5,"l":[5,10]}`, `{"n":5e0,"l":[5.0,1e1]}`} {
		t.Run(spec, func(t *testing.T) {
			next := `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"n"},"spec":` + spec + `}`
			want, wantWarned := kube(t, decode(next), decode(stored))
			code, b, header := fetchHeader(t, "PUT", url+"/n", http.Header{"Content-Type": {"application/json"}}, []byte(next))
			t.Logf("kube %v, warnings %q", want, wantWarned)
			var got []metav1.StatusCause
			if code >= 300 {
				var st metav1.Status
				if err := json.Unmarshal(b, &st); err != nil || st.Details == nil {
					t.Fatalf("%d %s", code, b)
				}
				got = st.Details.Causes
			}
			sameAnswer(t, want, code, got)
			if diff := cmp.Diff(wantWarned, warningTexts(t, header), cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("warnings (-kube +listwatch):\n%s", diff)
			}
		})
	}
}
