package servicealloc

import (
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultClusterIPRange is kube-apiserver's --service-cluster-ip-range when
// unset (kubeoptions.DefaultServiceIPCIDR).
var DefaultClusterIPRange = netip.MustParsePrefix("10.0.0.0/24")

// DefaultNodePortRange is kube-apiserver's --service-node-port-range
// default (kubeoptions.DefaultServiceNodePortRange).
var DefaultNodePortRange = PortRange{Base: 30000, Size: 2768}

// ParseClusterIPRanges parses --service-cluster-ip-range: one CIDR, or two
// of different families (dual stack), as kube-apiserver accepts it; IPv6
// prefixes are at least /64, as kube's IP allocator requires.
func ParseClusterIPRanges(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("service-cluster-ip-range %q: at most two ranges, one per IP family", s)
	}
	var ranges []netip.Prefix
	for _, p := range parts {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("service-cluster-ip-range: %w", err)
		}
		prefix = prefix.Masked()
		if prefix.Addr().Is6() && prefix.Bits() < 64 {
			return nil, fmt.Errorf("service-cluster-ip-range %s: shortest allowed prefix length for service CIDR is 64", prefix)
		}
		if hosts(prefix).Sign() == 0 {
			return nil, fmt.Errorf("service-cluster-ip-range %s: no address to allocate", prefix)
		}
		ranges = append(ranges, prefix)
	}
	if len(ranges) == 2 && ranges[0].Addr().Is4() == ranges[1].Addr().Is4() {
		return nil, fmt.Errorf("service-cluster-ip-range %q: two ranges must be of different IP families", s)
	}
	return ranges, nil
}

// PortRange is a range of node ports: Base to Base+Size-1.
type PortRange struct{ Base, Size int }

// ParsePortRange parses --service-node-port-range as kube's
// utilnet.ParsePortRange: "30000-32767", or "30000+2767" (base and the
// offset of the last port).
func ParsePortRange(s string) (PortRange, error) {
	sep, plus := "-", strings.Contains(s, "+")
	if plus {
		sep = "+"
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), sep)
	low, err1 := strconv.Atoi(a)
	high, err2 := strconv.Atoi(b)
	if plus {
		high += low
	}
	if !ok || err1 != nil || err2 != nil || low < 0 || high > 65535 || high < low {
		return PortRange{}, fmt.Errorf("invalid port range %q: want e.g. 30000-32767", s)
	}
	return PortRange{Base: low, Size: high - low + 1}, nil
}

// String is the range as kube writes it in its messages ("30000-32767").
func (r PortRange) String() string {
	return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1)
}

// Contains reports whether port is in the range.
func (r PortRange) Contains(port int) bool { return port >= r.Base && port < r.Base+r.Size }

// rangeOffset is kube's calculateRangeOffset, min(max(lo, size/step), hi):
// the first rangeOffset addresses or ports of a range are given dynamically
// only when the rest is full, so that static requests (the `kubernetes`
// Service's first address, for one) rarely meet a dynamic one (KEP-3070,
// KEP-3668). size is the range's size as kube counts it: every address of
// a CIDR, every port.
func rangeOffset(size *big.Int, lo, hi, step int64) int64 {
	if size.Cmp(big.NewInt(lo)) <= 0 {
		return 0
	}
	off := new(big.Int).Quo(size, big.NewInt(step))
	switch {
	case off.Cmp(big.NewInt(lo)) < 0:
		return lo
	case off.Cmp(big.NewInt(hi)) > 0:
		return hi
	}
	return off.Int64()
}

// ipRange is the addresses of a cluster IP range kube's allocator gives:
// the network address never, nor an IPv4 broadcast address.
type ipRange struct {
	prefix      netip.Prefix
	first, last netip.Addr
	offset      int64 // addresses from first kept for static requests first
	size        *big.Int
}

func newIPRange(p netip.Prefix) ipRange {
	r := ipRange{prefix: p, first: p.Addr().Next(), size: hosts(p)}
	r.last = addOffset(p.Addr(), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits())), big.NewInt(1)))
	if p.Addr().Is4() {
		r.last = r.last.Prev()
	}
	r.offset = rangeOffset(new(big.Int).Lsh(big.NewInt(1), uint(min(p.Addr().BitLen()-p.Bits(), 64))), 16, 256, 16)
	return r
}

// family is the range's IP family as kube names it.
func (r ipRange) family() string {
	if r.prefix.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// contains reports whether ip is an address the range gives.
func (r ipRange) contains(ip netip.Addr) bool {
	return r.first.Compare(ip) <= 0 && ip.Compare(r.last) <= 0
}

// hosts is the number of addresses kube's allocator gives in p
// (hostsPerNetwork): all but the network address, and an IPv4 broadcast.
func hosts(p netip.Prefix) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
	n.Sub(n, big.NewInt(1))
	if p.Addr().Is4() && n.Sign() > 0 {
		n.Sub(n, big.NewInt(1))
	}
	return n
}

// addOffset is a + off (no overflow: callers stay within a prefix).
func addOffset(a netip.Addr, off *big.Int) netip.Addr {
	b := a.AsSlice()
	n := new(big.Int).Add(new(big.Int).SetBytes(b), off)
	out := n.FillBytes(make([]byte, len(b)))
	addr, _ := netip.AddrFromSlice(out)
	return addr
}
