package cellib

import (
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// JSONPatch declares kube's jsonpatch.escapeKey (k8s.io/apiserver/pkg/cel/
// library/jsonpatch.go), which only mutating admission policies' environment
// has; its cost is the url library's, as kube counts them together.
func JSONPatch() cel.EnvOption {
	return cel.Function("jsonpatch.escapeKey", cel.Overload("string_jsonpatch_escapeKey_string", []*cel.Type{cel.StringType}, cel.StringType,
		cel.UnaryBinding(func(v ref.Val) ref.Val {
			s, ok := v.Value().(string)
			if !ok {
				return types.MaybeNoSuchOverloadErr(v)
			}
			return types.String(jsonPointerEscaper.Replace(s))
		})))
}

// jsonPointerEscaper escapes a key for a JSON pointer (RFC 6901).
var jsonPointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
