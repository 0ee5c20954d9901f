package api

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckObjectDepth(t *testing.T) {
	for _, tt := range []struct {
		name  string
		depth int // of the whole object
		inner string
		want  error
	}{
		{"objects at the limit", MaxObjectDepth, `{"a":`, nil},
		{"objects past the limit", MaxObjectDepth + 1, `{"a":`, ErrTooDeep},
		{"arrays at the limit", MaxObjectDepth, `[`, nil},
		{"arrays past the limit", MaxObjectDepth + 1, `[`, ErrTooDeep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			closer := "}"
			if tt.inner == "[" {
				closer = "]"
			}
			n := tt.depth - 1
			obj, err := ParseObject([]byte(`{"x":` + strings.Repeat(tt.inner, n) + "1" + strings.Repeat(closer, n) + "}"))
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckObjectDepth(obj); !errors.Is(err, tt.want) {
				t.Errorf("CheckObjectDepth = %v, want %v", err, tt.want)
			}
		})
	}
}
