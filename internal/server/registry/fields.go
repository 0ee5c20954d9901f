package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// The fieldValidation modes: what a write does with fields the resource's
// schema does not know (they are dropped in every mode).
const (
	FieldValidationIgnore = "Ignore"
	FieldValidationWarn   = "Warn" // the default, as in kube since 1.27
	FieldValidationStrict = "Strict"
)

// FieldValidation is a write request's fieldValidation parameter.
type FieldValidation struct {
	Mode string // one of the modes; "" means Warn
	// Warn receives one warning per unknown field in Warn mode.
	Warn func(msg string)
}

type fieldValidationKey struct{}

// WithFieldValidation returns ctx carrying a request's fieldValidation to
// the writes made with it.
func WithFieldValidation(ctx context.Context, fv FieldValidation) context.Context {
	return context.WithValue(ctx, fieldValidationKey{}, fv)
}

// DecodeFields prunes and defaults obj as its resource's schema says and
// treats the unknown fields as the request's fieldValidation asks: a 400 in
// Strict mode, a warning in Warn mode. The handlers call it before they
// record managedFields, so that those never name a field that is not kept;
// the registry calls it again on write, which then finds nothing to drop.
func DecodeFields(ctx context.Context, res *resource.Resource, obj api.Object) error {
	if res.PruneAndDefault == nil {
		return nil
	}
	unknown := res.PruneAndDefault(obj)
	if len(unknown) == 0 {
		return nil
	}
	fv, _ := ctx.Value(fieldValidationKey{}).(FieldValidation)
	switch fv.Mode {
	case FieldValidationStrict:
		return apierror.BadRequest("strict decoding error: " + unknownFields(unknown))
	case FieldValidationIgnore:
	default:
		if fv.Warn != nil {
			for _, f := range unknown {
				fv.Warn(fmt.Sprintf("unknown field %s", apierror.Quote(f)))
			}
		}
	}
	return nil
}

// unknownFields lists unknown fields as kube's strict decoding error does,
// the first apierror.MaxCauses of them.
func unknownFields(unknown []string) string {
	n := min(len(unknown), apierror.MaxCauses)
	msgs := make([]string, n, n+1)
	for i, f := range unknown[:n] {
		msgs[i] = fmt.Sprintf("unknown field %s", apierror.Quote(f))
	}
	if more := len(unknown) - n; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(msgs, ", ")
}
