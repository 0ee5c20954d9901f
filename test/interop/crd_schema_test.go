package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	kubejson "k8s.io/apimachinery/pkg/util/json"
	fielderr "k8s.io/apimachinery/pkg/util/validation/field"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/crd"
)

// kubeSchema is one version's schema as kube's apiextensions server holds it.
type kubeSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

func newKubeSchema(t testing.TB, v1 *apiextensionsv1.JSONSchemaProps) *kubeSchema {
	t.Helper()
	var in apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, &in, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(&in)
	if err != nil {
		t.Fatal(err)
	}
	val, _, err := validation.NewSchemaValidator(&in)
	if err != nil {
		t.Fatal(err)
	}
	return &kubeSchema{structural: s, validator: val}
}

// create is what kube's decoder and custom resource strategy do with a new
// object: prune, default, then validate against the schema and the list
// types (not the CEL rules). It returns the causes as kube's Status has them.
func (k *kubeSchema) create(obj map[string]any) []api.StatusCause {
	structuralpruning.Prune(obj, k.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, k.structural)
	structuraldefaulting.Default(obj, k.structural)
	errs := validation.ValidateCustomResource(nil, obj, k.validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.structural, obj)...)
	return apiCauses(errs)
}

// update is what kube's custom resource strategy checks of a schema on
// update, ratcheting against old, the stored object.
func (k *kubeSchema) update(obj, old map[string]any) []api.StatusCause {
	errs := validation.ValidateCustomResourceUpdate(nil, obj, old, k.validator, validation.WithRatcheting(nil))
	if len(listtype.ValidateListSetsAndMaps(nil, k.structural, old)) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.structural, obj)...)
	}
	return apiCauses(errs)
}

// apiCauses are field errors as kube's Status has them.
func apiCauses(errs fielderr.ErrorList) []api.StatusCause {
	causes := make([]api.StatusCause, len(errs))
	for i, e := range errs {
		causes[i] = api.StatusCause{Type: api.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field}
	}
	return causes
}

// ours does the same with listwatch's schema.
func ours(t testing.TB, raw []byte, obj api.Object) []api.StatusCause {
	t.Helper()
	s, err := crd.ParseSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	s.PruneAndDefault(obj)
	return s.Validate(obj)
}

// compareWithKube creates the object doc under kube's schema and ours
// (raw): the causes, set aside their order (kube takes it from map
// iteration), and the stored objects must be the same. It returns kube's.
func compareWithKube(t *testing.T, kube *kubeSchema, raw, doc []byte) []api.StatusCause {
	t.Helper()
	var kubeObj map[string]any
	if err := kubejson.Unmarshal(doc, &kubeObj); err != nil {
		t.Fatal(err)
	}
	want := kube.create(kubeObj)
	obj, err := api.ParseObject(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := ours(t, raw, obj)
	if diff := cmp.Diff(sortedCauses(want), sortedCauses(got)); diff != "" {
		t.Errorf("%s: causes (-kube +listwatch):\n%s", doc, diff)
	}
	if diff := cmp.Diff(normalize(t, kubeObj), normalize(t, obj)); diff != "" {
		t.Errorf("%s: stored object (-kube +listwatch):\n%s", doc, diff)
	}
	return want
}

// yamlDocs reads every document of a YAML file as JSON.
func yamlDocs(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := kubeyaml.NewYAMLOrJSONDecoder(f, 4096)
	var docs [][]byte
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(raw)) > 0 && string(raw) != "null" {
			docs = append(docs, raw)
		}
	}
}

// gatewaySchemas returns the openAPIV3Schema of every version of the
// gateway-api CRDs, by "group/version/Kind".
func gatewaySchemas(t testing.TB) map[string]*apiextensionsv1.JSONSchemaProps {
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, doc := range yamlDocs(t, "testdata/crds/gateway-api/standard-install.yaml") {
		var d apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Spec.Versions {
			out[d.Spec.Group+"/"+v.Name+"/"+d.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
		}
	}
	return out
}

// TestCRDSchemaMatchesKube runs gateway-api's CRDs and kube's own test
// objects for them, valid and invalid, through kube's pruning, defaulting,
// schema and list-type validation and through ours.
func TestCRDSchemaMatchesKube(t *testing.T) {
	schemas := gatewaySchemas(t)
	rejected := 0
	err := filepath.WalkDir("testdata/crds/gateway-api", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "testdata/crds/gateway-api/standard-install.yaml" || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		for i, doc := range yamlDocs(t, path) {
			var tm struct{ APIVersion, Kind string }
			if err := json.Unmarshal(doc, &tm); err != nil {
				t.Fatal(err)
			}
			schema := schemas[tm.APIVersion+"/"+tm.Kind]
			if schema == nil {
				continue // a built-in kind, such as Namespace
			}
			raw, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(strings.TrimPrefix(path, "testdata/crds/gateway-api/")+"#"+strconv.Itoa(i), func(t *testing.T) {
				if len(compareWithKube(t, newKubeSchema(t, schema), raw, doc)) > 0 {
					rejected++
				}
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rejected == 0 {
		t.Error("kube rejected no object: the cases test nothing")
	}
	t.Logf("%d objects rejected by kube's schema checks", rejected)
}

// sortedCauses is cs in a fixed order: kube's follows map iteration.
func sortedCauses(cs []api.StatusCause) []api.StatusCause {
	if len(cs) == 0 {
		return nil
	}
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b api.StatusCause) int {
		return strings.Compare(a.Field+"\x00"+a.Message, b.Field+"\x00"+b.Message)
	})
	return cs
}

// normalize turns an object into plain JSON values, numbers as float64.
func normalize(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCRDSchemaEdgesMatchKube compares hand-made objects, chosen for the
// corners of list types, junctors and formats, with kube's answers.
func TestCRDSchemaEdgesMatchKube(t *testing.T) {
	withFormats := edgeSchema()
	objects := []string{
		`{}`,
		`{"data":"x"}`,
		`{"spec":{"forbidden":"x"}}`,
		`{"spec":{"ip":"10.0.0.1"}}`,
		`{"spec":{"ip":"010.000.000.001"}}`,
		`{"spec":{"ip":"::1"}}`,
		`{"spec":{"ip":"10.0.0.0/8"}}`,
		`{"spec":{"ip":"not-an-ip"}}`,
		`{"spec":{"code":"abc"}}`,
		`{"spec":{"code":"bad"}}`,
		`{"spec":{"code":"ABCD"}}`,
		`{"spec":{"port":5}}`,
		`{"spec":{"port":50}}`,
		`{"spec":{"port":100}}`,
		`{"spec":{"strs":["a","b","a","a","c","b"]}}`,
		`{"spec":{"nums":[1,2,1,3]}}`,
		`{"spec":{"objs":[{"a":1,"b":"x"},{"b":"x","a":1},{"a":2}]}}`,
		`{"spec":{"one":[{"name":"a","v":1},{"name":"b"},{"name":"a","v":2},{"v":3},{"v":4}]}}`,
		`{"spec":{"one":[{"name":"a"},"text"]}}`,
		`{"spec":{"one":[{"name":"a"},null,null]}}`,
		`{"spec":{"two":[{"name":"a"},{"name":"a","proto":"UDP"},{"name":"a","proto":"TCP","inner":["x","x"]}]}}`,
		`{"spec":{"byName":{"k":["x","y","x"],"l":["z"]}}}`,
		`{"spec":{"formats":{"ipv4":"1.2.3","ipv6":"1.2.3.4","cidr":"10.0.0.0/33","mac":"00:00:5e:00:53:01","hostname":"-x",
			"email":"a@b.c","uri":"relative/path","uuid":"A987FBC9-4BED-3078-CF07-9141BA07C9F3","uuid3":"a987fbc94bed3078cf079141ba07c9f3",
			"uuid4":"a987fbc9-4bed-3078-cf07-9141ba07c9f3","uuid5":"x","hexcolor":"#abc","rgbcolor":"rgb(1,2,300)","ssn":"123-45-6789",
			"bsonobjectid":"507f1f77bcf86cd799439011","date":"2026-02-30","date-time":"2026-01-01T00:00:00Z","byte":"aGk=",
			"k8s-short-name":"Upper","k8s-long-name":"a.b-c.d","password":"anything","unknown":"anything"}}}`,
		`{"spec":{"name":"ABCD"}}`,
		`{"spec":{"name":"a"}}`,
		`{"spec":{"name":"a1"}}`,
		`{"spec":{"name":7,"count":"x"}}`,
		`{"spec":{"name":["ab"],"count":1.5}}`,
		`{"spec":{"count":3000000000,"port":5.5}}`,
		`{"spec":{"count":2.0,"port":1e300}}`,
		`{"spec":{"service":"a","ports":[1,2]}}`,
		`{"spec":{"labels":{"a":null,"b":"x","c":"y"},"notes":{"n":null,"m":"z"},"weights":[null,5000000,-3,-3.5,2000000.5]}}`,
		`{"spec":{"count":[1],"code":{"a":1},"forbidden":true}}`,
		`{"spec":"text","data":7}`,
		`{"spec":{"formats":{"duration":"forever","date-time":5,"ipv4":["a"],"date":true,"password":1,"uri":{"a":"b"},"unknown":2}}}`,
		`{"spec":{"formats":{"duration":"1h30m"}}}`,
		`{"spec":{"formats":{"duration":"3 days 4 hours"}}}`,
		`{"spec":{"formats":{"duration":"10 fortnights"}}}`,
		`{"spec":{"formats":{"duration":"99999999999999999999 s"}}}`,
		`{"spec":{"formats":{"ipv4":"1.2.3.4","ipv6":"fe80::1","cidr":"::/0","mac":"nope","hostname":"example.com",
			"email":"nope","uri":"https://x.example/p?q","uuid":"nope","uuid3":"a987fbc9-4bed-4078-8f07-9141ba07c9f3",
			"uuid4":"a987fbc9-4bed-4078-8f07-9141ba07c9f3","uuid5":"a987fbc9-4bed-5078-af07-9141ba07c9f3","hexcolor":"abcd",
			"rgbcolor":"rgb(1, 2, 3)","ssn":"123456789","bsonobjectid":"507f","date":"2026-02-28","date-time":"yesterday",
			"byte":"!!","k8s-short-name":"ok-name","k8s-long-name":"a..b"}}}`,
	}
	kube := newKubeSchema(t, parseSchemaProps(t, withFormats))
	for i, o := range objects {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			compareWithKube(t, kube, []byte(withFormats), []byte(o))
		})
	}
}

// edgeSchema is a schema with list types, junctors and every format kube
// knows, for hand-made objects at their corners.
func edgeSchema() string {
	const schema = `{"type":"object","anyOf":[{"required":["spec"]},{"required":["data"]}],"properties":{
	"data":{"type":"string"},
	"spec":{"type":"object","not":{"required":["forbidden"]},"properties":{
		"forbidden":{"type":"string"},
		"name":{"type":"string","minLength":2,"maxLength":3,"pattern":"^[a-z]+$","enum":["ab","abc","ABCD"]},
		"count":{"type":"integer","format":"int32","minimum":1,"enum":[1,2]},
		"labels":{"type":"object","maxProperties":2,"additionalProperties":{"type":"string","default":"d"}},
		"notes":{"type":"object","additionalProperties":{"type":"string"}},
		"weights":{"type":"array","items":{"type":"number","default":1,"maximum":1e6,"minimum":-2.5}},
		"ip":{"type":"string","oneOf":[{"format":"ipv4"},{"format":"ipv6"},{"format":"cidr"}]},
		"code":{"type":"string","allOf":[{"maxLength":3},{"pattern":"^[a-z]+$"},{"not":{"enum":["bad"]}}]},
		"service":{"type":"string","enum":["VPS","Dedicated"],"allOf":[{"enum":["VPS","Dedicated"]},{"allOf":[{"enum":["VPS","Dedicated"]}]}]},
		"ports":{"type":"array","maxItems":1,"items":{"type":"integer"}},
		"port":{"type":"integer","anyOf":[{"minimum":1,"maximum":10},{"minimum":100}]},
		"formats":{"type":"object","additionalProperties":{"type":"string"}},
		"strs":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
		"nums":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"integer"}},
		"objs":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}},
		"one":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
			"items":{"type":"object","properties":{"name":{"type":"string"},"v":{"type":"integer"}}}},
		"two":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name","proto"],
			"items":{"type":"object","properties":{"name":{"type":"string"},"proto":{"type":"string","default":"TCP"},
				"inner":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}}}},
		"byName":{"type":"object","additionalProperties":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}}}}}}`
	formats := []string{"ipv4", "ipv6", "cidr", "mac", "hostname", "email", "uri", "uuid", "uuid3", "uuid4", "uuid5",
		"hexcolor", "rgbcolor", "ssn", "bsonobjectid", "date", "date-time", "duration", "byte", "k8s-short-name", "k8s-long-name", "password", "unknown"}
	var props []string
	for _, f := range formats {
		props = append(props, `"`+f+`":{"type":"string","format":"`+f+`"}`)
	}
	return strings.Replace(schema, `"formats":{"type":"object","additionalProperties":{"type":"string"}}`,
		`"formats":{"type":"object","properties":{`+strings.Join(props, ",")+`}}`, 1)
}

func parseSchemaProps(t testing.TB, raw string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(raw), &v1); err != nil {
		t.Fatal(err)
	}
	return &v1
}

// TestCRDSchemaRatchetingMatchesKube updates stored objects that the schema
// rejects, as after a CRD tightened it, and compares ours with kube's
// ratcheting validation (kube 1.30+): unchanged invalid values pass,
// changed ones, and new ones, do not.
func TestCRDSchemaRatchetingMatchesKube(t *testing.T) {
	raw := edgeSchema()
	kube := newKubeSchema(t, parseSchemaProps(t, raw))
	s, err := crd.ParseSchema([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new string
		rejected       bool // by kube, which the case is there to show
	}{
		{"unchanged", `{"spec":{"code":"ABCD","ip":"no"}}`, `{"spec":{"code":"ABCD","ip":"no"}}`, false},
		{"other field changed", `{"spec":{"code":"ABCD","ip":"no"}}`, `{"spec":{"code":"ABCD","ip":"no","port":5}}`, false},
		{"invalid field changed", `{"spec":{"code":"ABCD"}}`, `{"spec":{"code":"ABCDE"}}`, true},
		{"new invalid field", `{"spec":{"code":"ABCD"}}`, `{"spec":{"code":"ABCD","port":50}}`, true},
		{"map item by key", `{"spec":{"one":[{"name":"a","v":"x"},{"name":"b","v":"y"}]}}`, `{"spec":{"one":[{"name":"b","v":"y"},{"name":"a","v":"x"}]}}`, false},
		{"map item changed", `{"spec":{"one":[{"name":"a","v":"x"}]}}`, `{"spec":{"one":[{"name":"a","v":"z"}]}}`, true},
		{"map item pairs with the first old one of its key", `{"spec":{"one":[{"name":"a","v":"x"},{"name":"a","v":1}]}}`, `{"spec":{"one":[{"name":"a","v":"x"}]}}`, false},
		{"map item without its key does not correlate", `{"spec":{"one":[{"v":"x"}]}}`, `{"spec":{"one":[{"v":"x"},{"name":"b"}]}}`, true},
		{"atomic list items do not correlate", `{"spec":{"nums":[1,"x"]}}`, `{"spec":{"nums":["x",1]}}`, true},
		{"old duplicates allow new ones", `{"spec":{"strs":["a","a"]}}`, `{"spec":{"strs":["b","b"]}}`, false},
		{"new duplicates", `{"spec":{"strs":["a"]}}`, `{"spec":{"strs":["b","b"]}}`, true},
		{"root junctor", `{"spec":{"forbidden":"x"}}`, `{"spec":{"forbidden":"x"},"data":"y"}`, false},
		{"junctor below a changed node", `{"spec":{"one":[],"ip":"no"}}`, `{"spec":{"one":[{"name":"a"}],"ip":"no"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kubeObj, kubeOld map[string]any
			if err := kubejson.Unmarshal([]byte(tt.new), &kubeObj); err != nil {
				t.Fatal(err)
			}
			if err := kubejson.Unmarshal([]byte(tt.old), &kubeOld); err != nil {
				t.Fatal(err)
			}
			want := kube.update(kubeObj, kubeOld)
			obj, err := api.ParseObject([]byte(tt.new))
			if err != nil {
				t.Fatal(err)
			}
			old, err := api.ParseObject([]byte(tt.old))
			if err != nil {
				t.Fatal(err)
			}
			got := s.ValidateUpdate(obj, old)
			if diff := cmp.Diff(sortedCauses(want), sortedCauses(got)); diff != "" {
				t.Errorf("causes (-kube +listwatch):\n%s", diff)
			}
			if rejected := len(want) > 0; rejected != tt.rejected {
				t.Errorf("kube rejected: %v, the case expects %v: %v", rejected, tt.rejected, want)
			}
		})
	}
}

// TestCRDDefaultsOnReadMatchKube creates gateway-api's Gateway CRD and a
// Gateway on the binary. kube drops the status of a create and its storage
// decoder applies the schema's defaults to what it reads, so the Gateway
// is answered, read and listed with its status default: conditions Unknown.
func TestCRDDefaultsOnReadMatchKube(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary")
	}
	var def []byte
	for _, doc := range yamlDocs(t, "testdata/crds/gateway-api/standard-install.yaml") {
		if bytes.Contains(doc, []byte(`"name":"gateways.gateway.networking.k8s.io"`)) {
			def = doc
		}
	}
	gateway := yamlDocs(t, "testdata/crds/gateway-api/valid/simple-gateway/gateway.yaml")[0]

	kube := newKubeSchema(t, gatewaySchemas(t)["gateway.networking.k8s.io/v1beta1/Gateway"])
	var want map[string]any
	if err := kubejson.Unmarshal(gateway, &want); err != nil {
		t.Fatal(err)
	}
	if causes := kube.create(want); len(causes) > 0 {
		t.Fatalf("kube rejects the Gateway: %v", causes)
	}
	delete(want, "status") // the status strategy's PrepareForCreate
	structuralpruning.Prune(want, kube.structural, true)
	structuraldefaulting.Default(want, kube.structural)
	if want["status"] == nil {
		t.Fatal("kube reads no status back: the case tests nothing")
	}

	lw := StartListwatch(t, listwatchBin(t))
	send(t, "POST", lw.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", string(def), http.StatusCreated)
	gateways := lw.URL + "/apis/gateway.networking.k8s.io/v1beta1/namespaces/default/gateways"
	waitServed(t, gateways)
	created := mustSend(t, "POST", gateways, string(gateway), http.StatusCreated)
	read := mustSend(t, "GET", gateways+"/prod-web", "", http.StatusOK)
	items, _ := mustSend(t, "GET", gateways, "", http.StatusOK)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("list: %d items, want 1", len(items))
	}
	listed, _ := items[0].(map[string]any)
	for name, got := range map[string]map[string]any{"create response": created, "read": read, "list": listed} {
		for _, f := range []string{"spec", "status"} {
			if diff := cmp.Diff(normalize(t, want[f]), normalize(t, got[f])); diff != "" {
				t.Errorf("%s: %s (-kube +listwatch):\n%s", name, f, diff)
			}
		}
	}
}

// mustSend makes one request, fails t unless it gets code, and decodes the answer.
func mustSend(t *testing.T, method, url, body string, code int) map[string]any {
	t.Helper()
	got, b := fetch(t, method, url, http.Header{"Content-Type": {"application/json"}}, []byte(body))
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil || got != code {
		t.Fatalf("%s %s: %d %s %v, want %d", method, url, got, b, err, code)
	}
	return out
}

// TestCRDPruningMatchesKube compares pruning around
// x-kubernetes-preserve-unknown-fields with kube's: the items of a list
// that preserves unknown fields keep theirs (skipPrune), at any depth,
// while the properties the items declare are pruned as usual.
func TestCRDPruningMatchesKube(t *testing.T) {
	const schema = `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"kept":{"type":"array","x-kubernetes-preserve-unknown-fields":true,"items":{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"string"}}}}}},
		"nested":{"type":"array","x-kubernetes-preserve-unknown-fields":true,"items":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}},
		"inner":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}}}},
		"plain":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}},
		"obj":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}}}}}}}}}}`
	objects := []string{
		`{"spec":{"kept":[{"a":{"x":"1","y":"2"},"b":3},"text",[{"c":1}]]}}`,
		`{"spec":{"nested":[[{"a":"1","b":2}],[[{"c":3}]]]}}`,
		`{"spec":{"inner":[{"l":[{"a":"1","b":2}],"u":1}]}}`,
		`{"spec":{"plain":[{"a":"1","b":2}],"obj":{"l":[{"a":"1","b":2}],"u":{"v":1}}}}`,
	}
	kube := newKubeSchema(t, parseSchemaProps(t, schema))
	for i, o := range objects {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			compareWithKube(t, kube, []byte(schema), []byte(o))
		})
	}
}
