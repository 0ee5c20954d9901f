// Package cellib holds the CEL function libraries kube-apiserver adds to
// cel-go's (k8s.io/apiserver/pkg/cel/library), written here from kube's
// documentation, source and tests: the same functions, overloads, errors
// and costs, so that a CRD rule or an admission policy compiles, evaluates
// and is costed as kube does it.
package cellib

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types/ref"
)

// A library is one of kube's: its declarations and the costs of its calls.
type library struct {
	options []cel.EnvOption
	// estimate is the static cost of a call of one of the library's
	// functions, nil for any other call; sizes bounds the arguments.
	estimate func(sizes checker.CostEstimator, function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate
	// cost is the runtime cost of such a call, nil for any other.
	cost func(function, overload string, args []ref.Val, result ref.Val) *uint64
}

// libraries are every library kube's base environment declares, and the
// costs kube gives cel-go's string extensions.
var libraries = []library{urls, regexes, lists, formats, semvers, quantityLib, ipLib, cidrLib, authzLib, stringCosts}

// EnvOptions declares every library's functions and types.
func EnvOptions() []cel.EnvOption {
	var opts []cel.EnvOption
	for _, l := range libraries {
		opts = append(opts, l.options...)
	}
	return opts
}

// EstimateCallCost is kube's static cost of a call of a library function,
// nil for a call cel-go costs itself. sizes is the caller's estimator, which
// bounds the sizes of the arguments.
func EstimateCallCost(sizes checker.CostEstimator, function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	for _, l := range libraries {
		if l.estimate == nil {
			continue
		}
		if e := l.estimate(sizes, function, overload, target, args); e != nil {
			return e
		}
	}
	return nil
}

// Costs is kube's runtime cost of library calls (cel.CostTracking).
type Costs struct{}

// CallCost is the runtime cost of a library call, nil for a call cel-go
// costs itself.
func (Costs) CallCost(function, overload string, args []ref.Val, result ref.Val) *uint64 {
	for _, l := range libraries {
		if l.cost == nil {
			continue
		}
		if c := l.cost(function, overload, args, result); c != nil {
			return c
		}
	}
	return nil
}
