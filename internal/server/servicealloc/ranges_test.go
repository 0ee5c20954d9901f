package servicealloc

import (
	"net/netip"
	"testing"
)

// TestParseRanges checks the flags' forms kube-apiserver accepts and
// refuses: one CIDR or two of different families, IPv6 no wider than /64;
// node ports as "low-high" or "base+offset", within 0-65535.
func TestParseRanges(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []netip.Prefix
	}{
		{"10.0.0.0/24", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}},
		{"10.0.0.7/24", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}},
		{"10.0.0.0/16,fd00::/108", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("fd00::/108")}},
		{"fd00::/64", []netip.Prefix{netip.MustParsePrefix("fd00::/64")}},
		{"fd00::/63", nil},
		{"10.0.0.0/24,10.1.0.0/24", nil},
		{"10.0.0.0/24,fd00::/108,10.1.0.0/24", nil},
		{"10.0.0.0/32", nil},
		{"10.0.0.0", nil},
	} {
		got, err := ParseClusterIPRanges(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) || got[0] != tc.want[0] || len(got) == 2 && got[1] != tc.want[1] {
			t.Errorf("%s: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]PortRange{
		"30000-32767": {30000, 2768}, "30000+2767": {30000, 2768}, "1-65535": {1, 65535}, "80-80": {80, 1},
		"1-65536": {}, "20-10": {}, "30000": {}, "a-b": {},
	} {
		got, err := ParsePortRange(in)
		if want == (PortRange{}) != (err != nil) || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	if s := DefaultNodePortRange.String(); s != "30000-32767" {
		t.Errorf("default node ports %s", s)
	}
}
