package openapi

import (
	"encoding/json"
	"github.com/listwatch/listwatch/client/api"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/resource"
)

func newTestHandler(t *testing.T) (*resource.Catalog, *httptest.Server) {
	t.Helper()
	cat := resource.NewCatalog(resource.Builtins()...)
	ts := httptest.NewServer(New(cat))
	t.Cleanup(ts.Close)
	return cat, ts
}

// get fetches path with accept and returns the response and its body.
func get(t *testing.T, ts *httptest.Server, path, accept string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, b)
	}
	return m
}

func TestV2Protobuf(t *testing.T) {
	_, ts := newTestHandler(t)
	resp, b := get(t, ts, "/openapi/v2", mediaV2ProtobufOld)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mediaV2Protobuf {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc openapi_v2.Document
	if err := proto.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not a gnostic Document: %v", err)
	}
	var defs []string
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		defs = append(defs, d.GetName())
	}
	for _, want := range []string{"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ConfigMapList", resource.ObjectMetaName,
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"} {
		if !strings.Contains(strings.Join(defs, " "), want) {
			t.Errorf("definitions lack %s", want)
		}
	}
	if !patchHasParam(&doc, "/api/v1/namespaces/{namespace}/configmaps/{name}", "fieldManager") {
		t.Error("PATCH configmaps does not document fieldManager")
	}
}

func patchHasParam(doc *openapi_v2.Document, path, name string) bool {
	for _, p := range doc.GetPaths().GetPath() {
		if p.GetName() != path {
			continue
		}
		for _, param := range p.GetValue().GetPatch().GetParameters() {
			if param.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() == name {
				return true
			}
		}
	}
	return false
}

func TestV2JSONRevalidates(t *testing.T) {
	_, ts := newTestHandler(t)
	resp, b := get(t, ts, "/openapi/v2", "application/json")
	if resp.StatusCode != http.StatusOK || decode(t, b)["swagger"] != "2.0" {
		t.Fatalf("status %d: %.200s", resp.StatusCode, b)
	}
	checkRefs(t, decode(t, b), "definitions", v2RefPrefix)
	resp, _ = get(t, ts, "/openapi/v2", "application/json", "If-None-Match", resp.Header.Get("Etag"))
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: status %d, want 304", resp.StatusCode)
	}
}

func TestV3IndexAndDocuments(t *testing.T) {
	_, ts := newTestHandler(t)
	index := v3Index(t, ts)
	for _, gv := range []string{"api/v1", "apis/apiextensions.k8s.io/v1"} {
		u, ok := index[gv]
		if !ok || !strings.Contains(u, "?hash=") {
			t.Fatalf("index lacks %s: %v", gv, index)
		}
		resp, b := get(t, ts, u, "application/json")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, immutable" {
			t.Fatalf("%s: status %d, Cache-Control %q", u, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
		checkRefs(t, decode(t, b), "components", refPrefix)
	}
	resp, _ := get(t, ts, "/openapi/v3/api/v1?hash=stale", "application/json")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != index["api/v1"] {
		t.Fatalf("stale hash: status %d, Location %q, want 301 to %q", resp.StatusCode, resp.Header.Get("Location"), index["api/v1"])
	}
	if resp, _ := get(t, ts, "/openapi/v3/apis/nope/v1", "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown group-version: status %d", resp.StatusCode)
	}
}

func TestV3OperationsOfConfigMaps(t *testing.T) {
	_, ts := newTestHandler(t)
	_, b := get(t, ts, "/openapi/v3/api/v1", "")
	doc := decode(t, b)
	item := doc["paths"].(map[string]any)["/api/v1/namespaces/{namespace}/configmaps/{name}"].(map[string]any)
	patch := item["patch"].(map[string]any)
	want := map[string]any{"group": "", "version": "v1", "kind": "ConfigMap"}
	if got := patch["x-kubernetes-group-version-kind"]; !equalJSON(got, want) {
		t.Errorf("patch gvk = %v, want %v", got, want)
	}
	content := patch["requestBody"].(map[string]any)["content"].(map[string]any)
	if _, ok := content["application/strategic-merge-patch+json"]; !ok {
		t.Errorf("patch does not accept strategic merge patches: %v", content)
	}
	var names []string
	for _, p := range patch["parameters"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "dryRun,fieldManager,force" {
		t.Errorf("patch parameters = %s", got)
	}
	cm := doc["components"].(map[string]any)["schemas"].(map[string]any)["io.k8s.api.core.v1.ConfigMap"].(map[string]any)
	if !equalJSON(cm["x-kubernetes-group-version-kind"], []any{want}) {
		t.Errorf("ConfigMap gvk = %v", cm["x-kubernetes-group-version-kind"])
	}
}

// TestCatalogChange checks that a new resource (as a CRD adds) appears in
// the index and its own document, with its Schema, and that other
// documents keep their hash.
func TestCatalogChange(t *testing.T) {
	cat, ts := newTestHandler(t)
	before := v3Index(t, ts)
	cat.Replace("crontabs.stable.example.com", []*resource.Resource{{
		Group: "stable.example.com", Version: "v1", Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList", Namespaced: true,
		PruneAndDefault: func(api.Object) []string { return nil }, // it prunes: fieldValidation is documented
		Schema: map[string]any{"type": "object", "properties": map[string]any{
			"spec": map[string]any{"type": "object", "nullable": true, "properties": map[string]any{"cronSpec": map[string]any{"type": "string"}}},
		}},
	}})
	after := v3Index(t, ts)
	if after["api/v1"] != before["api/v1"] {
		t.Errorf("api/v1 hash changed: %s -> %s", before["api/v1"], after["api/v1"])
	}
	u, ok := after["apis/stable.example.com/v1"]
	if !ok {
		t.Fatalf("index lacks the new group-version: %v", after)
	}
	_, b := get(t, ts, u, "application/json")
	doc := decode(t, b)
	ct := doc["components"].(map[string]any)["schemas"].(map[string]any)["com.example.stable.v1.CronTab"].(map[string]any)
	props := ct["properties"].(map[string]any)
	if _, ok := props["spec"].(map[string]any)["properties"].(map[string]any)["cronSpec"]; !ok {
		t.Errorf("CronTab schema lost spec.cronSpec: %v", props)
	}
	if _, ok := props["metadata"].(map[string]any)["allOf"]; !ok {
		t.Errorf("CronTab metadata is not ObjectMeta: %v", props["metadata"])
	}
	checkRefs(t, doc, "components", refPrefix)
	patch := doc["paths"].(map[string]any)["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"].(map[string]any)["patch"].(map[string]any)
	if !strings.Contains(string(must(json.Marshal(patch["parameters"]))), `"fieldValidation"`) {
		t.Errorf("PATCH crontabs does not document fieldValidation: %v", patch["parameters"])
	}
	resp, _ := get(t, ts, "/openapi/v2", mediaV2Protobuf)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("v2 with a custom resource: status %d", resp.StatusCode)
	}
}

func v3Index(t *testing.T, ts *httptest.Server) map[string]string {
	t.Helper()
	resp, b := get(t, ts, "/openapi/v3", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/openapi/v3: status %d", resp.StatusCode)
	}
	out := map[string]string{}
	for gv, v := range decode(t, b)["paths"].(map[string]any) {
		out[gv] = v.(map[string]any)["serverRelativeURL"].(string)
	}
	return out
}

// checkRefs fails if a document references a definition it does not hold.
func checkRefs(t *testing.T, doc map[string]any, section, prefix string) {
	t.Helper()
	defs, _ := doc[section].(map[string]any)
	if section == "components" {
		defs, _ = defs["schemas"].(map[string]any)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				if _, found := defs[strings.TrimPrefix(r, prefix)]; !found || !strings.HasPrefix(r, prefix) {
					t.Errorf("dangling reference %s", r)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestV3CreateOnly checks that the access reviews have their POST only,
// named as kube names it, and no list kind.
func TestV3CreateOnly(t *testing.T) {
	_, ts := newTestHandler(t)
	_, b := get(t, ts, "/openapi/v3/apis/authorization.k8s.io/v1", "")
	doc := decode(t, b)
	ops := map[string]string{}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if method != "parameters" {
				ops[method+" "+path] = op.(map[string]any)["operationId"].(string)
			}
		}
	}
	const base = "/apis/authorization.k8s.io/v1/"
	want := map[string]string{
		"post " + base + "namespaces/{namespace}/localsubjectaccessreviews": "createAuthorizationV1NamespacedLocalSubjectAccessReview",
		"post " + base + "selfsubjectaccessreviews":                         "createAuthorizationV1SelfSubjectAccessReview",
		"post " + base + "selfsubjectrulesreviews":                          "createAuthorizationV1SelfSubjectRulesReview",
		"post " + base + "subjectaccessreviews":                             "createAuthorizationV1SubjectAccessReview",
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("operations (-want +got)\n%s", diff)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if _, ok := schemas["io.k8s.api.authorization.v1.SelfSubjectAccessReviewList"]; ok {
		t.Error("a create-only kind has a list schema")
	}
	if _, ok := schemas["io.k8s.api.authorization.v1.ResourceAttributes"]; !ok {
		t.Error("the reviews' schemas are missing")
	}
}

// TestV3SchemasAreKubes checks that each group-version's document holds
// kube's published definitions unchanged, so that kubectl explain prints
// kube's text, and the definitions every one of its kinds reaches.
func TestV3SchemasAreKubes(t *testing.T) {
	_, ts := newTestHandler(t)
	for gv, u := range v3Index(t, ts) {
		_, b := get(t, ts, u, "application/json")
		doc := decode(t, b)
		checkRefs(t, doc, "components", refPrefix)
		for name, s := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
			if want := kubespec.Schema(name); want == nil {
				t.Errorf("%s: %s is not kube's", gv, name)
			} else if !equalJSON(s, want) {
				t.Errorf("%s: %s differs from kube's", gv, name)
			}
		}
	}
}
