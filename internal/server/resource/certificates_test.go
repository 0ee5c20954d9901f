package resource

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// A CSR's writes as kube's strategies make them: the status subresource
// cannot add or change approval conditions (it keeps the stored ones when
// it has as many), the approval subresource writes conditions only, both
// take the written metadata (the registry keeps what may not change) and
// fill the conditions' timestamps, a transition keeping the stored
// one of the same type and status.
func TestCSRParts(t *testing.T) {
	const t0, t1 = "2020-01-01T00:00:00Z", "2021-01-01T00:00:00Z"
	stored := parse(t, `{"metadata":{"name":"c","labels":{"a":"b"}},"spec":{"signerName":"example.com/s"},"status":{"conditions":[
		{"type":"Approved","status":"True","reason":"Yes","lastUpdateTime":"`+t0+`","lastTransitionTime":"`+t0+`"}]}}`)
	for _, tc := range []struct {
		name, sub, written, want string
	}{
		{"status keeps the approval", "status",
			`{"metadata":{"name":"c"},"spec":{"signerName":"other"},"status":{"certificate":"Y2VydA==","conditions":[
				{"type":"Approved","status":"True","reason":"Changed","lastUpdateTime":"` + t1 + `"},{"type":"Failed","status":"True","lastUpdateTime":"` + t1 + `","lastTransitionTime":"` + t1 + `"}]}}`,
			`{"metadata":{"name":"c"},"spec":{"signerName":"example.com/s"},"status":{"certificate":"Y2VydA==","conditions":[
				{"type":"Approved","status":"True","reason":"Yes","lastUpdateTime":"` + t0 + `","lastTransitionTime":"` + t0 + `"},
				{"type":"Failed","status":"True","lastUpdateTime":"` + t1 + `","lastTransitionTime":"` + t1 + `"}]}}`},
		{"status adds a denial", "status",
			`{"metadata":{"name":"c","labels":{"z":"w"}},"status":{"conditions":[{"type":"Approved","status":"True","lastUpdateTime":"` + t0 + `","lastTransitionTime":"` + t0 + `"},
				{"type":"Denied","status":"True","lastUpdateTime":"` + t1 + `","lastTransitionTime":"` + t1 + `"}]}}`,
			`{"metadata":{"name":"c","labels":{"z":"w"}},"spec":{"signerName":"example.com/s"},"status":{"conditions":[
				{"type":"Approved","status":"True","reason":"Yes","lastUpdateTime":"` + t0 + `","lastTransitionTime":"` + t0 + `"},
				{"type":"Denied","status":"True","lastUpdateTime":"` + t1 + `","lastTransitionTime":"` + t1 + `"}]}}`},
		{"approval writes the metadata and conditions only", "approval",
			`{"metadata":{"name":"c","labels":{"x":"y"}},"spec":{"signerName":"other"},"status":{"certificate":"Y2VydA==","conditions":[
				{"type":"Approved","status":"True","reason":"Again","lastUpdateTime":"` + t1 + `"}]}}`,
			`{"metadata":{"name":"c","labels":{"x":"y"}},"spec":{"signerName":"example.com/s"},"status":{"conditions":[
				{"type":"Approved","status":"True","reason":"Again","lastUpdateTime":"` + t1 + `","lastTransitionTime":"` + t0 + `"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := stored.DeepCopy()
			got := csrParts[tc.sub].Write(stored, parse(t, tc.written))
			if diff := cmp.Diff(parse(t, tc.want), got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(before, stored); diff != "" {
				t.Errorf("the stored object changed (-before +after)\n%s", diff)
			}
		})
	}
	// A new condition without timestamps gets now for both.
	got := csrParts["approval"].Write(stored, parse(t, `{"status":{"conditions":[{"type":"Denied","status":"True"}]}}`))
	c := conditionsOf(got["status"].(map[string]any))[0].(map[string]any)
	if c["lastUpdateTime"] == nil || c["lastUpdateTime"] != c["lastTransitionTime"] || c["lastUpdateTime"] == t0 {
		t.Errorf("a new condition's timestamps: %v", c)
	}
}

// A new CSR records the requesting user, whatever it claimed.
func TestCSRRecordsRequester(t *testing.T) {
	obj := parse(t, `{"spec":{"username":"mallory","uid":"9","groups":["system:masters"],"extra":{"k":["v"]},"signerName":"s"}}`)
	ctx := authn.WithUser(t.Context(), &authn.User{Name: "alice", Groups: []string{"team"}, Extra: map[string][]string{"scopes": {"a", "b"}}})
	recordRequester(ctx, obj)
	want := parse(t, `{"spec":{"username":"alice","groups":["team"],"extra":{"scopes":["a","b"]},"signerName":"s"}}`)
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	recordRequester(t.Context(), obj)
	if diff := cmp.Diff(parse(t, `{"spec":{"signerName":"s"}}`), obj); diff != "" {
		t.Errorf("no user (-want +got)\n%s", diff)
	}
}
