package registry

import (
	"context"

	"github.com/listwatch/listwatch/client/api"
)

// Admit checks a write after the registry's own defaulting and validation,
// just before the store write, as kube's validating admission: obj is what
// is to be stored and old the stored object (nil on create); a delete has
// no obj.
type Admit func(ctx context.Context, obj, old api.Object) error

type admitKey struct{}

// WithAdmission returns ctx making the writes made with it call admit.
func WithAdmission(ctx context.Context, admit Admit) context.Context {
	return context.WithValue(ctx, admitKey{}, admit)
}

// admit calls the Admit of ctx, if any.
func admit(ctx context.Context, obj, old api.Object) error {
	if a, ok := ctx.Value(admitKey{}).(Admit); ok {
		return a(ctx, obj, old)
	}
	return nil
}

// IsDryRun says whether the writes made with ctx are dry runs.
func IsDryRun(ctx context.Context) bool {
	dry, _ := ctx.Value(dryRunKey{}).(bool)
	return dry
}
