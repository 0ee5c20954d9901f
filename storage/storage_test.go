package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"/", true},
		{"/registry/core/configmaps/default/a", true},
		{"/" + strings.Repeat("k", MaxKeySize-1), true},
		{"", false},
		{"registry/x", false},
		{"/a\x00b", false},
		{"/\xff", false},
		{"/" + strings.Repeat("k", MaxKeySize), false},
	}
	for _, tt := range tests {
		err := ValidateKey(tt.key)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateKey(%.20q) = %v, want ok=%v", tt.key, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateKey(%.20q) = %v, want it to wrap ErrInvalidArgument", tt.key, err)
		}
	}
}

func TestContinueRoundTrip(t *testing.T) {
	token := EncodeContinue("/registry/cm/", 42, "/registry/cm/ns/name")
	rev, start, err := DecodeContinue("/registry/cm/", token)
	if err != nil || rev != 42 || start != "/registry/cm/ns/name" {
		t.Fatalf("DecodeContinue = %d, %q, %v; want 42, /registry/cm/ns/name", rev, start, err)
	}
	// A token is relative to its prefix, so it cannot reach outside another list's prefix.
	_, start, err = DecodeContinue("/registry/secrets/", token)
	if err != nil || !strings.HasPrefix(start, "/registry/secrets/") {
		t.Fatalf("token reused under another prefix: %q, %v", start, err)
	}
}

func TestConflictErrorIs(t *testing.T) {
	var err error = &ConflictError{Key: "/k", Expected: 1, Current: KV{Key: "/k", ModRevision: 2}}
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		t.Fatalf("ConflictError matches wrongly: %v", err)
	}
}

func FuzzDecodeContinue(f *testing.F) {
	f.Add("/p/", EncodeContinue("/p/", 7, "/p/x"))
	f.Add("/p/", "")
	f.Add("/p/", "eyJ2IjoibGlzdHdhdGNoL3YxIiwicnYiOi0xLCJzdGFydCI6IiJ9")
	f.Add("/", "%%%")
	f.Fuzz(func(t *testing.T, prefix, token string) {
		rev, start, err := DecodeContinue(prefix, token)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		if rev <= 0 || !strings.HasPrefix(start, prefix) || ValidateKey(start) != nil {
			t.Fatalf("accepted token gives revision %d, start %q under prefix %q", rev, start, prefix)
		}
	})
}
