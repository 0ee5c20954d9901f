package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// maxFieldManagerLen is kube's limit on a field manager's name.
const maxFieldManagerLen = 128

// manager is the request's writer as managedFields name it: ?fieldManager,
// or else the User-Agent's first segment ("kubectl", "curl"), as kube.
func (q *request) manager() (patch.Manager, error) {
	name, err := fieldManager(q.r)
	if err != nil {
		return patch.Manager{}, err
	}
	return patch.Manager{
		Name:        name,
		APIVersion:  q.res.APIVersion(),
		Subresource: q.info.Subresource,
		Reset:       q.res.ResetFields(q.info.Subresource),
		Only:        q.res.Parts[q.info.Subresource].Only,
		Schema:      patch.SchemaFor(q.res.Group, q.res.Version, q.res.Kind),
		Now:         time.Now(),
	}, nil
}

// fieldManager reads and checks ?fieldManager (422 if too long or not
// printable), falling back to the User-Agent.
func fieldManager(r *http.Request) (string, error) {
	name := r.URL.Query().Get("fieldManager")
	if name == "" {
		return printable(strings.Split(r.UserAgent(), "/")[0]), nil
	}
	field := func(typ api.CauseType, msg string) error {
		return apierror.Invalid("meta.k8s.io", "Options", "", []api.StatusCause{apierror.Field(typ, "fieldManager", msg)})
	}
	if len(name) > maxFieldManagerLen {
		return "", field(api.CauseTypeFieldValueTooLong, fmt.Sprintf("Too long: may not be more than %d bytes", maxFieldManagerLen))
	}
	for i, c := range name {
		if !unicode.IsPrint(c) {
			return "", field(api.CauseTypeFieldValueInvalid, fmt.Sprintf("Invalid value: %q: invalid character %#U (at position %d)", name, c, i))
		}
	}
	return name, nil
}

// printable is s without non-printable characters, cut to kube's length.
func printable(s string) string {
	s = strings.Map(func(c rune) rune {
		if unicode.IsPrint(c) {
			return c
		}
		return -1
	}, s)
	if len(s) > maxFieldManagerLen {
		s = s[:maxFieldManagerLen]
	}
	return s
}

// recordCreate prunes obj and records the create in its managedFields.
func (q *request) recordCreate(obj api.Object) error {
	m, err := q.manager()
	if err != nil {
		return err
	}
	if err := registry.DecodeFields(q.r.Context(), q.res, obj); err != nil {
		return err
	}
	m.Update(nil, obj)
	return nil
}

// recorded wraps a non-apply update so that it prunes the result and
// records the request's manager in managedFields. fn must not change the
// object it is given, which is the state the update is recorded against.
func (q *request) recorded(fn registry.UpdateFunc) registry.UpdateFunc {
	m, err := q.manager()
	return func(cur api.Object) (api.Object, error) {
		if err != nil {
			return nil, err
		}
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		next = next.DeepCopy() // fn may return the same object on every retry
		if err := registry.DecodeFields(q.r.Context(), q.res, next); err != nil {
			return nil, err
		}
		m.Update(cur, next)
		return next, nil
	}
}
