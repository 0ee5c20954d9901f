package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/quantity"
)

// quantityNetExprs are CEL expressions over kube's quantity, IP and CIDR
// libraries: every function and overload, their errors and hostile inputs
// (odd exponents, suffixes and signs; IPv4-mapped, zoned and non-canonical
// addresses).
var quantityNetExprs = []string{
	// Parsing: suffixes, exponents, signs, fractions, limits.
	`isQuantity('1.5Gi')`, `isQuantity('200K')`, `isQuantity('Mi')`, `isQuantity('1,3G')`,
	`isQuantity('')`, `isQuantity('+')`, `isQuantity('-.')`, `isQuantity('.e-20')`,
	`isQuantity('1.')`, `isQuantity('1e')`, `isQuantity('1e+5')`, `isQuantity('1E5')`,
	`isQuantity('1Ki5')`, `isQuantity('1e99999999999999999999')`, `isQuantity('1e4294967296')`,
	`isQuantity(' 1')`, `isQuantity('1.5.5')`, `isQuantity('0x10')`, `isQuantity('1i')`,
	`quantity('Three').isInteger()`, `quantity('200K').isInteger()`, `quantity('1,3G').isInteger()`, `quantity('.e-20').isInteger()`, `quantity('1Ki5').isInteger()`,
	`quantity('1.5Gi').asApproximateFloat()`, `quantity('1.5Gi').isInteger()`, `quantity('1Gi').asInteger()`,
	`quantity('1Ei').asInteger()`, `quantity('8Ei').asInteger()`, `quantity('8Ei').asApproximateFloat()`,
	`quantity('9223372036854775807').asInteger()`, `quantity('9223372036854775808').isInteger()`,
	`quantity('9999999999999999999999999999999999999G').asInteger()`,
	`quantity('9999999999999999999999999999999999999G').asApproximateFloat()`,
	`quantity('50000000G').asInteger()`, `quantity('0.1').isInteger()`, `quantity('1000m').isInteger()`,
	`quantity('1000m').asInteger()`, `quantity('1e3').asInteger()`, `quantity('1e4294967296').asInteger()`,
	`quantity('1e400').asApproximateFloat()`, `quantity('-1e400').asApproximateFloat()`,
	`quantity('0e400').asApproximateFloat()`, `quantity('1e-400').asApproximateFloat()`,
	`quantity('1e-400').compareTo(quantity('1n'))`, `quantity('0.0000000001').compareTo(quantity('1n'))`,
	`quantity('-0.0000000001').compareTo(quantity('-1n'))`, `quantity('1.0000000001').asApproximateFloat()`,
	`quantity('1.1Ki').asApproximateFloat()`, `quantity('0.5Ki').isInteger()`, `quantity('12345678901234567890').asApproximateFloat()`,
	`quantity('123456789012345678901234567890e-30').asApproximateFloat()`, `quantity('1e4090').isInteger()`,
	`quantity('1234567890123456789e4000').compareTo(quantity('1.234567890123456789e4018'))`,
	`quantity('1e4000').add(quantity('1.5n')).isGreaterThan(quantity('1e4000'))`,
	`quantity('1e4090').add(quantity('1n')).asApproximateFloat()`, `quantity('1e-4089').compareTo(quantity('1n'))`,
	`quantity('1e4000').compareTo(quantity('1.5Gi'))`, `isQuantity('1e4090')`, `isQuantity('1e-4089')`,
	`quantity('+').asInteger()`, `sign(quantity('-0'))`,
	`sign(quantity('-1m'))`, `sign(quantity('0'))`, `sign(quantity('3Ki'))`, `sign(quantity('-1e-20'))`,
	// Comparisons and arithmetic, int and quantity overloads.
	`quantity('1Ki').isGreaterThan(quantity('1k'))`, `quantity('1k').isLessThan(quantity('1Ki'))`,
	`quantity('1000m').compareTo(quantity('1'))`, `quantity('1e3').compareTo(quantity('1k'))`,
	`quantity('1Ei').compareTo(quantity('1E'))`, `quantity('1E').isGreaterThan(quantity('999999999999999999'))`,
	`quantity('50k').add(20).asInteger()`, `quantity('50k').sub(20000).asApproximateFloat()`,
	`quantity('50k').add(quantity('20k')).asInteger()`, `quantity('1.5Gi').add(quantity('1.5Gi')).isInteger()`,
	`quantity('9223372036854775807').add(1).isInteger()`, `quantity('9223372036854775807').add(1).asApproximateFloat()`,
	`quantity('-9223372036854775807').sub(2).asApproximateFloat()`, `quantity('1m').add(1).asApproximateFloat()`,
	`quantity('1m').sub(quantity('1m')).isInteger()`, `quantity('100Mi').sub(quantity('1')).asInteger()`,
	`quantity('1e18').add(quantity('1e18')).asInteger()`, `quantity('1e18').add(quantity('1e18')).isInteger()`,
	`quantity('50k').add(20).sub(quantity('100k')).sub(-50000).compareTo(quantity('20'))`,
	`quantity('1') == quantity('1000m')`, `quantity('1').add(0) == quantity('1')`, `quantity('1') == quantity('1').add(0)`,
	`quantity('1').add(1) == quantity('1').add(1)`, `[quantity('1')].exists(x, x == quantity('1'))`,
	// IP addresses.
	`isIP('1.2.3.4')`, `isIP('::1')`, `isIP('::ffff:1.2.3.4')`, `isIP('fe80::1%eth0')`, `isIP('01.2.3.4')`,
	`isIP('1.2.3')`, `isIP('')`, `isIP('1.2.3.4/32')`, `isIP('2001:DB8::1')`,
	`ip('1.2.3.4').family()`, `ip('2001:db8::1').family()`, `ip('::ffff:1.2.3.4')`, `ip('fe80::1%eth0')`, `ip('1.2.3.256')`,
	`ip('0.0.0.0').isUnspecified()`, `ip('::').isUnspecified()`, `ip('127.0.0.2').isLoopback()`, `ip('::1').isLoopback()`,
	`ip('224.0.0.1').isLinkLocalMulticast()`, `ip('ff02::1').isLinkLocalMulticast()`, `ip('169.254.1.1').isLinkLocalUnicast()`,
	`ip('fe80::1').isLinkLocalUnicast()`, `ip('8.8.8.8').isGlobalUnicast()`, `ip('255.255.255.255').isGlobalUnicast()`,
	`ip('10.0.0.1').isGlobalUnicast()`, `string(ip('2001:DB8:0:0::1'))`, `ip('1.2.3.4') == ip('1.2.3.4')`,
	`ip('::1') == ip('0:0::1')`, `ip.isCanonical('2001:db8::1')`, `ip.isCanonical('2001:DB8::1')`, `ip.isCanonical('2001:db8:0::1')`,
	`ip.isCanonical('1.2.3.4')`, `ip.isCanonical('::ffff:1.2.3.4')`, `ip.isCanonical('nope')`,
	// CIDRs.
	`isCIDR('10.0.0.0/8')`, `isCIDR('10.0.0.1/8')`, `isCIDR('10.0.0.0/33')`, `isCIDR('::ffff:1.2.3.4/120')`,
	`isCIDR('10.0.0.0')`, `isCIDR('fe80::/10%eth0')`, `isCIDR('10.0.0.0/08')`,
	`cidr('10.0.0.0/33')`, `cidr('::ffff:1.2.3.4/120')`, `cidr('1.2.3.4')`,
	`cidr('10.0.0.0/8').containsIP('10.1.2.3')`, `cidr('10.0.0.0/8').containsIP('11.1.2.3')`, `cidr('10.0.0.0/8').containsIP('::1')`,
	`cidr('10.0.0.0/8').containsIP('nope')`, `cidr('10.0.0.0/8').containsIP(ip('10.255.255.255'))`,
	`cidr('10.1.2.3/8').containsIP('10.9.9.9')`, `cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')`,
	`cidr('10.0.0.0/16').containsCIDR('10.0.0.0/8')`, `cidr('10.0.0.0/8').containsCIDR('nope')`,
	`cidr('10.0.0.0/8').containsCIDR(cidr('10.0.0.0/8'))`, `cidr('2001:db8::/32').containsCIDR(cidr('2001:db8:1::/48'))`,
	`cidr('10.1.2.3/8').prefixLength()`, `string(cidr('10.1.2.3/8').masked())`, `string(cidr('10.1.2.3/8').ip())`,
	`string(cidr('2001:DB8::1/64'))`, `string(cidr('2001:db8::1/64').masked())`, `cidr('10.0.0.0/8') == cidr('10.0.0.0/8')`,
	`cidr('10.0.0.1/8') == cidr('10.0.0.0/8')`, `cidr('10.0.0.1/8').masked() == cidr('10.0.0.0/8')`,
	`cidr('10.0.0.0/8').ip() == ip('10.0.0.0')`,
}

// quantityPastTheBound are expressions over quantities whose text spans
// more places than the server parses (quantity.MaxSpan): kube evaluates
// them (the last for minutes), the server refuses them.
var quantityPastTheBound = []string{
	`isQuantity('1e4091')`, `quantity('1e2147483647').isInteger()`,
	`quantity('1e2147483647').add(quantity('1n')).asApproximateFloat()`,
	`quantity('1e-4090').compareTo(quantity('1n'))`, `quantity('1e2147483647').compareTo(quantity('1.5Gi'))`,
}

// quantityNetRule is a rule whose failure message is the value of expr or,
// when expr fails, whose cause is its error.
func quantityNetRule(expr string) map[string]any {
	return map[string]any{"rule": "string(" + expr + ") == '~'", "messageExpression": "string(" + expr + ")"}
}

// quantityNetInstall creates the definition of things.example.com with
// schema in the binary at base, which kube accepts, and returns it and
// its resources' URL once served.
func quantityNetInstall(t *testing.T, base, schema string) (kubeCRD, string) {
	t.Helper()
	crd := parseCRD(t, []byte(celDefinition(schema)))
	if causes := crd.createCauses(t); len(causes) > 0 {
		t.Fatalf("kube refuses the definition: %v", causes)
	}
	if code, causes, _ := write(t, "POST", base+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.v1); code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", code, causes)
	}
	url := base + "/apis/example.com/v1/namespaces/default/things"
	waitServed(t, url)
	return crd, url
}

// TestCELQuantityNetLibrariesAsKube writes an object under a definition
// whose rules evaluate every expression above: the binary's causes (values
// in messages, errors in evaluation causes) are those kube's validator,
// with kube's libraries, computes.
func TestCELQuantityNetLibrariesAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	// The binary answers at most 100 causes: a property per 50 rules, the
	// object holding one property at a time.
	const chunk = 50
	props := map[string]any{}
	for i := 0; i < len(quantityNetExprs); i += chunk {
		var rules []any
		for _, e := range quantityNetExprs[i:min(i+chunk, len(quantityNetExprs))] {
			rules = append(rules, quantityNetRule(e))
		}
		props[fmt.Sprint("c", i/chunk)] = map[string]any{"type": "object", "x-kubernetes-validations": rules}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		t.Fatal(err)
	}
	crd, url := quantityNetInstall(t, srv.URL, string(schema))
	answers, errs := 0, 0
	for p := range props {
		obj := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},%q:{}}`, p)
		want := crd.objectCauses(t, "v1", jsonObject(t, obj), nil)
		for _, c := range want {
			if strings.Contains(c.Message, "evaluating rule") || strings.Contains(c.Message, "did not match") {
				errs++
			}
		}
		answers += len(want)
		code, got, _ := write(t, "POST", url, jsonObject(t, obj))
		sameAnswer(t, want, code, got)
	}
	// Each expression answers with a value or an error: one cause each.
	if answers != len(quantityNetExprs) || errs < 20 {
		t.Fatalf("kube has %d causes (%d errors) for %d expressions", answers, errs, len(quantityNetExprs))
	}
}

// TestCELQuantityPastTheBound evaluates the expressions past the bound on
// a quantity's places: kube's validator answers each with a value, the
// binary with an error (isQuantity with false). kube's answer to the
// last, which aligns 2^31 places, is not computed.
func TestCELQuantityPastTheBound(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	schema := func(exprs []string) string {
		var rules []any
		for _, e := range exprs {
			rules = append(rules, quantityNetRule(e))
		}
		b, err := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"c": map[string]any{"type": "object", "x-kubernetes-validations": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	_, url := quantityNetInstall(t, srv.URL, schema(quantityPastTheBound))
	obj := jsonObject(t, `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},"c":{}}`)
	_, got, _ := write(t, "POST", url, obj)
	refused, notQuantity := 0, 0
	for _, c := range got {
		switch {
		case strings.Contains(c.Message, quantity.ErrTooLarge.Error()):
			refused++
		case strings.HasSuffix(c.Message, ": false"):
			notQuantity++
		}
	}
	if refused != len(quantityPastTheBound)-1 || notQuantity != 1 {
		t.Errorf("the binary refused %d of %d quantities, isQuantity false %d times; its causes: %v", refused, len(quantityPastTheBound)-1, notQuantity, got)
	}
	evaluated := quantityPastTheBound[:len(quantityPastTheBound)-1]
	want := parseCRD(t, []byte(celDefinition(schema(evaluated)))).objectCauses(t, "v1", obj, nil)
	for _, c := range want {
		if strings.Contains(c.Message, "evaluating rule") {
			t.Errorf("kube refuses too: %v", c)
		}
	}
	if len(want) != len(evaluated) {
		t.Errorf("kube has %d causes for %d expressions: %v", len(want), len(evaluated), want)
	}
}

// quantityNetPerItem are rules calling each function and overload on an
// item, self.
var quantityNetPerItem = []string{
	`isQuantity(self)`, `quantity(self).isInteger()`, `sign(quantity(self)) == 1`, `quantity(self).add(1).isInteger()`,
	`quantity(self).sub(quantity('1')).asInteger() == 0`, `quantity(self).compareTo(quantity('1')) == 0`,
	`quantity(self).isLessThan(quantity('1'))`, `quantity(self).asApproximateFloat() > 1.0`, `quantity(self) == quantity('1')`,
	`isIP(self)`, `ip(self).family() == 4`, `ip(self).isLoopback()`, `ip.isCanonical(self)`, `string(ip(self)) == self`,
	`ip(self) == ip('1.2.3.4')`, `isCIDR(self)`, `cidr(self).prefixLength() > 0`, `cidr(self).masked() == cidr(self)`,
	`cidr(self).ip().isGlobalUnicast()`, `cidr('10.0.0.0/8').containsIP(self)`, `cidr('10.0.0.0/8').containsIP(ip(self))`,
	`cidr('10.0.0.0/8').containsCIDR(self)`, `cidr('10.0.0.0/8').containsCIDR(cidr(self))`, `string(cidr(self)) == self`,
}

// TestCELQuantityNetDefinitionsAsKube creates definitions whose library
// calls do not compile in kube, or whose estimated cost (kube's per-call
// figures for each function) is near or over kube's limits: the binary
// accepts or refuses each as kube does, with kube's messages and figures.
func TestCELQuantityNetDefinitionsAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	str := func(maxLength int, rule string) string {
		return fmt.Sprintf(`{"type":"object","properties":{"s":{"type":"string","maxLength":%d}},"x-kubernetes-validations":[{"rule":%q}]}`, maxLength, rule)
	}
	// Every function once per rule, on each of maxItems strings: kube's
	// message states each rule's estimate over its limit, to 0.1 of a
	// unit per call with a million items.
	items := func(maxItems int) string {
		var rules []string
		for _, r := range quantityNetPerItem {
			rules = append(rules, fmt.Sprintf(`{"rule":%q}`, r))
		}
		return fmt.Sprintf(`{"type":"object","properties":{"l":{"type":"array","maxItems":%d,"items":{"type":"string","maxLength":100,"x-kubernetes-validations":[%s]}}}}`, maxItems, strings.Join(rules, ","))
	}
	tests := []struct{ name, schema string }{
		{"quantity inequality", str(10, "quantity('1Ki') != quantity('1k')")},
		{"ip inequality", str(10, "ip('::1') != ip(self.s)")},
		{"sign as a member", str(10, "quantity(self.s).sign() == 1")},
		{"quantity of an int", str(10, "quantity(1).isInteger()")},
		{"add of a double", str(10, "quantity(self.s).add(1.0).isInteger()")},
		{"isCanonical as a member", str(10, "ip(self.s).isCanonical()")},
		{"family of a string", str(10, "self.s.family() == 4")},
		{"containsIP of an int", str(10, "cidr(self.s).containsIP(1)")},
		{"quantity equals a string", str(10, "quantity(self.s) == '1'")},
		{"parses of an unbounded string", str(3*1024*1024, "isQuantity(self.s) && isIP(self.s) && isCIDR(self.s) && ip.isCanonical(self.s)")},
		{"parses of a bounded string", str(1000, "isQuantity(self.s) && quantity(self.s).isGreaterThan(quantity('1')) && isIP(self.s) && ip(self.s).family() == 4 && ip.isCanonical(self.s)")},
		{"every function on a million items", items(1000000)},
		{"every function on a thousand items", items(1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sameDefinitionAnswer(t, srv.URL, celDefinition(tt.schema)) })
	}
}

// TestCELQuantityNetRuntimeBudgetAsKube writes items whose rules call
// every function, always true, until kube's runtime budget for the object
// runs out: the item at which it does (kube's cause, l[3421]) pins the
// runtime costs summed over thousands of calls, to an item's worth
// (about 3000 units, mostly quantity parses).
func TestCELQuantityNetRuntimeBudgetAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	quantities := []string{
		`!isQuantity(self) || quantity(self).add(1).sub(quantity('1')).compareTo(quantity(self)) == 0 && quantity(self).add(quantity('1')).sub(1) == quantity(self)`,
		`!isQuantity(self) || sign(quantity(self)) >= 0 && quantity(self).isInteger() && quantity(self).asApproximateFloat() >= 0.0 && quantity(self).asInteger() >= 0 && !quantity(self).isLessThan(quantity('0')) && quantity(self) == quantity(self)`,
	}
	nets := []string{
		`!isIP(self) || ip(self).family() == 6 && ip.isCanonical(self) == (string(ip(self)) == self) && !ip(self).isLoopback()`,
		`!isIP(self) || !ip(self).isUnspecified() && !ip(self).isLinkLocalMulticast() && !ip(self).isLinkLocalUnicast() && ip(self).isGlobalUnicast() && ip(self) == ip(self)`,
		`!isCIDR(self) || cidr(self).containsIP(cidr(self).ip()) && cidr(self).containsIP('2001:db8:85a3::1') == cidr(self).containsIP('2001:db8:85a3::1')`,
		`!isCIDR(self) || cidr(self).containsCIDR(cidr(self).masked()) && cidr(self).containsCIDR(self) && cidr(self).prefixLength() >= 0 && cidr(self) == cidr(self)`,
	}
	var rules []string
	for i := range 6 {
		for _, c := range quantities {
			rules = append(rules, fmt.Sprintf(`{"rule":%q}`, fmt.Sprintf("%s || %d == 0", c, i)))
		}
	}
	for _, c := range nets {
		rules = append(rules, fmt.Sprintf(`{"rule":%q}`, c))
	}
	var items []any
	long := strings.Repeat("0", 496) + "1500"
	for range 650 {
		items = append(items, long, long, long, long, "2001:db8:85a3::8a2e:370:7334", "2001:db8:85a3::/48")
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{"l":{"type":"array","maxItems":%d,"items":{"type":"string","maxLength":500,"x-kubernetes-validations":[%s]}}}}`, len(items), strings.Join(rules, ","))
	crd, url := quantityNetInstall(t, srv.URL, schema)
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "t"}, "l": items}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := crd.objectCauses(t, "v1", jsonObject(t, string(b)), nil)
	if len(want) != 1 || !strings.Contains(want[0].Message, "running out of cost budget") {
		t.Fatalf("kube's budget does not run out: %v", want)
	}
	code, got, _ := write(t, "POST", url, jsonObject(t, string(b)))
	sameAnswer(t, want, code, got)
}
