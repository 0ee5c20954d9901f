package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type listItem struct {
	Name string `json:"name"`
}

// decodeList reads what json.Unmarshal of a list reads, item by item.
func TestDecodeList(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		wantErr  bool
	}{
		{name: "items", in: `{"kind":"XList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c"},"items":[{"name":"a"},{"name":"b"}]}` + "\n"},
		{name: "null items, members in any order", in: `{"items":null,"extra":{"x":[1,2]},"metadata":{"resourceVersion":"7"}}`},
		{name: "empty", in: `{"metadata":{},"items":[]}`},
		{name: "items not an array", in: `{"items":{}}`, wantErr: true},
		{name: "truncated", in: `{"items":[{"name":"a"}`, wantErr: true},
		{name: "not an object", in: `[]`, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got list[listItem]
			err := decodeList(json.NewDecoder(strings.NewReader(tc.in)), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			var want list[listItem]
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-json.Unmarshal +decodeList):\n%s", diff)
			}
		})
	}
}
