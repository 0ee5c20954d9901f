package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// libCase is a rule calling kube's CEL libraries, the data of the object
// it runs over (the fields of libProps), and kube's answer: 'R' it refuses
// the rule in a definition, else 'T' the rule holds, 'F' it does not, 'E'
// it fails with an error or runs out of cost.
type libCase struct {
	rule, data string
	kube       byte
	props      string // the object's schema when not libProps
	msg        string // the rule's messageExpression
}

// libProps are the fields a case's rule reads: strings, a pattern, lists
// of every element type kube's list functions take.
const libProps = `"s":{"type":"string","maxLength":4096},"t":{"type":"string","maxLength":256},"re":{"type":"string","maxLength":256},
"n":{"type":"integer"},"l":{"type":"array","maxItems":1000,"items":{"type":"integer"}},
"sl":{"type":"array","maxItems":100,"items":{"type":"string","maxLength":64}},
"dl":{"type":"array","maxItems":100,"items":{"type":"number"}},
"bl":{"type":"array","maxItems":100,"items":{"type":"boolean"}},
"tl":{"type":"array","maxItems":100,"items":{"type":"string","format":"date-time"}},
"du":{"type":"array","maxItems":100,"items":{"type":"string","format":"duration"}},
"by":{"type":"array","maxItems":100,"items":{"type":"string","format":"byte","maxLength":64}}`

var libCases = []libCase{
	// URLs
	{rule: `isURL('https://example.com:80/path?query=val#fragment')`, kube: 'T'},
	{rule: `isURL('/absolute-path')`, kube: 'T'},
	{rule: `isURL('relative/path')`, kube: 'F'},
	{rule: `isURL(self.s)`, data: `{"s":"ht tp://x"}`, kube: 'F'},
	{rule: `isURL(self.s)`, data: `{"s":"https://[::1]:8080/x"}`, kube: 'T'},
	{rule: `url(self.s).getScheme() == 'https'`, data: `{"s":"https://example.com/a"}`, kube: 'T'},
	{rule: `url(self.s).getHost() == 'example.com:8443'`, data: `{"s":"https://example.com:8443/a"}`, kube: 'T'},
	{rule: `url(self.s).getHostname() == '::1'`, data: `{"s":"https://[::1]:80/"}`, kube: 'T'},
	{rule: `url(self.s).getHost() == '[::1]:80'`, data: `{"s":"https://[::1]:80/"}`, kube: 'T'},
	{rule: `url(self.s).getPort() == ''`, data: `{"s":"https://example.com/"}`, kube: 'T'},
	{rule: `url(self.s).getPort() == '8080'`, data: `{"s":"http://a:8080"}`, kube: 'T'},
	{rule: `url(self.s).getEscapedPath() == '/a%20b/c'`, data: `{"s":"https://x/a%20b/c"}`, kube: 'T'},
	{rule: `url(self.s).getEscapedPath() == ''`, data: `{"s":"https://x"}`, kube: 'T'},
	{rule: `url(self.s).getQuery() == {'a': ['1', '2'], 'b': ['']}`, data: `{"s":"https://x/?a=1&a=2&b="}`, kube: 'T'},
	{rule: `url(self.s).getQuery()['k'][0] == 'v w'`, data: `{"s":"https://x/?k=v+w"}`, kube: 'T'},
	{rule: `url(self.s).getQuery().size() == 0`, data: `{"s":"/p"}`, kube: 'T'},
	{rule: `url(self.s).getScheme() == ''`, data: `{"s":"relative"}`, kube: 'E'},
	{rule: `url(self.s).getHost() == ''`, data: `{"s":"https://exa mple.com"}`, kube: 'E'},
	{rule: `url(self.s).getHost() == ''`, data: `{"s":"http://[::1"}`, kube: 'E'},
	{rule: `url(self.s) == url(self.t)`, data: `{"s":"https://a/b","t":"https://a/b"}`, kube: 'T'},
	{rule: `url(self.s) != url(self.t)`, data: `{"s":"https://a/b","t":"https://a/c"}`, kube: 'T'},
	{rule: `type(url(self.s)) == type(url(self.t))`, data: `{"s":"/a","t":"/b"}`, kube: 'R'},
	// regex
	{rule: `self.s.find(self.re) == 'abc'`, data: `{"s":"xx abc abd","re":"ab."}`, kube: 'T'},
	{rule: `self.s.find('[0-9]+') == ''`, data: `{"s":"none"}`, kube: 'T'},
	{rule: `self.s.findAll('[a-z]+') == ['ab', 'cd', 'ef']`, data: `{"s":"ab1cd2ef"}`, kube: 'T'},
	{rule: `self.s.findAll('[a-z]+', 2) == ['ab', 'cd']`, data: `{"s":"ab1cd2ef"}`, kube: 'T'},
	{rule: `self.s.findAll('[a-z]+', 0) == []`, data: `{"s":"ab1cd2ef"}`, kube: 'T'},
	{rule: `self.s.findAll('[a-z]+', -1).size() == 3`, data: `{"s":"ab1cd2ef"}`, kube: 'T'},
	{rule: `self.s.findAll(self.re).size() == 2`, data: `{"s":"a1b22","re":"[0-9]+"}`, kube: 'T'},
	{rule: `self.s.findAll(self.re, self.n).size() == 1`, data: `{"s":"a1b22","re":"[0-9]+","n":1}`, kube: 'T'},
	{rule: `self.s.find(self.re) == ''`, data: `{"s":"x","re":"("}`, kube: 'E'},
	{rule: `self.s.findAll(self.re).size() == 0`, data: `{"s":"x","re":"a**"}`, kube: 'E'},
	{rule: `self.s.findAll(self.re, 3).size() == 0`, data: `{"s":"x","re":"[z-a]"}`, kube: 'E'},
	{rule: `self.s.find(self.re) != ''`, data: `{"s":"` + strings.Repeat("ab", 2000) + `","re":"` + strings.Repeat("(a|b)", 50) + `"}`, kube: 'T'},
	{rule: `self.s.findAll('.').size() == 4000`, data: `{"s":"` + strings.Repeat("xy", 2000) + `"}`, kube: 'T'},
	{rule: `self.s.find('^\\w+$') == self.s`, data: `{"s":"hello_1"}`, kube: 'T'},
	{rule: `self.s.find(self.re) == ''`, data: `{"s":"aaa","re":"a{1001}"}`, kube: 'E'},
	{rule: `self.s.findAll(self.re).size() == 0`, data: `{"s":"aaa","re":"((a{100}){100}){100}"}`, kube: 'E'},
	// lists
	{rule: `self.l.isSorted()`, data: `{"l":[1,2,2,3]}`, kube: 'T'},
	{rule: `self.l.isSorted()`, data: `{"l":[3,1]}`, kube: 'F'},
	{rule: `self.l.isSorted()`, data: `{"l":[]}`, kube: 'T'},
	{rule: `self.sl.isSorted()`, data: `{"sl":["a","b","B"]}`, kube: 'F'},
	{rule: `self.dl.isSorted()`, data: `{"dl":[0.5,1.5,2]}`, kube: 'T'},
	{rule: `self.bl.isSorted()`, data: `{"bl":[false,true,true]}`, kube: 'T'},
	{rule: `self.tl.isSorted()`, data: `{"tl":["2020-01-01T00:00:00Z","2021-01-01T00:00:00Z"]}`, kube: 'T'},
	{rule: `self.du.isSorted()`, data: `{"du":["1h","30m"]}`, kube: 'F'},
	{rule: `self.by.isSorted()`, data: `{"by":["AQ==","Ag=="]}`, kube: 'T'},
	{rule: `self.l.sum() == 6`, data: `{"l":[1,2,3]}`, kube: 'T'},
	{rule: `self.l.sum() == 0`, data: `{"l":[]}`, kube: 'T'},
	{rule: `self.dl.sum() == 3.5`, data: `{"dl":[1.5,2]}`, kube: 'T'},
	{rule: `self.du.sum() == duration('90m')`, data: `{"du":["1h","30m"]}`, kube: 'T'},
	{rule: `self.l.sum() > 0`, data: `{"l":[4611686018427387904,4611686018427387904]}`, kube: 'E'},
	{rule: `[1u, 2u].sum() == 3u`, kube: 'T'},
	{rule: `self.l.min() == -5 && self.l.max() == 7`, data: `{"l":[3,-5,7,0]}`, kube: 'T'},
	{rule: `self.l.min() == 0`, data: `{"l":[]}`, kube: 'E'},
	{rule: `self.l.max() == 0`, data: `{"l":[]}`, kube: 'E'},
	{rule: `self.sl.min() == 'a' && self.sl.max() == 'c'`, data: `{"sl":["b","a","c"]}`, kube: 'T'},
	{rule: `self.dl.max() == 2.5`, data: `{"dl":[2.5,1]}`, kube: 'T'},
	{rule: `self.tl.min() == timestamp('2020-01-01T00:00:00Z')`, data: `{"tl":["2021-01-01T00:00:00Z","2020-01-01T00:00:00Z"]}`, kube: 'T'},
	{rule: `self.bl.max()`, data: `{"bl":[false,true]}`, kube: 'T'},
	{rule: `self.by.max() == b'\x02'`, data: `{"by":["AQ==","Ag=="]}`, kube: 'T'},
	{rule: `[1u, 5u].max() == 5u`, kube: 'T'},
	{rule: `self.l.indexOf(2) == 1 && self.l.lastIndexOf(2) == 3`, data: `{"l":[1,2,3,2]}`, kube: 'T'},
	{rule: `self.l.indexOf(9) == -1 && self.l.lastIndexOf(9) == -1`, data: `{"l":[1,2]}`, kube: 'T'},
	{rule: `self.sl.indexOf('b') == 1`, data: `{"sl":["a","b"]}`, kube: 'T'},
	{rule: `[[1], [2]].indexOf([2]) == 1`, kube: 'T'},
	{rule: `[{'a': 1}, {'a': 1}].lastIndexOf({'a': 1}) == 1`, kube: 'T'},
	{rule: `self.s.indexOf('c') == 2 && self.s.lastIndexOf('c') == 3`, data: `{"s":"abccd"}`, kube: 'T'},
	{rule: `self.l.sum() == 499500`, data: `{"l":` + intsJSON(1000) + `}`, kube: 'T'},
	{rule: `self.l.isSorted() && self.l.max() == 999`, data: `{"l":` + intsJSON(1000) + `}`, kube: 'T'},
	// format
	{rule: `format.named(self.s).hasValue()`, data: `{"s":"dns1123Label"}`, kube: 'T'},
	{rule: `format.named(self.s).hasValue()`, data: `{"s":"nope"}`, kube: 'F'},
	{rule: `format.named('dns1123Label').value().validate(self.s).hasValue()`, data: `{"s":"a.b"}`, kube: 'T'},
	{rule: `format.dns1123Label().validate(self.s).value() == ['x']`, data: `{"s":"a.b"}`, kube: 'F'},
	{rule: `!format.dns1123Label().validate(self.s).hasValue()`, data: `{"s":"Upper"}`, kube: 'F'},
	{rule: `!format.dns1123Label().validate(self.s).hasValue()`, data: `{"s":"` + strings.Repeat("a", 64) + `"}`, kube: 'F'},
	{rule: `!format.dns1123Subdomain().validate(self.s).hasValue()`, data: `{"s":"a..b"}`, kube: 'F'},
	{rule: `!format.dns1035Label().validate(self.s).hasValue()`, data: `{"s":"1abc"}`, kube: 'F'},
	{rule: `!format.qualifiedName().validate(self.s).hasValue()`, data: `{"s":"example.com/a/b"}`, kube: 'F'},
	{rule: `!format.qualifiedName().validate(self.s).hasValue()`, data: `{"s":"/name"}`, kube: 'F'},
	{rule: `!format.dns1123LabelPrefix().validate(self.s).hasValue()`, data: `{"s":"abc-"}`, kube: 'T'},
	{rule: `!format.dns1123SubdomainPrefix().validate(self.s).hasValue()`, data: `{"s":"a.b-"}`, kube: 'T'},
	{rule: `!format.dns1035LabelPrefix().validate(self.s).hasValue()`, data: `{"s":"-"}`, kube: 'F'},
	{rule: `!format.labelValue().validate(self.s).hasValue()`, data: `{"s":"-bad"}`, kube: 'F'},
	{rule: `!format.uri().validate(self.s).hasValue()`, data: `{"s":"rel"}`, kube: 'F'},
	{rule: `!format.uuid().validate(self.s).hasValue()`, data: `{"s":"123e4567e89b12d3a456426614174000"}`, kube: 'T'},
	{rule: `!format.uuid().validate(self.s).hasValue()`, data: `{"s":"not-a-uuid"}`, kube: 'F'},
	{rule: `!format.byte().validate(self.s).hasValue()`, data: `{"s":"aGk="}`, kube: 'T'},
	{rule: `!format.byte().validate(self.s).hasValue()`, data: `{"s":""}`, kube: 'F'},
	{rule: `!format.date().validate(self.s).hasValue()`, data: `{"s":"2020-02-30"}`, kube: 'F'},
	{rule: `!format.datetime().validate(self.s).hasValue()`, data: `{"s":"2020-01-01t10:00:00z"}`, kube: 'T'},
	{rule: `!format.datetime().validate(self.s).hasValue()`, data: `{"s":"2020-01-01T24:00:00Z"}`, kube: 'F'},
	{rule: `format.dns1123Label() == format.named('dns1123Label').value() && !(format.uri() == format.uuid())`, kube: 'T'},
	{rule: `format.uri() != format.uuid()`, kube: 'R'},
	// semver
	{rule: `isSemver('1.2.3') && !isSemver('v1.2.3') && isSemver('v1.2.3', true)`, kube: 'T'},
	{rule: `isSemver(self.s)`, data: `{"s":"1.2.3-rc.1+build.5"}`, kube: 'T'},
	{rule: `isSemver(self.s, true)`, data: `{"s":"v01.002"}`, kube: 'T'},
	{rule: `isSemver(self.s, true)`, data: `{"s":"1-rc"}`, kube: 'F'},
	{rule: `semver(self.s).major() == 1 && semver(self.s).minor() == 2 && semver(self.s).patch() == 3`, data: `{"s":"1.2.3"}`, kube: 'T'},
	{rule: `semver(self.s, true) == semver('1.2.0')`, data: `{"s":"v1.02"}`, kube: 'T'},
	{rule: `semver(self.s).major() == 0`, data: `{"s":"1.2"}`, kube: 'E'},
	{rule: `semver(self.s).major() == 0`, data: `{"s":"01.2.3"}`, kube: 'E'},
	{rule: `semver(self.s).major() == 0`, data: `{"s":"x.2.3"}`, kube: 'E'},
	{rule: `semver(self.s, true).major() == 0`, data: `{"s":"1.2-rc"}`, kube: 'E'},
	{rule: `semver(self.s).isGreaterThan(semver(self.t))`, data: `{"s":"1.10.0","t":"1.9.0"}`, kube: 'T'},
	{rule: `semver(self.s).isLessThan(semver(self.t))`, data: `{"s":"1.0.0-alpha","t":"1.0.0"}`, kube: 'T'},
	{rule: `semver(self.s).compareTo(semver(self.t)) == 0`, data: `{"s":"1.0.0+a","t":"1.0.0+b"}`, kube: 'T'},
	{rule: `semver(self.s).compareTo(semver(self.t)) == -1`, data: `{"s":"1.0.0-alpha.1","t":"1.0.0-alpha.beta"}`, kube: 'T'},
	// strings extensions, kube's costs
	{rule: `self.s.lowerAscii() == 'abc' && self.s.upperAscii() == 'ABC'`, data: `{"s":"aBc"}`, kube: 'T'},
	{rule: `self.s.replace('a', 'bb').split('b').join('-') == '----c'`, data: `{"s":"aac"}`, kube: 'R'},
	{rule: `self.s.replace('a', 'bb') == 'bbbbc' && self.s.split('a', 2) == ['', 'ac']`, data: `{"s":"aac"}`, kube: 'T'},
	{rule: `self.sl.join('-') == 'a-b' && self.sl.join() == 'ab'`, data: `{"sl":["a","b"]}`, kube: 'T'},
	{rule: `self.s.substring(1, 3) == 'bc' && self.s.trim() == self.s`, data: `{"s":"abcd"}`, kube: 'T'},
	// hostile: long strings and patterns, within the limits and past the
	// per-call one (kube's static bound is 16 times a call's runtime cost)
	{rule: `self.s.find(self.re) == ''`, props: `"s":{"type":"string","maxLength":25000},"re":{"type":"string","maxLength":250}`,
		data: `{"s":"` + strings.Repeat("a", 25000) + `","re":"` + strings.Repeat("(a|b)*c", 35) + `"}`, kube: 'T'},
	{rule: `self.s.find(self.re) == ''`, props: `"s":{"type":"string","maxLength":100000},"re":{"type":"string","maxLength":1000}`, kube: 'R'},
	{rule: `self.l.all(x, self.l.sum() >= 0)`, props: `"l":{"type":"array","maxItems":2000,"items":{"type":"integer"}}`,
		data: `{"l":` + intsJSON(2000) + `}`, kube: 'E'},
	// kube folds constants: a literal map costs nothing at run time, where
	// building it 35000 times would pass the per-call limit
	{rule: `self.l.all(x, {'a': 1}.size() == 1)`, props: `"l":{"type":"array","maxItems":35000,"items":{"type":"integer"}}`,
		data: `{"l":` + intsJSON(35000) + `}`, kube: 'T'},
	{rule: `self.sl.all(x, self.sl.indexOf(x) >= 0)`, props: `"sl":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":5}}`,
		data: `{"sl":` + wordsJSON(1000) + `}`, kube: 'T'}, // strings under 10 bytes cost nothing
	{rule: `self.l.sum() >= 0 && self.l.isSorted()`, props: `"l":{"type":"array","maxItems":100000,"items":{"type":"integer"}}`,
		data: `{"l":` + intsJSON(100000) + `}`, kube: 'T'},
}

func init() { libCases = append(libCases, formatCases()...) }

// formatCases check each of kube's formats on valid and invalid strings;
// the rule's message shows the first and last of what the format says.
func formatCases() []libCase {
	names := []string{"dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix", "dns1123SubdomainPrefix",
		"dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime"}
	values := []string{"", "a", "Bad_Value.-", "abc-", strings.Repeat("a", 64), strings.Repeat("b.", 127) + "c", "a/b/c", "/x", "-",
		"example.com/" + strings.Repeat("n", 64), "http://%zz", "https://x.y/p?q", "123E4567-e89b-12d3-a456-426614174000", "aGk=",
		"2020-02-29", "2021-02-29", "2020-01-01T23:59:59.5+01:00", "2020-01-01 10:00:00Z"}
	var cases []libCase
	for _, n := range names {
		for _, v := range values {
			f := fmt.Sprintf("format.named('%s').value().validate(self.s)", n)
			data, _ := json.Marshal(map[string]string{"s": v})
			cases = append(cases, libCase{
				rule: "!" + f + ".hasValue()", data: string(data), kube: '?',
				msg: f + ".orValue(['ok'])[0] + ' | ' + " + f + ".orValue(['ok'])[" + f + ".orValue(['ok']).size() - 1]",
			})
		}
	}
	return cases
}

// wordsJSON is a list of n strings "w0", "w1", ...
func wordsJSON(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf("w%d", i)
	}
	b, _ := json.Marshal(l)
	return string(b)
}

// intsJSON is the list 0..n-1.
func intsJSON(n int) string {
	b, _ := json.Marshal(func() []int {
		l := make([]int, n)
		for i := range l {
			l[i] = i
		}
		return l
	}())
	return string(b)
}

// libDefinition is a definition whose spec has a property per case, each
// with the case's rule: a case's object sets only its own.
func libDefinition(cases []libCase) string {
	var props []string
	for i, c := range cases {
		p := c.props
		if p == "" {
			p = libProps
		}
		v, _ := json.Marshal(map[string]string{"rule": c.rule, "messageExpression": c.msg})
		props = append(props, fmt.Sprintf(`"c%d":{"type":"object","properties":{%s},"x-kubernetes-validations":[%s]}`, i, p, v))
	}
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	"metadata":{"name":"libs.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"libs","kind":"Lib"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{` +
		strings.Join(props, ",") + `}}}}}}]}}`
}

// TestCELLibrariesAsKube writes objects whose rules call every function and
// overload of kube's URL, regex, list, format and semver libraries and
// cel-go's string extensions, on valid, invalid and hostile input: the
// binary accepts the definition as kube does, and answers each write as
// kube's own CEL validator does (accepted, or 422 with the same causes:
// false rules, evaluation errors, the per-call cost limit).
func TestCELLibrariesAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	var cases []libCase
	for _, c := range libCases {
		if c.kube != 'R' {
			cases = append(cases, c)
		}
	}
	crd := parseCRD(t, []byte(libDefinition(cases)))
	if causes := crd.createCauses(t); len(causes) > 0 {
		t.Fatalf("kube refuses the definition: %v", causes)
	}
	if code, causes, _ := write(t, "POST", srv.URL+"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.v1); code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", code, causes)
	}
	url := srv.URL + "/apis/example.com/v1/namespaces/default/libs"
	waitServed(t, url)
	kube := crd.validator(t, "v1")
	for i, c := range cases {
		t.Run(fmt.Sprintf("c%d %s", i, c.rule), func(t *testing.T) {
			data := c.data
			if data == "" {
				data = "{}"
			}
			obj := func() map[string]any {
				return jsonObject(t, fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Lib","metadata":{"name":"c%d"},"spec":{"c%d":%s}}`, i, i, data))
			}
			want := kube(t, obj(), nil)
			if got := ruleOutcome(want); c.kube != '?' && got != c.kube {
				t.Fatalf("kube answers %c, the table says %c: %v", got, c.kube, want)
			}
			code, got, _ := write(t, "POST", url, obj())
			sameAnswer(t, want, code, got)
		})
	}
}

// ruleOutcome classifies kube's causes for one rule.
func ruleOutcome(causes []metav1.StatusCause) byte {
	switch {
	case len(causes) == 0:
		return 'T'
	case len(causes) == 1 && !strings.Contains(causes[0].Message, " evaluating rule: ") && !strings.Contains(causes[0].Message, "cost"):
		return 'F'
	}
	return 'E'
}

// TestCELLibraryDefinitionsAsKube creates a definition with each case's
// rule alone, and with rules kube refuses (calls that do not type-check,
// bad literals, costs over the limits): the binary accepts or refuses each
// as kube does, with the same causes.
func TestCELLibraryDefinitionsAsKube(t *testing.T) {
	srv := StartListwatch(t, listwatchBin(t))
	crds := srv.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for i, c := range append(libCases, libDefinitions...) {
		t.Run(fmt.Sprintf("%d %s", i, c.rule), func(t *testing.T) {
			crd := parseCRD(t, []byte(libDefinition([]libCase{c})))
			want := crd.createCauses(t)
			if refused := len(want) > 0; refused != (c.kube == 'R') && c.kube != '?' {
				t.Fatalf("kube refuses: %v, the table says %c: %v", refused, c.kube, want)
			}
			code, got, _ := write(t, "POST", crds, crd.v1)
			if code < 300 {
				defer write(t, "DELETE", crds+"/libs.example.com", nil)
			}
			sameAnswer(t, want, code, got)
		})
	}
}

// libDefinitions are rules only defined, most of which kube refuses ('R').
var libDefinitions = []libCase{
	{rule: `url(1) == url('/a')`, kube: 'R'},
	{rule: `isURL(self.n)`, kube: 'R'},
	{rule: `self.s.find(1) == ''`, kube: 'R'},
	{rule: `self.s.find('(') == ''`, kube: 'R'},
	{rule: `self.s.findAll('[', 1).size() == 0`, kube: 'R'},
	{rule: `self.s.findAll('a', 'b').size() == 0`, kube: 'R'},
	{rule: `self.s.matches('(')`, kube: 'R'},
	{rule: `self.s.find('((a{100}){100}){100}') == ''`, kube: 'R'},
	{rule: `self.s.size() > 0 && duration('1x') > duration('1s')`, kube: 'R'},
	{rule: `timestamp('yesterday') > timestamp('2020-01-01T00:00:00Z')`, kube: 'R'},
	{rule: `[1, 'a'].size() == 2`, kube: 'R'},
	{rule: `self.sl.sum() == ''`, kube: 'R'},
	{rule: `self.bl.sum()`, kube: 'R'},
	{rule: `self.l.min() == 'a'`, kube: 'R'},
	{rule: `[[1]].isSorted()`, kube: 'R'},
	{rule: `self.l.includes(1)`, kube: 'R'},
	{rule: `format.nope().validate('a').hasValue()`, kube: 'R'},
	{rule: `format.named(1).hasValue()`, kube: 'R'},
	{rule: `format.dns1123Label().validate(1).hasValue()`, kube: 'R'},
	{rule: `semver('1.0.0').major() == 'x'`, kube: 'R'},
	{rule: `semver('1.0.0', 'x').major() == 1`, kube: 'R'},
	{rule: `semver('1.0.0').isGreaterThan('1.0.0')`, kube: 'R'},
	{rule: `isSemver('1.0.0', 1)`, kube: 'R'},
	// a rule's type must be bool, not dyn (compilation.go compares it with cel.BoolType)
	{rule: `dyn(true)`, kube: 'R'},
	{rule: `self.p`, props: `"p":{"x-kubernetes-int-or-string":true}`, kube: 'R'},
	{rule: `self.u`, props: `"u":{"x-kubernetes-preserve-unknown-fields":true}`, kube: 'R'},
	// a field without a type, or with items or values without one, is not declared (SchemaDeclType)
	{rule: `self.u == true`, props: `"u":{"x-kubernetes-preserve-unknown-fields":true}`, kube: 'R'},
	{rule: `self.l.size() > 0`, props: `"l":{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}`, kube: 'R'},
	{rule: `self.m.size() > 0`, props: `"m":{"type":"object","additionalProperties":{"x-kubernetes-preserve-unknown-fields":true}}`, kube: 'R'},
	{rule: `self.s == 'a'`, props: `"s":{"type":"string"},"u":{"x-kubernetes-preserve-unknown-fields":true}`, kube: 'T'},
	// kube's authorization library is declared, though no CRD rule reaches its types
	{rule: `self.s.name('x') == self.s`, kube: 'R'},
	{rule: `self.s.check('x').allowed()`, kube: 'R'},
	// costs: unbounded strings and lists
	{rule: `self.s.find(self.re) == ''`, props: `"s":{"type":"string"},"re":{"type":"string"}`, kube: 'R'},
	{rule: `self.s.findAll('a').size() < 2`, props: `"s":{"type":"string"}`, kube: 'T'},
	{rule: `self.s.findAll(self.re).size() < 2`, props: `"s":{"type":"string"},"re":{"type":"string","maxLength":200}`, kube: 'R'},
	{rule: `self.l.sum() > 0`, props: `"l":{"type":"array","items":{"type":"integer"}}`, kube: 'T'},
	{rule: `self.l.all(x, self.l.sum() > 0)`, props: `"l":{"type":"array","items":{"type":"integer"}}`, kube: 'R'},
	{rule: `self.l.all(x, self.l.indexOf(x) >= 0)`, props: `"l":{"type":"array","maxItems":5000,"items":{"type":"integer"}}`, kube: 'R'},
	{rule: `self.sl.all(x, self.sl.isSorted())`, props: `"sl":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":100}}`, kube: 'R'},
	{rule: `self.sl.all(x, url(x).getHost() != '')`, props: `"sl":{"type":"array","items":{"type":"string"}}`, kube: 'R'},
	{rule: `self.sl.all(x, format.dns1123Label().validate(x).hasValue())`, props: `"sl":{"type":"array","items":{"type":"string"}}`, kube: 'R'},
	{rule: `self.sl.all(x, isSemver(x))`, props: `"sl":{"type":"array","items":{"type":"string"}}`, kube: 'R'},
	{rule: `self.sl.all(x, x.lowerAscii() == x)`, props: `"sl":{"type":"array","items":{"type":"string"}}`, kube: 'R'},
	{rule: `self.sl.all(x, x.replace('a', 'bbbb').split('b').join('') == x)`, props: `"sl":{"type":"array","maxItems":100,"items":{"type":"string","maxLength":10000}}`, kube: 'R'},
	{rule: `self.sl.all(x, url(x) == url(x))`, props: `"sl":{"type":"array","maxItems":1000,"items":{"type":"string"}}`, kube: 'R'},
}
