package cellib

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

var semverType = cel.ObjectType("kubernetes.Semver")

// semverValue is a semantic version, parsed by blang/semver as kube's.
type semverValue struct{ semver.Version }

func (v semverValue) ConvertToNative(t reflect.Type) (any, error) {
	switch {
	case reflect.TypeOf(v.Version).AssignableTo(t):
		return v.Version, nil
	case reflect.TypeOf("").AssignableTo(t):
		return v.Version.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'Semver' to '%v'", t)
}

func (v semverValue) ConvertToType(t ref.Type) ref.Val { return convertToType(v, t) }

func (v semverValue) Equal(other ref.Val) ref.Val {
	o, ok := other.(semverValue)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.Version.EQ(o.Version))
}

func (v semverValue) Type() ref.Type { return semverType }
func (v semverValue) Value() any     { return v.Version }

// semvers is kube's semver library at version 1 (k8s.io/apiserver/pkg/cel/
// library/semverlib.go): semver() and isSemver(), with or without
// normalizing ("v1.02" is 1.2.0), and comparisons and accessors.
var semvers = library{
	options: []cel.EnvOption{
		cel.Function("semver",
			cel.Overload("string_to_semver", []*cel.Type{cel.StringType}, semverType, cel.UnaryBinding(func(s ref.Val) ref.Val { return toSemver(s, types.False) })),
			cel.Overload("string_bool_to_semver", []*cel.Type{cel.StringType, cel.BoolType}, semverType, cel.BinaryBinding(toSemver))),
		cel.Function("isSemver",
			cel.Overload("is_semver_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(s ref.Val) ref.Val { return isSemver(s, types.False) })),
			cel.Overload("is_semver_string_bool", []*cel.Type{cel.StringType, cel.BoolType}, cel.BoolType, cel.BinaryBinding(isSemver))),
		semverCompare("isGreaterThan", "semver_is_greater_than", cel.BoolType, func(c int) ref.Val { return types.Bool(c == 1) }),
		semverCompare("isLessThan", "semver_is_less_than", cel.BoolType, func(c int) ref.Val { return types.Bool(c == -1) }),
		semverCompare("compareTo", "semver_compare_to", cel.IntType, func(c int) ref.Val { return types.Int(c) }),
		semverPart("major", "semver_major", func(v semver.Version) uint64 { return v.Major }),
		semverPart("minor", "semver_minor", func(v semver.Version) uint64 { return v.Minor }),
		semverPart("patch", "semver_patch", func(v semver.Version) uint64 { return v.Patch }),
	},
	estimate: func(sizes checker.CostEstimator, function, _ string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		switch function {
		case "semver", "isSemver":
			if len(args) >= 1 {
				return &checker.CallEstimate{CostEstimate: sizeOf(sizes, args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
			}
		case "isGreaterThan", "isLessThan", "compareTo", "major", "minor", "patch":
			return nominal
		case "_==_":
			if len(args) == 2 && sameType(args, semverType) {
				return nominal
			}
		}
		return nil
	},
	cost: func(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
		switch function {
		case "semver", "isSemver":
			if len(args) >= 1 {
				return costOf(traversal(actualSize(args[0])))
			}
		case "isGreaterThan", "isLessThan", "compareTo", "major", "minor", "patch":
			return costOf(1)
		case "_==_":
			if len(args) != 2 {
				return nil
			}
			if _, ok := args[0].(semverValue); ok {
				return costOf(1)
			}
		}
		return nil
	},
}

func semverCompare(name, overload string, result *cel.Type, answer func(int) ref.Val) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{semverType, semverType}, result, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
		v, ok := a.Value().(semver.Version)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		w, ok := b.Value().(semver.Version)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return answer(v.Compare(w))
	})))
}

func semverPart(name, overload string, part func(semver.Version) uint64) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{semverType}, cel.IntType, cel.UnaryBinding(func(a ref.Val) ref.Val {
		v, ok := a.Value().(semver.Version)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return types.Int(part(v))
	})))
}

func toSemver(s, normalize ref.Val) ref.Val {
	v, err := parseSemver(s, normalize)
	if err != nil {
		return err
	}
	return semverValue{v}
}

// isSemver reports whether s parses; the checker has typed the arguments,
// so an error is the parser's.
func isSemver(s, normalize ref.Val) ref.Val {
	_, err := parseSemver(s, normalize)
	return types.Bool(err == nil)
}

// parseSemver parses s, normalized if asked; the error is a CEL value.
func parseSemver(s, normalize ref.Val) (semver.Version, ref.Val) {
	str, ok := s.Value().(string)
	if !ok {
		return semver.Version{}, types.MaybeNoSuchOverloadErr(s)
	}
	norm, ok := normalize.Value().(bool)
	if !ok {
		return semver.Version{}, types.MaybeNoSuchOverloadErr(s)
	}
	parse := semver.Parse
	if norm {
		parse = normalizeAndParse
	}
	v, err := parse(str)
	if err != nil {
		return v, types.WrapErr(err)
	}
	return v, nil
}

// normalizeAndParse is kube's lenient parse: a leading "v" dropped, leading
// zeros of each part dropped, missing minor and patch parts zero.
func normalizeAndParse(s string) (semver.Version, error) {
	parts := strings.SplitN(strings.TrimPrefix(s, "v"), ".", 3)
	for i, p := range parts {
		if len(p) > 1 {
			p = strings.TrimLeft(p, "0")
			if p == "" || !strings.ContainsAny(p[:1], "0123456789") {
				p = "0" + p
			}
			parts[i] = p
		}
	}
	if len(parts) < 3 {
		if strings.ContainsAny(parts[len(parts)-1], "+-") {
			return semver.Version{}, errors.New("short version cannot contain PreRelease/Build meta data")
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
	}
	return semver.Parse(strings.Join(parts, "."))
}
