package cellib

import (
	"fmt"
	"net/netip"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// ipLib is kube's kubernetes.net.ip library: IPv4 and IPv6 addresses as
// net/netip parses them, without zones or IPv4-mapped IPv6 forms.
var ipLib = library{
	options: []cel.EnvOption{
		cel.Types(IPType),
		cel.Function("ip", cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, IPType, stringBinding(stringToIP))),
		cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, stringBinding(func(s string) ref.Val {
			_, err := parseIP(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType, stringBinding(func(s string) ref.Val {
			a, err := parseIP(s)
			if err != nil {
				return types.NewErr("%v", err)
			}
			return types.Bool(a.String() == s)
		}))),
		cel.Function("family", cel.MemberOverload("ip_family", []*cel.Type{IPType}, cel.IntType, ipBinding(func(a netip.Addr) ref.Val {
			if a.Is4() {
				return types.Int(4)
			}
			return types.Int(6)
		}))),
		cel.Function("isUnspecified", cel.MemberOverload("ip_is_unspecified", []*cel.Type{IPType}, cel.BoolType, ipPredicate(netip.Addr.IsUnspecified))),
		cel.Function("isLoopback", cel.MemberOverload("ip_is_loopback", []*cel.Type{IPType}, cel.BoolType, ipPredicate(netip.Addr.IsLoopback))),
		cel.Function("isLinkLocalMulticast", cel.MemberOverload("ip_is_link_local_multicast", []*cel.Type{IPType}, cel.BoolType, ipPredicate(netip.Addr.IsLinkLocalMulticast))),
		cel.Function("isLinkLocalUnicast", cel.MemberOverload("ip_is_link_local_unicast", []*cel.Type{IPType}, cel.BoolType, ipPredicate(netip.Addr.IsLinkLocalUnicast))),
		cel.Function("isGlobalUnicast", cel.MemberOverload("ip_is_global_unicast", []*cel.Type{IPType}, cel.BoolType, ipPredicate(netip.Addr.IsGlobalUnicast))),
		cel.Function("string", cel.Overload("ip_to_string", []*cel.Type{IPType}, cel.StringType, ipBinding(func(a netip.Addr) ref.Val { return types.String(a.String()) }))),
	},
	estimate: func(sizes checker.CostEstimator, function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		switch function {
		case "ip":
			if overload == "cidr_ip" {
				return nominal
			}
			return parseEstimate(sizes, args, 1)
		case "isIP":
			return parseEstimate(sizes, args, 1)
		case "ip.isCanonical":
			// Parsed, then printed and compared.
			return parseEstimate(sizes, args, 2)
		case "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast":
			return nominal
		case operators.Equals:
			return equalsEstimate(args, IPType)
		}
		return nil
	},
	cost: func(function, overload string, args []ref.Val, result ref.Val) *uint64 {
		switch function {
		case "ip":
			if overload == "cidr_ip" {
				return costOf(1)
			}
			return parseCost(args, 1)
		case "isIP":
			return parseCost(args, 1)
		case "ip.isCanonical":
			return parseCost(args, 2)
		case "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast":
			return costOf(1)
		case operators.Equals:
			return equalsCost[ipVal](args)
		}
		return nil
	},
}

// IPType is kube's CEL type of an IP address.
var IPType = cel.OpaqueType("net.IP")

// netVal is an IP address (ipVal) or prefix (cidrVal) in CEL.
type netVal[T interface {
	comparable
	String() string
}] struct{ v T }

type (
	ipVal   = netVal[netip.Addr]
	cidrVal = netVal[netip.Prefix]
)

// typ is kube's type of the value and its name in conversion errors.
func (v netVal[T]) typ() (*cel.Type, string) {
	if _, ok := any(v.v).(netip.Addr); ok {
		return IPType, "IP"
	}
	return CIDRType, "CIDR"
}

func (v netVal[T]) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(v.v).AssignableTo(t) {
		return v.v, nil
	}
	if reflect.TypeOf("").AssignableTo(t) {
		return v.v.String(), nil
	}
	_, name := v.typ()
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", name, t)
}

func (v netVal[T]) ConvertToType(t ref.Type) ref.Val {
	typ, _ := v.typ()
	switch t {
	case typ:
		return v
	case types.TypeType:
		return typ
	case types.StringType:
		return types.String(v.v.String())
	}
	return types.NewErr("type conversion error from '%s' to '%s'", typ, t)
}

func (v netVal[T]) Equal(other ref.Val) ref.Val {
	o, ok := other.(netVal[T])
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.v == o.v)
}

func (v netVal[T]) Type() ref.Type {
	typ, _ := v.typ()
	return typ
}

func (v netVal[T]) Value() any { return v.v }

// Size is what kube's costs count: an address's bytes, or the bytes a
// prefix's length covers.
func (v netVal[T]) Size() ref.Val {
	switch x := any(v.v).(type) {
	case netip.Addr:
		return types.Int(x.BitLen() / 8)
	case netip.Prefix:
		return types.Int((x.Bits() + 7) / 8)
	}
	return types.Int(0)
}

func ipBinding(f func(netip.Addr) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(a ref.Val) ref.Val {
		v, ok := a.(ipVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(v.v)
	})
}

func ipPredicate(f func(netip.Addr) bool) cel.OverloadOpt {
	return ipBinding(func(a netip.Addr) ref.Val { return types.Bool(f(a)) })
}

func stringToIP(s string) ref.Val {
	a, err := parseIP(s)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return ipVal{a}
}

// parseIP is kube's parse of an address: netip's, refusing zones and
// IPv4-mapped IPv6 addresses.
func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return a, fmt.Errorf("IP Address %q parse error during conversion from string: %v", s, err)
	case a.Zone() != "":
		return a, fmt.Errorf("IP address %q with zone value is not allowed", s)
	case a.Is4In6():
		return a, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return a, nil
}
