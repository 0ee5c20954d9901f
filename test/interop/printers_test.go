package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// printerCRDs are the real-world definitions of the printer tests
// (testdata/crds/README.md says where each comes from), with objects whose
// cells differ: several matches of a wildcard, a filter that matches and
// one that does not, status present and absent. PrometheusRule defines no
// columns, so it gets kube's default Age.
var printerCRDs = []struct {
	file    string
	objects []string
}{
	{"gateways.yaml", []string{
		`{"metadata":{"name":"two-addresses"},"spec":{"gatewayClassName":"example","listeners":[{"name":"http","port":80,"protocol":"HTTP"}]},
		  "status":{"addresses":[{"value":"10.0.0.1"},{"type":"Hostname","value":"gw.example.com"}],
		    "conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"","lastTransitionTime":"2020-01-02T03:04:05Z"},
		                  {"type":"Programmed","status":"False","reason":"Pending","message":"","lastTransitionTime":"2020-01-02T03:04:05Z"}]}}`,
		`{"metadata":{"name":"no-status"},"spec":{"gatewayClassName":"other","listeners":[{"name":"http","port":80,"protocol":"HTTP"}]}}`,
	}},
	{"cert-manager.io_certificates.yaml", []string{
		`{"metadata":{"name":"ready"},"spec":{"secretName":"tls","issuerRef":{"name":"ca-issuer"},"dnsNames":["a.example.com"]},
		  "status":{"conditions":[{"type":"Issuing","status":"False"},{"type":"Ready","status":"True","message":"Certificate is up to date and has not expired"}]}}`,
		`{"metadata":{"name":"issuing"},"spec":{"secretName":"tls2","issuerRef":{"name":"ca-issuer"},"dnsNames":["b.example.com"]},
		  "status":{"conditions":[{"type":"Issuing","status":"True"}]}}`,
	}},
	{"prometheusrules.yaml", []string{
		`{"metadata":{"name":"rules"},"spec":{"groups":[{"name":"g","rules":[{"alert":"Down","expr":"up == 0"}]}]}}`,
	}},
}

// TestPrinterCellsAsKube computes the Table cells of custom resources with
// the server's code and with kube's CRD table convertor
// (k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor)
// and wants them equal: every column type (string, integer, number,
// boolean, date) on every kind of JSON value, and the real definitions'
// columns, in every version, with kube's default columns where none are
// listed.
func TestPrinterCellsAsKube(t *testing.T) {
	typed := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "cells.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "cells", Singular: "cell", Kind: "Cell", ListKind: "CellList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "S", Type: "string", JSONPath: ".spec.v"},
					{Name: "I", Type: "integer", JSONPath: ".spec.v", Format: "int32"},
					{Name: "N", Type: "number", JSONPath: ".spec.v", Description: "a number"},
					{Name: "B", Type: "boolean", JSONPath: ".spec.v", Priority: 1},
					{Name: "D", Type: "date", JSONPath: ".spec.v"},
					{Name: "First", Type: "string", JSONPath: ".spec.v[0]"},
					{Name: "All", Type: "string", JSONPath: ".spec.v[*]"},
					{Name: "Ports", Type: "integer", JSONPath: ".spec.items[*].ports[0]"},
					{Name: "One", Type: "string", JSONPath: ".spec.items[?(@.n == 1)].name"},
					{Name: "Big", Type: "string", JSONPath: ".spec.items[?(@.n > 1.5)].name"},
					{Name: "On", Type: "string", JSONPath: ".spec.items[?(@.on == true)].name"},
					{Name: "Named", Type: "string", JSONPath: ".spec.items[?(@.name)].name"},
					{Name: "Last", Type: "string", JSONPath: ".spec.items[-1].name"},
					{Name: "Names", Type: "string", JSONPath: ".spec.items[*].name"},
					{Name: "Slice", Type: "string", JSONPath: ".spec.items[1:].name"},
					{Name: "Step", Type: "string", JSONPath: ".spec.items[::2].name"},
					{Name: "Tail", Type: "string", JSONPath: ".spec.items[-2:-1].name"},
					{Name: "Empty", Type: "string", JSONPath: ".spec.items[1:1].name"},
					{Name: "Index", Type: "string", JSONPath: ".spec.v[]"},
					{Name: "Union", Type: "string", JSONPath: ".spec.items[1,0].name"},
					{Name: "Keys", Type: "string", JSONPath: ".spec['v','items']"},
					{Name: "Dotted", Type: "string", JSONPath: ".spec['items.x']"},
					{Name: "Deep", Type: "string", JSONPath: ".spec..name"},
					{Name: "DeepPorts", Type: "integer", JSONPath: ".spec..ports[0]"},
					{Name: "DeepIndex", Type: "string", JSONPath: ".spec..[0]"},
					{Name: "InStrings", Type: "string", JSONPath: ".spec.v..[0]"},
					{Name: "AllPorts", Type: "integer", JSONPath: ".spec.items[*].ports[*]"},
					{Name: "Escaped", Type: "string", JSONPath: `.metadata.labels.app\.kubernetes\.io/name`},
				},
			}},
		},
	}
	recent := time.Now().Add(-90*time.Minute - 30*time.Second).UTC().Format(time.RFC3339)
	var objects []string
	for i, v := range []string{
		`"abc"`, `""`, `"<b>&x"`, `"2020-01-02T03:04:05Z"`, `"2020-01-02T03:04:05.5+02:00"`, `"2020-01-02"`,
		`"null"`, `"2999-01-01T00:00:00Z"`, `"` + recent + `"`, `3`, `-7`, `0`, `1.0`, `1.5`, `-2.5`, `1e3`, `1E-3`,
		`12345678901234567890`, `9007199254740993`, `true`, `false`, `null`, `{"b":1,"a":[1.0,"x",null]}`,
		`[1,2.0,"x"]`, `[]`, `{}`, `["2020-01-02T03:04:05Z"]`, `[{"k":"v"}]`, `[null]`,
	} {
		objects = append(objects, fmt.Sprintf(`{"metadata":{"name":"c%d","creationTimestamp":"2021-03-04T05:06:07Z"},"spec":{"v":%s}}`, i, v))
	}
	for i, items := range []string{
		`[{"name":"a","n":1,"ports":[80]},{"name":"b","n":2,"ports":[]}]`, `[{"name":"a","n":1,"ports":[80]},{"name":"b","n":2.5,"ports":[443,8443]}]`,
		`[{"name":"a","n":1.0}]`, `[{"name":"a","n":"1"}]`, `[{"name":"a","n":null}]`, `[{"name":"a"},{"name":"b","n":2,"on":true}]`,
		`[{"name":"a","on":"true"}]`, `[{"ports":{"x":1}}]`, `[]`, `null`, `{"name":"x"}`, `[null,{"name":"z","n":1}]`, `[[],{"name":"q"}]`,
		`[{"name":"a","ports":[]},{"name":"b","ports":[1]}]`, `[{"name":{"first":"x"},"n":1}]`,
	} {
		objects = append(objects, fmt.Sprintf(`{"metadata":{"name":"i%d","creationTimestamp":"2021-03-04T05:06:07Z"},"spec":{"items":%s}}`, i, items))
	}
	objects = append(objects, `{"metadata":{"name":"absent","creationTimestamp":null},"spec":{}}`,
		`{"metadata":{"name":"labelled","creationTimestamp":"2021-03-04T05:06:07Z","labels":{"app.kubernetes.io/name":"web"}},"spec":{"v":["x"]}}`)

	defs := []*apiextensionsv1.CustomResourceDefinition{typed}
	objectsOf := [][]string{objects}
	for _, c := range printerCRDs {
		defs = append(defs, loadCRD(t, c.file))
		var objs []string
		for _, o := range c.objects {
			// A fixed creation time keeps the default Age stable.
			objs = append(objs, strings.Replace(o, `"metadata":{`, `"metadata":{"creationTimestamp":"2021-03-04T05:06:07Z",`, 1))
		}
		objectsOf = append(objectsOf, objs)
	}
	for i, def := range defs {
		ours := ourResources(t, def)
		for _, v := range def.Spec.Versions {
			t.Run(def.Name+"/"+v.Name, func(t *testing.T) {
				conv, headers := kubeConvertor(t, def, v.Name)
				res := ours[v.Name]
				if res == nil {
					t.Fatalf("version %s not served", v.Name)
				}
				var got []metav1.TableColumnDefinition
				for _, c := range res.Columns {
					got = append(got, metav1.TableColumnDefinition(c.TableColumnDefinition))
				}
				if diff := cmp.Diff(headers[1:], got); diff != "" {
					t.Errorf("columns (-kube +ours):\n%s", diff)
				}
				for _, o := range objectsOf[i] {
					data := fmt.Appendf(nil, `{"apiVersion":%q,"kind":%q,%s`, def.Spec.Group+"/"+v.Name, def.Spec.Names.Kind, o[1:])
					obj, err := api.ParseObject(data)
					if err != nil {
						t.Fatalf("%s: %v", data, err)
					}
					cells := []any{obj.Name()}
					for _, c := range res.Columns {
						cells = append(cells, c.Cell(obj))
					}
					want := kubeCells(t, conv, data)
					if w, g := mustJSON(t, want), mustJSON(t, cells); w != g {
						t.Errorf("object %s:\nkube cells %s\nours       %s", o, w, g)
					}
				}
			})
		}
	}
}

// TestPrinterColumnsFromBinaryAsKube installs real-world definitions in the
// binary, creates their objects and reads them as kubectl does: the Table
// of every served version (JSON) must equal kube's table convertor's on
// the same objects, and kubectl's output (plain and -o wide) must equal
// what kubectl's table printer prints of kube's Table.
func TestPrinterColumnsFromBinaryAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), lw.URL, true)
	for _, c := range printerCRDs {
		def := loadCRD(t, c.file)
		body, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		send(t, "POST", lw.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", string(body), http.StatusCreated)
		storage := ""
		for _, v := range def.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
		}
		base := fmt.Sprintf("%s/apis/%s/%s/namespaces/default/%s", lw.URL, def.Spec.Group, storage, def.Spec.Names.Plural)
		waitServed(t, base)
		for _, o := range c.objects {
			var obj map[string]any
			if err := json.Unmarshal([]byte(o), &obj); err != nil {
				t.Fatal(err)
			}
			obj["apiVersion"], obj["kind"] = def.Spec.Group+"/"+storage, def.Spec.Names.Kind
			b, _ := json.Marshal(obj)
			send(t, "POST", base, "application/json", string(b), http.StatusCreated)
			if status, ok := obj["status"]; ok { // the status subresource keeps it from the create
				name := obj["metadata"].(map[string]any)["name"].(string)
				b, _ := json.Marshal(map[string]any{"status": status})
				send(t, "PATCH", base+"/"+name+"/status", "application/merge-patch+json", string(b), http.StatusOK)
			}
		}
		for _, v := range def.Spec.Versions {
			t.Run(def.Name+"/"+v.Name, func(t *testing.T) {
				path := fmt.Sprintf("%s/apis/%s/%s/namespaces/default/%s", lw.URL, def.Spec.Group, v.Name, def.Spec.Names.Plural)
				conv, _ := kubeConvertor(t, def, v.Name)
				list := getJSON(t, path, "application/json")
				before := kubeListTable(t, conv, list)
				got := getJSON(t, path+"?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io")
				after := kubeListTable(t, conv, list)
				// Ages are computed when the Table is made: kube's on either side.
				if g := tableJSON(t, got); g != tableJSON(t, before) && g != tableJSON(t, after) {
					t.Errorf("Table\nours %s\nkube %s", g, tableJSON(t, after))
				}
				kind := def.Spec.Names.Plural + "." + v.Name + "." + def.Spec.Group
				for _, wide := range []bool{false, true} {
					args := []string{"get", kind}
					if wide {
						args = append(args, "-o", "wide")
					}
					before := printTable(t, before, wide)
					out := k.must(t, args...)
					if after := printTable(t, kubeListTable(t, conv, list), wide); out != before && out != after {
						t.Errorf("kubectl %s:\n%s\nkube's printer:\n%s", strings.Join(args, " "), out, after)
					}
				}
			})
		}
	}
}

// TestPrinterColumnChecksAsKube creates definitions with printer columns
// kube rejects or accepts and wants kube's answer: the 422 of its
// ValidateCustomResourceDefinition, or a Table whose columns are those its
// table convertor serves (up to the first path it cannot parse).
func TestPrinterColumnChecksAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	crds := lw.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for i, cols := range [][]apiextensionsv1.CustomResourceColumnDefinition{
		{{Name: "X", Type: "text", JSONPath: "spec.x"}},
		{{Name: "", Type: "", JSONPath: ""}},
		{{Name: "F", Type: "integer", Format: "uint8", JSONPath: ".spec.x"}, {Name: "G", Type: "string", Format: "date-time", JSONPath: ".spec.y"}},
		{{Name: "A", Type: "string", JSONPath: ".spec.a"}, {Name: "Bad", Type: "string", JSONPath: ".spec[?(@.x"}, {Name: "C", Type: "string", JSONPath: ".spec.c"}},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			def := loadCRD(t, "cert-manager.io_certificates.yaml")
			def.Spec.Group = fmt.Sprintf("c%d.example.com", i)
			def.Name = def.Spec.Names.Plural + "." + def.Spec.Group
			def.Spec.Versions[0].AdditionalPrinterColumns = cols
			code, body := post(t, crds, def)
			if want := kubeCRDErrors(t, def); want != nil {
				wantInvalid(t, want, code, body)
				return
			}
			if code != http.StatusCreated {
				t.Fatalf("%d %.300s, want 201", code, body)
			}
			path := fmt.Sprintf("%s/apis/%s/v1/namespaces/default/certificates", lw.URL, def.Spec.Group)
			waitServed(t, path)
			_, headers := kubeConvertor(t, def, "v1")
			var got metav1.Table
			if err := json.Unmarshal(getJSON(t, path, "application/json;as=Table;v=v1;g=meta.k8s.io"), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(headers, got.ColumnDefinitions); diff != "" {
				t.Errorf("columns (-kube +ours):\n%s", diff)
			}
		})
	}
}

// readCRD reads a definition from testdata/crds.
func loadCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("testdata/crds/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &def); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &def
}

// ourResources returns the server's resources of def by version.
func ourResources(t *testing.T, def *apiextensionsv1.CustomResourceDefinition) map[string]*resource.Resource {
	t.Helper()
	data, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := api.ParseObject(data)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := crd.Resources(obj)
	if err != nil {
		t.Fatalf("%s: %v", def.Name, err)
	}
	out := map[string]*resource.Resource{}
	for _, r := range rs {
		out[r.Version] = r
	}
	return out
}

// kubeConvertor is kube's table convertor of def's version, with the
// columns its handler serves (defaults when none are listed), and its
// column definitions.
func kubeConvertor(t *testing.T, def *apiextensionsv1.CustomResourceDefinition, version string) (rest.TableConvertor, []metav1.TableColumnDefinition) {
	t.Helper()
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(def, &internal, nil); err != nil {
		t.Fatal(err)
	}
	cols, err := apiextensions.GetColumnsForVersion(&internal, version)
	if err != nil {
		t.Fatal(err)
	}
	v1cols := make([]apiextensionsv1.CustomResourceColumnDefinition, len(cols))
	for i := range cols {
		if err := apiextensionsv1.Convert_apiextensions_CustomResourceColumnDefinition_To_v1_CustomResourceColumnDefinition(&cols[i], &v1cols[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	// kube's handler serves what New returns even with an error (the
	// columns before an unparseable path).
	conv, _ := tableconvertor.New(v1cols)
	table, err := conv.ConvertToTable(t.Context(), &unstructured.UnstructuredList{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conv, table.ColumnDefinitions
}

// kubeCells are the cells of kube's Table row of the object data, decoded
// as kube decodes a custom resource.
func kubeCells(t *testing.T, conv rest.TableConvertor, data []byte) []any {
	t.Helper()
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("kube decoding %s: %v", data, err)
	}
	table, err := conv.ConvertToTable(t.Context(), obj, nil)
	if err != nil || len(table.Rows) != 1 {
		t.Fatalf("kube's Table of %s: %v, %v", data, table, err)
	}
	return table.Rows[0].Cells
}

// kubeListTable is kube's Table of a list read from the server, without
// objects in its rows (includeObject=None).
func kubeListTable(t *testing.T, conv rest.TableConvertor, list []byte) *metav1.Table {
	t.Helper()
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(list, nil, nil)
	if err != nil {
		t.Fatalf("kube decoding the list: %v", err)
	}
	table, err := conv.ConvertToTable(t.Context(), obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	table.APIVersion, table.Kind = "meta.k8s.io/v1", "Table"
	for i := range table.Rows {
		table.Rows[i].Object = runtime.RawExtension{}
	}
	return table
}

// tableJSON is a Table's JSON with the list metadata left out: the server
// reads the list again for the Table, at a later revision.
func tableJSON(t *testing.T, table any) string {
	t.Helper()
	var m map[string]any
	switch tb := table.(type) {
	case []byte:
		if err := json.Unmarshal(tb, &m); err != nil {
			t.Fatalf("%v: %s", err, tb)
		}
	default:
		if err := json.Unmarshal([]byte(mustJSON(t, tb)), &m); err != nil {
			t.Fatal(err)
		}
	}
	delete(m, "metadata")
	return mustJSON(t, m)
}

// printTable prints a Table as kubectl get does in a namespace.
func printTable(t *testing.T, table *metav1.Table, wide bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(table, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// getJSON gets url with the Accept header and wants 200.
func getJSON(t *testing.T, url, accept string) []byte {
	t.Helper()
	code, body := fetch(t, "GET", url, http.Header{"Accept": {accept}}, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// fetch makes one request and returns the answer's code and body.
func fetch(t testing.TB, method, url string, header http.Header, body []byte) (int, []byte) {
	t.Helper()
	code, b, _ := fetchHeader(t, method, url, header, body)
	return code, b
}

// fetchHeader is fetch with the answer's header.
func fetchHeader(t testing.TB, method, url string, header http.Header, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, b, resp.Header
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptrTo[T any](v T) *T { return &v }
