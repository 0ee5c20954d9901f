package crd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// The rules of one request run under a deadline (celEvalTimeout in the
// server, fuzzDeadline here) and must return within fuzzSlack of it, on
// a loaded machine: cel-go checks the deadline every 100 steps of a
// comprehension, and our own work around it is linear in the object.
const (
	fuzzDeadline    = 2 * time.Second
	fuzzSlack       = 3 * time.Second
	fuzzObjectBytes = 16 << 10
)

// FuzzCELRules writes objects, and updates of them, to definitions with
// rules. A definition the cost estimate refuses is left, as kube leaves
// it; over an accepted one, the schema checks and the rules never panic,
// the rules spend at most the budget of a request (a messageExpression may
// overrun it by the cost of one call, as in kube), and they return by
// their deadline.
func FuzzCELRules(f *testing.F) {
	for _, seed := range celFuzzSeeds() {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, schema, obj, old string) {
		if len(schema) > 64<<10 || len(obj) > fuzzObjectBytes || len(old) > fuzzObjectBytes {
			return
		}
		s, err := ParseSchema([]byte(schema))
		if err != nil {
			return
		}
		if causes, _ := s.Structural("s"); len(causes) > 0 || len(s.compileRules("s")) > 0 || len(s.checkDefaults("s")) > 0 {
			return
		}
		o, prev := fuzzObject(obj), fuzzObject(old)
		if o == nil {
			return
		}
		s.PruneAndDefault(o)
		if prev != nil {
			s.PruneAndDefault(prev)
			s.ValidateUpdate(o, prev)
		} else {
			s.Validate(o)
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		start := time.Now()
		e := s.evalRules(ctx, o, prev)
		if d := time.Since(start); d > fuzzDeadline+fuzzSlack {
			t.Fatalf("rules took %v over %d bytes, past their deadline %v", d, len(obj), fuzzDeadline)
		}
		if spent := celRuntimeBudget - e.budget; spent > celRuntimeBudget+celPerCallLimit {
			t.Fatalf("rules spent %d, over the budget %d", spent, celRuntimeBudget)
		}
	})
}

// fuzzObject decodes an object as the server does, or nil.
func fuzzObject(raw string) api.Object {
	o, err := api.ParseObject([]byte(raw))
	if err != nil || api.CheckObjectDepth(o) != nil {
		return nil
	}
	return o
}

// celFuzzSeeds are hostile definitions with objects (schema, object, old
// object): deep schemas, many rules, nested comprehensions over large
// lists, growing strings, transition rules in a list-type map.
func celFuzzSeeds() [][3]string {
	strs := func(n int, v string) string {
		return `[` + strings.TrimSuffix(strings.Repeat(`"`+v+`",`, n), ",") + `]`
	}
	deepSchema, deepObj := `{"type":"string","maxLength":8}`, `"x"`
	for range 40 {
		deepSchema = `{"type":"object","properties":{"c":` + deepSchema + `},"x-kubernetes-validations":[{"rule":"has(self.c)"},{"rule":"self == oldSelf"}]}`
		deepObj = `{"c":` + deepObj + `}`
	}
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf(`{"rule":"self.s.size() < %d","messageExpression":"self.s + self.s"}`, i)
	}
	list := func(maxItems int, rules ...string) string {
		return fmt.Sprintf(`{"type":"object","properties":{"s":{"type":"string","maxLength":1000},
		 "l":{"type":"array","maxItems":%d,"items":{"type":"string","maxLength":10}}},
		 "x-kubernetes-validations":[%s]}`, maxItems, strings.Join(rules, ","))
	}
	mapList := `{"type":"object","properties":{"l":{"type":"array","maxItems":1000,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],
	 "items":{"type":"object","required":["k"],"properties":{"k":{"type":"string","maxLength":8},"v":{"type":"integer"}},
	  "x-kubernetes-validations":[{"rule":"self.v >= oldSelf.v"},{"rule":"!oldSelf.hasValue() || oldSelf.value().k == self.k","optionalOldSelf":true},{"rule":"self.v < 10"}]}}}}`
	items := make([]string, 500)
	for i := range items {
		items[i] = fmt.Sprintf(`{"k":"k%d","v":%d}`, i, i%20)
	}
	return [][3]string{
		{deepSchema, deepObj, deepObj},
		{`{"type":"object","properties":{"s":{"type":"string","maxLength":64}},"x-kubernetes-validations":[` + strings.Join(many, ",") + `]}`, `{"s":"` + strings.Repeat("a", 64) + `"}`, ""},
		{list(80, `{"rule":"self.l.exists(x, self.l.exists(y, self.l.exists(z, x + y == z)))"}`), `{"l":` + strs(80, "aaaaaaaaaa") + `}`, ""},
		{list(2000, `{"rule":"self.l.map(x, self.s + x + self.s).all(y, y.size() > 0)"}`, `{"rule":"(self.s + self.s + self.s + self.s).size() > 0"}`),
			`{"s":"` + strings.Repeat("b", 1000) + `","l":` + strs(1000, "c") + `}`, ""},
		{list(1000000, `{"rule":"self.l.all(x, x.size() > 0)"}`), `{"l":` + strs(1000, "d") + `}`, ""},
		{mapList, `{"l":[` + strings.Join(items, ",") + `]}`, `{"l":[` + strings.Join(items[250:], ",") + `]}`},
	}
}
