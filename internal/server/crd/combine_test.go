package crd

import (
	"fmt"
	"strings"
	"testing"
)

func TestJunctorsAndLists(t *testing.T) {
	schema := mustSchema(t, `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"addr":{"type":"object","oneOf":[{"properties":{"type":{"enum":["IP"]},"value":{"anyOf":[{"format":"ipv4"},{"format":"ipv6"}]}}},
			{"properties":{"type":{"not":{"enum":["IP"]}}}}],
			"properties":{"type":{"type":"string"},"value":{"type":"string"}}},
		"code":{"type":"string","allOf":[{"maxLength":2},{"pattern":"^x"}]},
		"tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
		"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["port","protocol"],
			"items":{"type":"object","properties":{"port":{"type":"integer"},"protocol":{"type":"string"}}}}}}}}`)
	tests := []validateCase{
		{"valid", `{"spec":{"addr":{"type":"IP","value":"::1"},"code":"xy","tags":["a","b"],"ports":[{"port":80},{"port":80,"protocol":"UDP"}]}}`, nil},
		{"not an IP", `{"spec":{"addr":{"type":"IP","value":"not-an-ip"}}}`, []string{
			`<nil>: Invalid value: "": "spec.addr" must validate one and only one schema (oneOf). Found none valid`,
			`<nil>: Invalid value: "": "spec.addr.value" must validate at least one schema (anyOf)`,
			`spec.addr.value: Invalid value: "not-an-ip": spec.addr.value in body must be of type ipv4: "not-an-ip"`,
		}},
		{"allOf", `{"spec":{"code":"abc"}}`, []string{
			`<nil>: Invalid value: "": "spec.code" must validate all the schemas (allOf). None validated`,
			`spec.code: Invalid value: "abc": spec.code in body should match '^x'`,
			`spec.code: Too long: may not be more than 2 bytes`,
		}},
		{"duplicates", `{"spec":{"tags":["a","b","a","a"],"ports":[{"port":80},{"port":80,"protocol":"UDP"},{"protocol":"UDP","port":80}]}}`, []string{
			`spec.ports[2]: Duplicate value: {"port":80,"protocol":"UDP"}`,
			`spec.tags[2]: Duplicate value: "a"`,
		}},
		{"map items must be objects", `{"spec":{"ports":[{"port":1},2,3]}}`, []string{
			`spec.ports[1]: Invalid value: "integer": spec.ports[1] in body must be of type object: "integer"`,
			`spec.ports[1]: Invalid value: 2: must be an object for an array of list-type map`,
			`spec.ports[2]: Invalid value: "integer": spec.ports[2] in body must be of type object: "integer"`,
		}},
	}
	runValidateCases(t, schema, tests)
}

// TestHostileSchemasAreBounded checks that deep junctor nests, huge enums
// and many list-map keys are checked in time linear in object and schema
// size: a quadratic enum lookup, for one, takes half a minute here.
func TestHostileSchemasAreBounded(t *testing.T) {
	deep := `{"type":"string","maxLength":1}`
	for range 2000 {
		deep = `{"allOf":[` + deep + `],"anyOf":[{"minLength":0}]}`
	}
	enum := make([]string, 100000)
	for i := range enum {
		enum[i] = fmt.Sprintf(`"v%d"`, i)
	}
	values := make([]string, 10000)
	for i := range values {
		values[i] = fmt.Sprintf(`"v%d"`, 100000-i)
	}
	keys := make([]string, 200)
	item := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d"`, i)
		item[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	items := make([]string, 2000)
	for i := range items {
		items[i] = "{" + strings.Join(item, ",") + "}"
	}
	tests := []struct {
		name, schema, obj string
		causes            int
	}{
		// Every level's allOf fails alike; kube reports that cause once.
		{"deep allOf and anyOf", `{"type":"object","properties":{"s":` + deep + `}}`, `{"s":"ab"}`, 2},
		{"huge enum", `{"type":"object","properties":{"s":{"type":"array","items":{"type":"string","enum":[` + strings.Join(enum, ",") + `]}}}}`,
			`{"s":[` + strings.Join(values, ",") + `]}`, 1},
		{"many list-map keys", `{"type":"object","properties":{"s":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":[` + strings.Join(keys, ",") + `],
			"items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}`, `{"s":[` + strings.Join(items, ",") + `]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			if got := s.Validate(mustObject(t, tt.obj)); len(got) != tt.causes {
				t.Errorf("%d causes, want %d: %v", len(got), tt.causes, got[:min(len(got), 3)])
			}
		})
	}
}
