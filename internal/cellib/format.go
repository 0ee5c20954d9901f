package cellib

import (
	"fmt"
	"net/url"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/listwatch/listwatch/internal/kubefmt"
)

// Kube's limits of formats (k8s.io/apiserver/pkg/cel/limits.go).
const (
	maxFormatSize          = 64  // a format's name, bounding equality's cost
	maxNameFormatRegexSize = 128 // the longest pattern the static cost assumes
)

var formatType = cel.ObjectType("kubernetes.NamedFormat")

// formatValue is one of kube's named formats: its check, returning what is
// wrong, and the size of the pattern it would take, which its runtime cost
// assumes. Two are equal when their names are.
type formatValue struct {
	name         string
	check        func(string) []string
	maxRegexSize uint64
}

func (f formatValue) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from 'Format' to '%v'", t)
}

func (f formatValue) ConvertToType(t ref.Type) ref.Val { return convertToType(f, t) }

func (f formatValue) Equal(other ref.Val) ref.Val {
	o, ok := other.(formatValue)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(f.name == o.name)
}

func (f formatValue) Type() ref.Type { return formatType }
func (f formatValue) Value() any     { return f }

// namedFormats are kube's (library.ConstantFormats), by the name that
// format.named takes and format.<name>() spells.
var namedFormats = map[string]formatValue{
	"dns1123Label":           {"DNS1123Label", kubefmt.Util.DNS1123Label, 30},
	"dns1123Subdomain":       {"DNS1123Subdomain", kubefmt.Util.DNS1123Subdomain, 60},
	"dns1035Label":           {"DNS1035Label", kubefmt.Util.DNS1035Label, 30},
	"qualifiedName":          {"QualifiedName", kubefmt.LabelKey, 60},
	"dns1123LabelPrefix":     {"DNS1123LabelPrefix", prefix(kubefmt.Util.DNS1123Label), 30},
	"dns1123SubdomainPrefix": {"DNS1123SubdomainPrefix", prefix(kubefmt.Util.DNS1123Subdomain), 60},
	"dns1035LabelPrefix":     {"DNS1035LabelPrefix", prefix(kubefmt.Util.DNS1035Label), 30},
	"labelValue":             {"LabelValue", kubefmt.LabelValue, 40},
	"uri": {"URI", func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}, 1103},
	"uuid":     {"uuid", is(kubefmt.IsUUID, "does not match the UUID format"), uint64(len(kubefmt.UUIDPattern))},
	"byte":     {"byte", is(kubefmt.IsBase64, "invalid base64"), 84},
	"date":     {"date", is(kubefmt.IsDate, "invalid date"), uint64(len(kubefmt.DateTimePattern))},
	"datetime": {"datetime", is(kubefmt.IsDateTime, "invalid datetime"), uint64(len(kubefmt.DateTimePattern))},
}

// prefix checks a generateName prefix: a trailing dash is allowed.
func prefix(check func(string) []string) func(string) []string {
	return func(s string) []string { return check(kubefmt.MaskTrailingDash(s)) }
}

func is(ok func(string) bool, msg string) func(string) []string {
	return func(s string) []string {
		if ok(s) {
			return nil
		}
		return []string{msg}
	}
}

// formats is kube's format library (k8s.io/apiserver/pkg/cel/library/
// format.go): format.named(name) is an optional format, format.<name>()
// each format, and f.validate(s) none when s is valid, else the list of
// what is wrong.
var formats = library{
	options: formatOptions(),
	estimate: func(sizes checker.CostEstimator, function, _ string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		switch function {
		case "validate":
			if len(args) >= 1 {
				c := sizeOf(sizes, args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor).MultiplyByCostFactor(maxNameFormatRegexSize * common.RegexStringLengthCostFactor)
				return &checker.CallEstimate{CostEstimate: c}
			}
		case "format.named":
			return nominal
		case "_==_":
			if len(args) == 2 && sameType(args, formatType) {
				return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: maxFormatSize}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
			}
		}
		return nil
	},
	cost: func(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
		switch function {
		case "validate":
			if len(args) < 2 {
				return nil
			}
			if f, ok := args[0].Value().(formatValue); ok {
				return costOf(regexCost(actualSize(args[1]), f.maxRegexSize))
			}
		case "format.named":
			return costOf(1)
		case "_==_":
			if len(args) != 2 {
				return nil
			}
			if _, ok := args[0].(formatValue); ok {
				return costOf(1)
			}
		}
		return nil
	},
}

func formatOptions() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{formatType, cel.StringType}, cel.OptionalType(cel.ListType(cel.StringType)),
			cel.BinaryBinding(func(fv, s ref.Val) ref.Val {
				f, ok := fv.Value().(formatValue)
				if !ok {
					return types.MaybeNoSuchOverloadErr(fv)
				}
				str, ok := s.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(s)
				}
				if errs := f.check(str); len(errs) > 0 {
					return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, errs))
				}
				return types.OptionalNone
			}))),
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType}, cel.OptionalType(formatType),
			cel.UnaryBinding(func(name ref.Val) ref.Val {
				n, ok := name.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(name)
				}
				if f, ok := namedFormats[n]; ok {
					return types.OptionalOf(f)
				}
				return types.OptionalNone
			}))),
	}
	for name, f := range namedFormats {
		opts = append(opts, cel.Function("format."+name, cel.Overload("format."+name, nil, formatType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return f }))))
	}
	return opts
}
