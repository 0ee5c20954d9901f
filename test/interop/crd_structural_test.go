package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/listwatch/listwatch/internal/server/apierror"
)

// structuralSchemas are openAPIV3Schemas at the corners of kube's
// structural rules: what allOf/anyOf/oneOf/not may hold, the int-or-string
// exceptions, completeness, metadata, embedded resources, list and map
// types, and the keywords kube does not support.
var structuralSchemas = map[string]string{
	"valid":                  `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string","anyOf":[{"format":"ipv4"},{"maxLength":3}]}}}}}`,
	"junctor type":           `{"type":"object","properties":{"a":{"type":"string","anyOf":[{"type":"string"},{"format":"ipv4"}],"oneOf":[{"type":"integer"}],"allOf":[{"type":"string"}],"not":{"type":"object"}}}}`,
	"junctor generics":       `{"type":"object","properties":{"a":{"type":"string","allOf":[{"default":"x","nullable":true,"description":"d","title":"t"}]}}}`,
	"junctor extensions":     `{"type":"object","properties":{"a":{"type":"object","not":{"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-embedded-resource":true,"x-kubernetes-int-or-string":true,"x-kubernetes-map-type":"atomic"}}}}`,
	"junctor list types":     `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"oneOf":[{"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"]}]}}}`,
	"junctor rules":          `{"type":"object","properties":{"a":{"type":"string","anyOf":[{"x-kubernetes-validations":[{"rule":"self.size() > 1"}]}],"allOf":[{"x-kubernetes-validations":[{"rule":"true"}]}]}}}`,
	"junctor additional":     `{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"string"},"anyOf":[{"additionalProperties":{"maxLength":1}},{"additionalProperties":true},{"additionalProperties":false}]}}}`,
	"junctor deep":           `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"string"}}},"allOf":[{"properties":{"b":{"items":{"type":"string","default":"x"}},"metadata":{"maxLength":1}}},{"anyOf":[{"not":{"nullable":true}}]}]}}}`,
	"junctor metadata root":  `{"type":"object","properties":{"metadata":{"type":"object"}},"allOf":[{"properties":{"metadata":{"properties":{"name":{"maxLength":3}}}}}]}`,
	"int-or-string":          `{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},"b":{"x-kubernetes-int-or-string":true,"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"pattern":"^[0-9]+%?$"}]}}}`,
	"int-or-string loose":    `{"type":"object","properties":{"a":{"anyOf":[{"type":"integer"},{"type":"string"}]},"b":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"string"},{"type":"integer"}]},"c":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer","minimum":1},{"type":"string"}]},"d":{"x-kubernetes-int-or-string":true,"allOf":[{"maxLength":1},{"anyOf":[{"type":"integer"},{"type":"string"}]}]}}}`,
	"int-or-string with":     `{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"x-kubernetes-preserve-unknown-fields":true},"b":{"x-kubernetes-int-or-string":true,"x-kubernetes-embedded-resource":true}}}`,
	"completeness":           `{"type":"object","properties":{"a":{"type":"string"},"l":{"type":"string"}},"allOf":[{"properties":{"b":{"maxLength":1},"l":{"items":{"maxLength":1}}}}],"anyOf":[{"not":{"properties":{"c":{"properties":{"d":{}}}}}}]}`,
	"completeness below":     `{"type":"object","properties":{"a":{"type":"object","allOf":[{"properties":{"b":{"maxLength":1}}}]}}}`,
	"root additional":        `{"type":"object","additionalProperties":{"type":"string"}}`,
	"root additional false":  `{"type":"object","additionalProperties":false}`,
	"additional and props":   `{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false},"b":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":true},"c":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":{"type":"string"}}}}`,
	"no types":               `{"properties":{"a":{},"l":{"type":"array","items":{}},"m":{"type":"object","additionalProperties":{}}}}`,
	"array without items":    `{"type":"object","properties":{"a":{"type":"array"}}}`,
	"root type":              `{"type":"string"}`,
	"root nullable":          `{"type":"object","nullable":true}`,
	"types":                  `{"type":"object","properties":{"a":{"type":"null"},"b":{"type":"float"}}}`,
	"embedded":               `{"type":"object","properties":{"a":{"x-kubernetes-embedded-resource":true,"type":"string"},"b":{"x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"c":{"x-kubernetes-embedded-resource":true,"type":"object"},"d":{"x-kubernetes-embedded-resource":true,"type":"object","additionalProperties":{"type":"string"}}}}`,
	"embedded meta":          `{"type":"object","properties":{"e":{"x-kubernetes-embedded-resource":true,"type":"object","properties":{"kind":{"type":"integer"},"apiVersion":{"type":"string"},"metadata":{"type":"string"}}},"f":{"x-kubernetes-embedded-resource":true,"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}},"x":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}}}`,
	"root meta":              `{"type":"object","properties":{"kind":{"type":"integer"},"apiVersion":{"type":"string","default":"v1"},"metadata":{"type":"string","default":{}}}}`,
	"root metadata names":    `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":10},"generateName":{"type":"string"}}}}}`,
	"root metadata name":     `{"type":"object","properties":{"metadata":{"properties":{"generateName":{"type":"string","pattern":"^a"}}}}}`,
	"root metadata labels":   `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string"},"labels":{"type":"object"}}}}}`,
	"root metadata desc":     `{"type":"object","properties":{"metadata":{"type":"object","description":"meta"}}}`,
	"root metadata rules":    `{"type":"object","properties":{"metadata":{"type":"object","maxProperties":3}}}`,
	"map type":               `{"type":"object","properties":{"a":{"type":"string","x-kubernetes-map-type":"atomic"},"b":{"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-map-type":"granular"},"c":{"type":"object","x-kubernetes-map-type":"sometimes"},"d":{"type":"object","x-kubernetes-map-type":"atomic"}}}`,
	"list type":              `{"type":"object","properties":{"a":{"type":"object","x-kubernetes-list-type":"set"},"b":{"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-list-type":"atomic"},"c":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"bag"}}}`,
	"set items":              `{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","properties":{"x":{"type":"string"}}}},"b":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}},"c":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"atomic"}},"d":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string","nullable":true}},"e":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":"granular"}}}}`,
	"map keys":               `{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string"}}}},"b":{"type":"array","x-kubernetes-list-type":"set","x-kubernetes-list-map-keys":["k"],"items":{"type":"string"}},"c":{"type":"array","x-kubernetes-list-type":"map","items":{"type":"object"}},"d":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"string"}}}}`,
	"map key properties":     `{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k","missing","o","k"],"items":{"type":"object","nullable":true,"required":["o"],"properties":{"k":{"type":"string","nullable":true},"o":{"type":"object"}}}},"b":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k","p"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string"},"p":{"type":"string","default":"TCP"}}}}}}`,
	"unique items":           `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`,
	"unsupported":            `{"type":"object","properties":{"a":{"type":"string","$ref":"#/x"},"b":{"type":"object","patternProperties":{"^x":{"type":"string"}}},"c":{"type":"array","items":{"type":"string"},"additionalItems":false},"d":{"type":"string","id":"x"},"e":{"type":"object","definitions":{"x":{"type":"string"}}},"f":{"type":"object","dependencies":{"x":["y"]}}}}`,
	"bad pattern":            `{"type":"object","properties":{"a":{"type":"string","pattern":"("},"b":{"type":"string","allOf":[{"pattern":"[z-a]"}]}}}`,
	"preserve false":         `{"type":"object","properties":{"a":{"type":"object","x-kubernetes-preserve-unknown-fields":false}}}`,
	"schema keyword":         `{"type":"object","$schema":"http://json-schema.org/draft-04/schema#","properties":{"a":{"type":"string","$schema":"x"}}}`,
	"items arrays":           `{"type":"object","nullable":true,"properties":{"a":{"type":"array","items":[{"type":"string","uniqueItems":true},{"type":"array","items":[{"type":"null"}]}]},"b":{"type":"object","additionalProperties":{"type":"array","items":[]}},"c":{"type":"string","allOf":[{"items":[{"$ref":"x"}]}]}}}`,
	"items empty":            `{"type":"object","properties":{"a":{"type":"array","items":[]},"b":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"items":[]}}}`,
	"default types":          `{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"type":"string","default":5},"c":{"type":"object","properties":{"x":{"type":"string","maxLength":2}},"default":{"x":"long"}},"n":{"type":"number","default":true,"minimum":3}}}`,
	"default unknown":        `{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"string"}},"default":{"x":"a","y":1.0}},"p":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"n":{"type":"object","properties":{}}},"default":{"free":1,"n":{"k":1}}},"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}},"default":[{"x":"a"},{"z":1}]},"f":{"type":"object","properties":{"x":{"type":"number"}},"default":{"x":1.0,"y":2.50,"h":"<&>"}}}}`,
	"default values":         `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"default":"z"},"b":{"type":"object","required":["k"],"properties":{"k":{"type":"string"}},"default":{}},"c":{"type":"array","maxItems":1,"items":{"type":"string"},"default":["a","b"]},"d":{"type":"string","pattern":"^a","default":"b","anyOf":[{"maxLength":0}]},"s":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"},"default":["a","a"]}}}`,
	"default rules":          `{"type":"object","properties":{"a":{"type":"integer","default":1,"x-kubernetes-validations":[{"rule":"self > 1","message":"too small"}]},"b":{"type":"object","default":{"x":"no"},"properties":{"x":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'yes'"}]}}},"c":{"type":"string","default":"v","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"immutable"},{"rule":"!oldSelf.hasValue()","optionalOldSelf":true,"messageExpression":"'was ' + oldSelf.value()"}]},"d":{"type":"object","default":{"n":1},"properties":{"n":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.n > 2","fieldPath":".n","reason":"FieldValueForbidden"}]}}}`,
	"default create rule":    `{"type":"object","properties":{"c":{"type":"string","default":"v","x-kubernetes-validations":[{"rule":"oldSelf.hasValue()","optionalOldSelf":true,"message":"needs an old value"}]}}}`,
	"defaults valid":         `{"type":"object","properties":{"a":{"type":"object","default":{},"properties":{"x":{"type":"string","default":"d"},"n":{"type":"integer","default":1,"minimum":0}}},"m":{"type":"object","additionalProperties":{"type":"string"},"default":{"k":"v"}},"i":{"x-kubernetes-int-or-string":true,"default":"50%"},"e":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"default":{"apiVersion":"v1","kind":"K","metadata":{"name":"n"},"x":1}},"r":{"type":"integer","default":3,"x-kubernetes-validations":[{"rule":"self == oldSelf","message":"immutable"}]}}}`,
	"default embedded":       `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"string"}},"default":{"spec":"x"}},"l":{"type":"array","items":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"default":[{"apiVersion":"a/b/c","kind":"Not_DNS"},{"apiVersion":"","kind":""}]},"c":{"type":"object","properties":{"r":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}},"default":{"r":{"apiVersion":"v1","kind":1.0}}},"m":{"type":"object","additionalProperties":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"default":{"k":{"apiVersion":"v1","kind":"AVeryLongKindNameThatGoesOnAndOnAndOnPastSixtyThreeCharactersInAll"}}}}}`,
	"default not structural": `{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"type":"array"}}}`,
	"default and bad rule":   `{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"type":"string","x-kubernetes-validations":[{"rule":"self +"}]}}}`,
	"default and keyword":    `{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`,
	"default in meta":        `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"Bad_Name"}}}}}}}`,
	"default null":           `{"type":"object","properties":{"a":{"type":"integer","default":null}}}`,
	"empty list map types":   `{"type":"object","properties":{"a":{"type":"object","x-kubernetes-list-type":""},"b":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"","x-kubernetes-list-map-keys":["k"]},"c":{"type":"string","x-kubernetes-map-type":""},"d":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":""}},"e":{"type":"string","allOf":[{"x-kubernetes-list-type":"","x-kubernetes-map-type":""}]},"f":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","x-kubernetes-map-type":""}}}}`,
	"root meta default":      `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"a/b"}}}}}`,
	"embedded meta default":  `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"a/b"},"namespace":{"type":"string","default":"Bad_NS"}}},"kind":{"type":"string","default":"not a kind"},"apiVersion":{"type":"string","default":"a/b/c"}}}}}`,
	"embedded meta object":   `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","default":{"name":"..","generateName":"a%/"},"properties":{"namespace":{"type":"string","default":"a-namespace-name-that-is-longer-than-sixty-three-characters-in-all"}}},"apiVersion":{"type":"string","default":""}}},"f":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"ok-name","maxLength":3}}}}}}}`,
	"default with bad rule":  `{"type":"object","properties":{"a":{"type":"string","default":"x","x-kubernetes-validations":[{"rule":"self +"},{"rule":"self == 'y'"}]},"b":{"type":"integer","default":1,"x-kubernetes-validations":[{"rule":"self.size() > 0"}]}}}`,
	"embedded meta labels":   `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"},"default":{"bad key!":"v"}},"annotations":{"type":"object","additionalProperties":{"type":"string"},"default":{"A/B/C":"v"}},"generation":{"type":"integer","default":-1}}}}},"f":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"},"default":{"k":"bad value!"}},"annotations":{"type":"object","additionalProperties":{"type":"string"},"default":{"Example.com/Ok":"v"}}}}}}}}`,
	"meta defaults":          `{"type":"object","properties":{"e":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string","default":"x"}}}}}}}}`,
}

// statusRootSchemas are served with the status subresource, whose root
// kube restricts: the first field of its internal type that is set and
// not allowed there fails, with the whole schema in the message.
var statusRootSchemas = map[string]string{
	"allowed":          `{"type":"object","description":"d","required":["spec"],"properties":{"spec":{"type":"object","default":{},"enum":[{}]}},"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-validations":[{"rule":"true","reason":"FieldValueInvalid"}],"example":{"a":1.0},"externalDocs":{"url":"u"},"maximum":5}`,
	"type":             `{"type":"string","anyOf":[{"maxLength":1}]}`,
	"anyOf":            `{"type":"object","properties":{"a":{"type":"number","default":1.0,"maximum":1.5,"enum":[1,2.5,10000000000000000000000]}},"anyOf":[{"required":["a"]}],"additionalProperties":false}`,
	"empty map keys":   `{"type":"object","x-kubernetes-list-map-keys":[]}`,
	"empty list type":  `{"type":"object","x-kubernetes-list-type":""}`,
	"empty enum":       `{"type":"object","enum":[]}`,
	"nulls":            `{"type":"object","default":null,"nullable":false,"x-kubernetes-map-type":null,"enum":null}`,
	"map type":         `{"type":"object","x-kubernetes-map-type":"atomic","properties":{"s":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}`,
	"untyped":          `{"x-kubernetes-preserve-unknown-fields":true,"minProperties":1}`,
	"items array":      `{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}},"maxProperties":3,"dependencies":{"x":["y"],"z":{"type":"string"}}}`,
	"html and escapes": `{"type":"object","description":"<a & b>","properties":{"a":{"type":"string","pattern":"^\\d+$"}},"not":{"required":["a"]}}`,
}

// TestStructuralSchemaAsKube creates a definition with each schema and
// compares the server's causes for it with kube's
// ValidateCustomResourceDefinition: the same paths, messages and types.
func TestStructuralSchemaAsKube(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t))
	scheme := runtime.NewScheme()
	install.Install(scheme)
	decoder := serializer.NewCodecFactory(scheme).UniversalDecoder(apiextensions.SchemeGroupVersion)
	// same fails t unless the server's causes for def are kube's, and
	// reports whether kube refused def.
	same := func(t *testing.T, def []byte) bool {
		obj, _, err := decoder.Decode(def, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), obj.(*apiextensions.CustomResourceDefinition)) {
			// The server bounds a cause's message (SECURITY.md); kube does not.
			want = append(want, e.Field+": "+string(e.Type)+": "+apierror.Truncate(e.ErrorBody(), apierror.MaxCauseRunes))
		}
		got := createDefinition(t, lw.URL, string(def))
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("causes (-kube +listwatch):\n%s", diff)
		}
		return len(want) > 0
	}
	refused := 0
	for name, schema := range structuralSchemas {
		t.Run(name, func(t *testing.T) {
			def := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
				"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
				"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + schema + `}}]}}`
			if same(t, []byte(def)) {
				refused++
			}
		})
	}
	// Each status schema is checked shared by both versions (kube's
	// spec.validation, as served with status if any version is) and as
	// the one version with status, the other's schema another.
	for name, schema := range statusRootSchemas {
		for _, other := range []string{schema, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`} {
			t.Run("status/"+name, func(t *testing.T) {
				def := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
				"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
				"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":` + schema + `}},
					{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":` + other + `}}]}}`
				same(t, []byte(def))
			})
		}
	}
	if refused < len(structuralSchemas)/2 {
		t.Errorf("kube refused only %d of %d definitions: the cases test little", refused, len(structuralSchemas))
	}
	t.Logf("kube refused %d of %d crafted definitions", refused, len(structuralSchemas))
	// Real-world definitions, which kube accepts, must be accepted too.
	files, err := filepath.Glob("testdata/crds/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, "testdata/crds/gateway-api/standard-install.yaml") {
		for i, doc := range yamlDocs(t, f) {
			if !bytes.Contains(doc, []byte(`"kind":"CustomResourceDefinition"`)) {
				continue
			}
			t.Run(fmt.Sprintf("%s#%d", f, i), func(t *testing.T) {
				if same(t, doc) {
					t.Error("kube refuses a published definition")
				}
			})
		}
	}
}

// createDefinition creates def, then deletes it, and returns the causes of
// its refusal as "field: type: message".
func createDefinition(t *testing.T, server, def string) []string {
	t.Helper()
	const path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	code, body := fetch(t, http.MethodPost, server+path, http.Header{"Content-Type": {"application/json"}}, []byte(def))
	var st struct {
		Metadata struct{ Name string }
		Details  struct {
			Causes []struct{ Field, Reason, Message string }
		}
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&st); err != nil {
		t.Fatal(err)
	}
	switch code {
	case http.StatusCreated:
		if del, _ := fetch(t, http.MethodDelete, server+path+"/"+st.Metadata.Name, nil, nil); del != http.StatusOK {
			t.Fatalf("delete: %d", del)
		}
		return nil
	case http.StatusUnprocessableEntity:
	default:
		t.Fatalf("create: %d %s", code, body)
	}
	var out []string
	for _, c := range st.Details.Causes {
		out = append(out, c.Field+": "+c.Reason+": "+strings.TrimSpace(c.Message))
	}
	return out
}
