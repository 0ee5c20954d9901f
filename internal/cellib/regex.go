package cellib

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// regexes is kube's regex library (k8s.io/apiserver/pkg/cel/library/
// regex.go): find and findAll, a constant pattern compiled once per program
// (cel-go's regex optimization), as kube's.
var regexes = library{
	options: []cel.EnvOption{cel.Lib(regexLib{})},
	estimate: func(sizes checker.CostEstimator, function, _ string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		if (function != "find" && function != "findAll") || target == nil || len(args) < 1 {
			return nil
		}
		sz := sizeOf(sizes, *target)
		// The string is traversed once per 4 bytes of pattern, kube's guess
		// of a regex's expressions; at worst every byte is a match.
		str := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
		re := sizeOf(sizes, args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
		return &checker.CallEstimate{CostEstimate: str.Multiply(re), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
	},
	cost: func(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
		if (function != "find" && function != "findAll") || len(args) < 2 {
			return nil
		}
		return costOf(regexCost(actualSize(args[0]), actualSize(args[1])))
	},
}

type regexLib struct{}

func (regexLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
			cel.BinaryBinding(func(s, re ref.Val) ref.Val {
				return withRegex(re, func(r *regexp.Regexp) ref.Val { return find(r, s) })
			}))),
		cel.Function("findAll",
			cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
				cel.BinaryBinding(func(s, re ref.Val) ref.Val {
					return withRegex(re, func(r *regexp.Regexp) ref.Val { return findAll(r, s, types.Int(-1)) })
				})),
			cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType}, cel.ListType(cel.StringType),
				cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					if len(args) != 3 {
						return types.NoSuchOverloadErr()
					}
					return withRegex(args[1], func(r *regexp.Regexp) ref.Val { return findAll(r, args[0], args[2]) })
				}))),
	}
}

func (regexLib) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.OptimizeRegex(constantRegex("find"), constantRegex("findAll"))}
}

// constantRegex compiles a function's constant pattern when the program is
// made (a bad one fails it) and calls the function with it.
func constantRegex(function string) *interpreter.RegexOptimization {
	return &interpreter.RegexOptimization{
		Function:   function,
		RegexIndex: 1,
		Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
			r, err := regexp.Compile(pattern)
			if err != nil {
				return nil, err
			}
			return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
				switch {
				case function == "find" && len(args) == 2:
					return find(r, args[0])
				case function == "findAll" && len(args) == 2:
					return findAll(r, args[0], types.Int(-1))
				case function == "findAll" && len(args) == 3:
					return findAll(r, args[0], args[2])
				}
				return types.NoSuchOverloadErr()
			}), nil
		},
	}
}

// withRegex compiles a pattern given at run time and calls f with it.
func withRegex(re ref.Val, f func(*regexp.Regexp) ref.Val) ref.Val {
	pattern, ok := re.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(re)
	}
	r, err := regexp.Compile(pattern)
	if err != nil {
		return types.NewErr("Illegal regex: %v", err.Error())
	}
	return f(r)
}

func find(r *regexp.Regexp, s ref.Val) ref.Val {
	str, ok := s.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(s)
	}
	return types.String(r.FindString(str))
}

// findAll returns at most limit matches, every one for a negative limit.
func findAll(r *regexp.Regexp, s, limit ref.Val) ref.Val {
	str, ok := s.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(s)
	}
	n, ok := limit.Value().(int64)
	if !ok {
		return types.MaybeNoSuchOverloadErr(limit)
	}
	return types.NewStringList(types.DefaultTypeAdapter, r.FindAllString(str, int(n)))
}
