package interop

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCRDFormatsMatchKube validates many strings, valid, invalid and at
// the edges, against every format kube's strfmt registry knows (and some
// it does not, which kube strips from schemas), with kube's validator and
// ours: the same causes for each.
func TestCRDFormatsMatchKube(t *testing.T) {
	formats := []string{"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
		"uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password",
		"date", "duration", "datetime", "date-time", "k8s-short-name", "k8s-long-name", "k8sshortname", "IPv4", "int32", "unknown"}
	values := []string{"", "a", "abc", "0", "5", "-1", "1.5", "anything at all",
		"2026-01-02", "2026-13-01", "2026-02-29", "2024-02-29", "2026-1-2",
		"2026-01-02T03:04:05Z", "2026-01-02t03:04:05z", "2026-01-02T03:04:05.123+01:00", "2026-01-02T03:04:05",
		"2026-01-02T24:00:00Z", "2026-01-02T23:59:60Z", "2026-01-02T03:04:05x9Z", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05Zt",
		"5s", "1h30m", "3 days", "2 weeks 1 fortnight", "1 fortnight", "99999999999999999999s", "-5m", "10 µs", "1 hours", "1d", "P1D",
		"0321751043", "0-321-75104-3", "978-0321751041", "9780321751041", "9780321751042", "123456789X", "123456789x", "0 321 75104 3",
		"4111111111111111", "4111 1111 1111 1111", "4111111111111112", "378282246310005", "4111-1111-1111-1111x",
		"123-45-6789", "123 45 6789", "123456789", "123-45-678",
		"#fff", "fff", "#ffff", "#FfFfFf", "rgb(0,0,0)", "rgb( 255 , 255 , 255 )", "rgb(256,0,0)", "rgb(01,0,0)",
		"00:00:5e:00:53:01", "00-00-5e-00-53-01", "0000.5e00.5301", "00:00:5e:00:53", "02:00:5e:10:00:00:00:01",
		"a987fbc9-4bed-3078-cf07-9141ba07c9f3", "A987FBC94BED3078CF079141BA07C9F3", "a987fbc9-4bed-4078-8f07-9141ba07c9f3",
		"a987fbc9-4bed-5078-af07-9141ba07c9f3", "a987fbc9-4bed-4078-cf07-9141ba07c9f3",
		"https://example.com/a?b", "/relative", "relative", "mailto:a@b", "http://[::1]:80/", "http://a b", "*",
		"a@b.c", "A <a@b.c>", "a@", "@b", "a@b@c",
		"example.com", "-x", "x-", "a..b", "localhost", "ex_ample.com", strings.Repeat("a", 64) + ".com", "日本.jp", "a.b.c.d.e.f", "1.com",
		"1.2.3.4", "01.02.03.004", "1.2.3", "256.1.1.1", "1.2.3.0256", "::1", "::ffff:1.2.3.4", "fe80::1%eth0", "1.2.3.4/32",
		"10.0.0.0/08", "::/0", "::/129", "1.2.3.4/33", "010.0.0.0/8", "1.2.3.4/", "1.2.3.4/-1",
		"aGk=", "aGk", "aGVsbG8=", "YQ==", "a\nGk=", "!!!!", "aGk=aGk=", "a-_b",
		"507f1f77bcf86cd799439011", "507F1F77BCF86CD799439011", "507F1F77BCF86CD79943901G", "507f1f77bcf86cd79943901",
		"ok-name", "Upper", "a.b-c.d", "-a", strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a"}

	props := make([]string, len(formats))
	for i, f := range formats {
		props[i] = `"` + f + `":{"type":"string","format":"` + f + `"}`
	}
	// A format under a junctor, on no type, checks strings too.
	raw := `{"type":"object","properties":{"f":{"type":"object","properties":{` + strings.Join(props, ",") + `}},
		"any":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string","format":"duration"}]},
		"all":{"type":"string","allOf":[{"format":"ipv4"}]}}}`
	kube := newKubeSchema(t, parseSchemaProps(t, raw))
	rejected := 0
	for _, v := range values {
		q, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range formats {
			if len(compareWithKube(t, kube, []byte(raw), []byte(`{"f":{"`+f+`":`+string(q)+`}}`))) > 0 {
				rejected++
			}
		}
		compareWithKube(t, kube, []byte(raw), []byte(`{"any":`+string(q)+`,"all":`+string(q)+`}`))
	}
	if rejected == 0 || rejected == len(values)*len(formats) {
		t.Errorf("kube rejected %d of %d: the values test nothing", rejected, len(values)*len(formats))
	}
	t.Logf("kube rejected %d of %d values", rejected, len(values)*len(formats))
}

// TestCRDTypeChecksMatchKube compares values of the wrong type, numbers
// out of an integer's range and failed junctor alternatives with kube's
// validator: its type and format messages, its "Checked value" causes, the
// alternative it reports (the highest match count) and each message once.
func TestCRDTypeChecksMatchKube(t *testing.T) {
	raw := `{"type":"object","properties":{"i":{"type":"integer"},"i32":{"type":"integer","format":"int32"},"i64":{"type":"integer","format":"int64"},
		"n":{"type":"number"},"f":{"type":"number","format":"float"},"s":{"type":"string"},"d":{"type":"string","format":"date"},
		"ios":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
		"ios2":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^a"},
		"fmt":{"x-kubernetes-preserve-unknown-fields":true,"allOf":[{"format":"ipv4"}]},
		"alt":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
			"anyOf":[{"properties":{"a":{"minimum":5}}},{"required":["b"],"properties":{"b":{"maxLength":1}}}],
			"oneOf":[{"properties":{"a":{"maximum":1}}},{"properties":{"b":{"pattern":"^x","maxLength":1}}}]},
		"any":{"type":"object","anyOf":[{"properties":{"a":{"type":"integer"}}},{"required":["b"]}],"properties":{"a":{"type":"integer"}}}}}`
	kube := newKubeSchema(t, parseSchemaProps(t, raw))
	for _, o := range []string{`{"i":1.5}`, `{"i":3.0}`, `{"i":1e20}`, `{"i":true}`, `{"i":"1"}`, `{"i32":1.5}`, `{"i32":3000000000}`,
		`{"i32":true}`, `{"i32":{}}`, `{"i32":"x"}`, `{"i64":1e30}`, `{"n":"x"}`, `{"n":1}`, `{"f":1e39}`, `{"f":1.5}`, `{"s":1.5}`, `{"s":1}`,
		`{"s":3.0}`, `{"d":["x"]}`, `{"d":5}`, `{"d":true}`, `{"ios":true}`, `{"ios":1.5}`, `{"ios":{}}`, `{"ios":[1]}`, `{"ios2":"b"}`,
		`{"ios2":1.5}`, `{"fmt":5}`, `{"fmt":true}`, `{"fmt":["x"]}`, `{"fmt":{"a":1}}`, `{"fmt":"1.2.3.4"}`, `{"any":{"a":"x"}}`,
		`{"any":{"a":1.5}}`, `{"alt":{"a":2,"b":"yy"}}`, `{"alt":{"a":2}}`, `{"alt":{"a":7,"b":"zz"}}`} {
		compareWithKube(t, kube, []byte(raw), []byte(o))
	}
}
