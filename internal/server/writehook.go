package server

import (
	"context"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// WriteHook checks the writes a request's authorization allowed, and
// learns of every write through this server before its response goes out:
// RBAC's escalation prevention, and its view of roles and bindings (read
// your writes).
type WriteHook interface {
	// CheckWrite refuses (with a Status error) obj, about to be written by
	// the request a (create, update, patch or apply); old is the stored
	// object, nil on create.
	CheckWrite(ctx context.Context, a authz.Attributes, obj, old api.Object) error
	// Written is told of a write or a deletion of the object namespace/name
	// of res; it bounds the time it takes itself (the request may be gone).
	Written(res *resource.Resource, namespace, name string)
}

// checkWrite refuses obj unless the user may create it when an update or
// an apply is about to (authorizeCreate), and asks the WriteHook, if any.
func (q *request) checkWrite(obj, old api.Object) error {
	if q.s.cfg.Authorizer == nil && q.s.cfg.WriteHook == nil {
		return nil
	}
	a := attributesOf(q.r, noteOf(q.r))
	if old == nil && a.Verb != "create" {
		if err := q.authorizeCreate(a); err != nil {
			return err
		}
	}
	if q.s.cfg.WriteHook == nil {
		return nil
	}
	return q.s.cfg.WriteHook.CheckWrite(q.r.Context(), a, obj, old)
}

// written tells the WriteHook, if any, of a write of obj.
func (s *Server) written(res *resource.Resource, obj api.Object) {
	if s.cfg.WriteHook != nil {
		s.cfg.WriteHook.Written(res, obj.Namespace(), obj.Name())
	}
}

// authorizeCreate asks whether the user may create the object an update or
// a patch (apply) is about to create, as kube's update and patch handlers
// do (withAuthorization with create attributes): update or patch alone
// does not let a user create.
func (q *request) authorizeCreate(a authz.Attributes) error {
	if q.s.cfg.Authorizer == nil {
		return nil
	}
	a.Verb = "create"
	d, reason, err := q.s.cfg.Authorizer.Authorize(q.r.Context(), a)
	switch {
	case d == authz.Allow:
		return nil
	case err != nil:
		return apierror.Internal(err)
	}
	return forbidden(a, reason)
}
