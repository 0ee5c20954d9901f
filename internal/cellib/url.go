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
)

// kube's URL type (k8s.io/apiserver/pkg/cel/url.go).
var (
	urlType      = cel.ObjectType("kubernetes.URL")
	urlTypeValue = types.NewTypeValue("kubernetes.URL")
)

// urlValue is a parsed URL; two are equal when they print the same.
type urlValue struct{ *url.URL }

func (u urlValue) ConvertToNative(t reflect.Type) (any, error) {
	switch {
	case reflect.TypeOf(u.URL).AssignableTo(t):
		return u.URL, nil
	case reflect.TypeOf("").AssignableTo(t):
		return u.URL.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'URL' to '%v'", t)
}

func (u urlValue) ConvertToType(t ref.Type) ref.Val { return convertToType(u, t) }

func (u urlValue) Equal(other ref.Val) ref.Val {
	o, ok := other.(urlValue)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(u.URL.String() == o.URL.String())
}

func (u urlValue) Type() ref.Type { return urlTypeValue }
func (u urlValue) Value() any     { return u.URL }

// urls is kube's URL library (k8s.io/apiserver/pkg/cel/library/urls.go):
// url() accepts what net/url's ParseRequestURI does, an absolute URI or an
// absolute path.
var urls = library{
	options: []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, urlType, cel.UnaryBinding(toURL))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(s ref.Val) ref.Val {
			str, ok := s.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(s)
			}
			_, err := url.ParseRequestURI(str)
			return types.Bool(err == nil)
		}))),
		urlAccessor("getScheme", "url_get_scheme", func(u *url.URL) string { return u.Scheme }),
		urlAccessor("getHost", "url_get_host", func(u *url.URL) string { return u.Host }),
		urlAccessor("getHostname", "url_get_hostname", (*url.URL).Hostname),
		urlAccessor("getPort", "url_get_port", (*url.URL).Port),
		urlAccessor("getEscapedPath", "url_get_escaped_path", (*url.URL).EscapedPath),
		cel.Function("getQuery", cel.MemberOverload("url_get_query", []*cel.Type{urlType}, cel.MapType(cel.StringType, cel.ListType(cel.StringType)),
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				u, ok := v.Value().(*url.URL)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				q := map[ref.Val]ref.Val{}
				for k, vs := range u.Query() {
					q[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, vs)
				}
				return types.NewRefValMap(types.DefaultTypeAdapter, q)
			}))),
	},
	estimate: func(sizes checker.CostEstimator, function, _ string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		switch function {
		case "url", "jsonpatch.escapeKey":
			if len(args) == 1 {
				sz := sizeOf(sizes, args[0])
				return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
			}
		case "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
			return nominal
		case "_==_":
			if len(args) == 2 && sameType(args, urlType) {
				// kube bounds both sides by the right one's size.
				size := checker.SizeEstimate{Min: 1, Max: 1}
				if rs := args[1].ComputedSize(); rs != nil {
					size = *rs
				}
				return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: size.Max}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
			}
		}
		return nil
	},
	cost: func(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
		switch function {
		case "url", "jsonpatch.escapeKey":
			if len(args) >= 1 {
				return costOf(traversal(actualSize(args[0])))
			}
		case "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
			return costOf(1)
		case "_==_":
			if len(args) == 2 {
				if _, ok := args[0].(urlValue); ok {
					return costOf(1)
				}
			}
		}
		return nil
	},
}

func urlAccessor(name, overload string, get func(*url.URL) string) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{urlType}, cel.StringType, cel.UnaryBinding(func(v ref.Val) ref.Val {
		u, ok := v.Value().(*url.URL)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return types.String(get(u))
	})))
}

func toURL(s ref.Val) ref.Val {
	str, ok := s.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(s)
	}
	if _, err := url.ParseRequestURI(str); err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	u, err := url.Parse(str)
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return urlValue{u}
}

// sameType reports whether both operands of a comparison have type t.
func sameType(args []checker.AstNode, t *cel.Type) bool {
	return args[0].Type().Equal(args[1].Type()) == types.True && args[0].Type().TypeName() == t.TypeName()
}
