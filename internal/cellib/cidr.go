package cellib

import (
	"fmt"
	"net/netip"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// cidrLib is kube's kubernetes.net.cidr library: IP prefixes as net/netip
// parses them (the address need not be masked), without IPv4-mapped IPv6.
var cidrLib = library{
	options: []cel.EnvOption{
		cel.Types(CIDRType),
		cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, CIDRType, stringBinding(stringToCIDR))),
		cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, stringBinding(func(s string) ref.Val {
			_, err := parseCIDR(s)
			return types.Bool(err == nil)
		}))),
		cel.Function("containsIP",
			cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType, cel.BinaryBinding(parsingOperand(stringToIP, cidrContainsIP))),
			cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{CIDRType, IPType}, cel.BoolType, cel.BinaryBinding(cidrContainsIP))),
		cel.Function("containsCIDR",
			cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType, cel.BinaryBinding(parsingOperand(stringToCIDR, cidrContainsCIDR))),
			cel.MemberOverload("cidr_contains_cidr", []*cel.Type{CIDRType, CIDRType}, cel.BoolType, cel.BinaryBinding(cidrContainsCIDR))),
		cel.Function("ip", cel.MemberOverload("cidr_ip", []*cel.Type{CIDRType}, IPType, cidrBinding(func(p netip.Prefix) ref.Val { return ipVal{p.Addr()} }))),
		cel.Function("prefixLength", cel.MemberOverload("cidr_prefix_length", []*cel.Type{CIDRType}, cel.IntType, cidrBinding(func(p netip.Prefix) ref.Val { return types.Int(p.Bits()) }))),
		cel.Function("masked", cel.MemberOverload("cidr_masked", []*cel.Type{CIDRType}, CIDRType, cidrBinding(func(p netip.Prefix) ref.Val { return cidrVal{p.Masked()} }))),
		cel.Function("string", cel.Overload("cidr_to_string", []*cel.Type{CIDRType}, cel.StringType, cidrBinding(func(p netip.Prefix) ref.Val { return types.String(p.String()) }))),
	},
	estimate: func(sizes checker.CostEstimator, function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		// kube's estimates of a comparison assume addresses of 4 to 16 bytes.
		addr := checker.SizeEstimate{Min: 4, Max: 16}
		switch function {
		case "cidr", "isCIDR":
			return parseEstimate(sizes, args, 1)
		case "prefixLength", "masked":
			return nominal
		case "containsIP", "containsCIDR":
			if len(args) < 1 {
				return nil
			}
			c := addr.Add(addr).MultiplyByCostFactor(common.StringTraversalCostFactor)
			if function == "containsCIDR" {
				// The prefix is masked and its bits compared too.
				c = c.Add(addr.MultiplyByCostFactor(common.StringTraversalCostFactor)).Add(checker.CostEstimate{Min: 1, Max: 1})
			}
			if overload == "cidr_contains_ip_string" || overload == "cidr_contains_cidr_string" {
				c = c.Add(checker.CostEstimate(sizeOf(sizes, args[0])).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c}
		case operators.Equals:
			return equalsEstimate(args, CIDRType)
		}
		return nil
	},
	cost: func(function, overload string, args []ref.Val, result ref.Val) *uint64 {
		switch function {
		case "cidr", "isCIDR":
			return parseCost(args, 1)
		case "prefixLength", "masked":
			return costOf(1)
		case "containsIP", "containsCIDR":
			if len(args) < 2 {
				return nil
			}
			// The prefix's bytes compared with as many of the other's.
			n := actualSize(args[0])
			c := traversal(2 * n)
			if function == "containsCIDR" {
				c += traversal(n) + 1
			}
			if overload == "cidr_contains_ip_string" || overload == "cidr_contains_cidr_string" {
				c += traversal(actualSize(args[1]))
			}
			return &c
		case operators.Equals:
			return equalsCost[cidrVal](args)
		}
		return nil
	},
}

// CIDRType is kube's CEL type of an IP prefix.
var CIDRType = cel.OpaqueType("net.CIDR")

func cidrBinding(f func(netip.Prefix) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(a ref.Val) ref.Val {
		v, ok := a.(cidrVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(v.v)
	})
}

func stringToCIDR(s string) ref.Val {
	p, err := parseCIDR(s)
	if err != nil {
		return types.NewErr("network address parse error during conversion from string: %v", err)
	}
	return cidrVal{p}
}

// parsingOperand is f of a string operand parsed first.
func parsingOperand(parse func(string) ref.Val, f func(c, o ref.Val) ref.Val) func(c, s ref.Val) ref.Val {
	return func(c, s ref.Val) ref.Val {
		str, ok := s.(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(s)
		}
		return f(c, parse(string(str)))
	}
}

// cidrContainsIP answers "no such overload", not the parse error, when ip
// did not parse, as kube's does.
func cidrContainsIP(c, ip ref.Val) ref.Val {
	p, ok := c.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(ip)
	}
	a, ok := ip.(ipVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(c)
	}
	return types.Bool(p.v.Contains(a.v))
}

// cidrContainsCIDR: other lies within c's network, with as long a prefix.
func cidrContainsCIDR(c, other ref.Val) ref.Val {
	p, ok := c.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(c)
	}
	o, ok := other.(cidrVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(p.v.Overlaps(o.v) && p.v.Bits() <= o.v.Bits())
}

// parseCIDR is kube's parse of a prefix, its error text doubled as kube's.
func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return p, fmt.Errorf("network address parse error during conversion from string: %v", err)
	case p.Addr().Is4In6():
		return p, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return p, nil
}
