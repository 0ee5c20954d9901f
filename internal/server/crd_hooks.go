package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// crdSyncTimeout bounds the catalogue update and the deletion of a
// definition's objects that follow a write to a CustomResourceDefinition.
const crdSyncTimeout = time.Minute

// startCRDs makes CustomResourceDefinitions define resources: it installs
// their validation and status on the built-in resource, loads the stored
// ones into the catalogue and follows changes (Close stops it).
func (s *Server) startCRDs(ctx context.Context) error {
	defs, ok := s.catalog.Get(crd.Group, crd.Version, crd.Plural)
	if !ok {
		return errors.New("the catalogue has no customresourcedefinitions resource")
	}
	crd.Install(defs, s.catalog)
	sync, err := crd.Start(ctx, s.catalog, s.cfg.Storage, defs, s.metrics.Conversion(), serviceResolver{s}, s.log)
	if err != nil {
		return fmt.Errorf("loading CustomResourceDefinitions: %w", err)
	}
	s.crds = sync
	return nil
}

// afterWrite keeps the catalogue in step with CustomResourceDefinitions
// written or deleted through this server, before the response goes out
// (a deleted one's resources and objects go), and tells the WriteHook.
func (s *Server) afterWrite(res *resource.Resource, obj api.Object) {
	s.written(res, obj)
	s.webhookSource.noteWritten(res, obj)
	s.quotaWritten.note(res, obj)
	if isDefinitions(res) {
		s.syncCRD(obj)
	}
}

func isDefinitions(res *resource.Resource) bool {
	return res.Group == crd.Group && res.Plural == crd.Plural
}

// syncCRD applies the stored state of the definition obj names; once it is
// gone (deleted, or its last finalizer removed) its objects are deleted too.
func (s *Server) syncCRD(obj api.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), crdSyncTimeout)
	defer cancel()
	gone, err := s.crds.Refresh(ctx, obj.Name())
	if err != nil {
		s.log.Error("updating the catalogue", "customresourcedefinition", obj.Name(), "err", err)
		return
	}
	s.caches.retain() // at once, before the response; follow would soon
	if !gone {
		return
	}
	objects, err := crd.ObjectsOf(obj)
	if err == nil {
		err = s.registry.DeletePrefix(ctx, objects)
	}
	if err != nil {
		s.log.Error("deleting the objects of a deleted definition", "customresourcedefinition", obj.Name(), "err", err)
	}
}

// fieldValidationModes are the values of the fieldValidation parameter.
var fieldValidationModes = []string{registry.FieldValidationIgnore, registry.FieldValidationStrict, registry.FieldValidationWarn}

// withFieldValidation carries a write's fieldValidation parameter to the
// registry; warnings about unknown fields go out as Warning headers.
func withFieldValidation(w http.ResponseWriter, r *http.Request) (*http.Request, error) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
		return r, nil
	}
	mode := r.URL.Query().Get("fieldValidation")
	if mode != "" && !slices.Contains(fieldValidationModes, mode) {
		return nil, apierror.BadRequest(fmt.Sprintf(`fieldValidation: Unsupported value: %q: supported values: "Ignore", "Strict", "Warn"`, mode))
	}
	warn := apierror.NewWarnings(w.Header())
	ctx := apierror.WithWarnings(r.Context(), warn)
	return r.WithContext(registry.WithFieldValidation(ctx, registry.FieldValidation{Mode: mode, Warn: warn.Add})), nil
}
