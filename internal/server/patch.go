package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
)

// patch serves PATCH in every form kube accepts; an apply patch creates the
// object when it does not exist.
func (q *request) patch() {
	mt, body, err := q.readPatch(patch.Types(q.res.StrategicMerge))
	if err != nil {
		q.fail(err)
		return
	}
	if mt == patch.Apply {
		q.apply(body)
		return
	}
	if q.r.URL.Query().Has("force") {
		q.fail(patchOptionInvalid(api.CauseTypeFieldValueForbidden, "force", "Forbidden: may not be specified for non-apply patch"))
		return
	}
	opts := patch.Options{Strategic: q.res.StrategicMerge, Schema: patch.SchemaFor(q.res.Group, q.res.Version, q.res.Kind)}
	q.applyUpdate(q.recorded(func(cur api.Object) (api.Object, error) {
		next, err := patchObject(cur, mt, body, opts)
		if err != nil {
			return nil, err
		}
		return q.part(cur, next), nil
	}))
}

// readPatch reads the request's patch, of one of types.
func (q *request) readPatch(types []string) (mediaType string, body []byte, err error) {
	if mediaType, err = bodyMediaType(q.r, types); err != nil {
		return "", nil, err
	}
	body, err = q.s.readBody(q.r)
	return mediaType, body, err
}

func patchOptionInvalid(typ api.CauseType, field, msg string) error {
	return apierror.Invalid("meta.k8s.io", "PatchOptions", "", []api.StatusCause{apierror.Field(typ, field, msg)})
}

// patchObject applies a patch to cur. A resourceVersion the patch changed
// is a precondition (409 unless current); an unchanged one is dropped, so
// that a concurrent write makes the patch apply again, as kube does.
func patchObject(cur api.Object, mt string, body []byte, opts patch.Options) (api.Object, error) {
	rv := cur.ResourceVersion()
	current, err := json.Marshal(cur)
	if err != nil {
		return nil, apierror.Internal(fmt.Errorf("encoding the object to patch: %w", err))
	}
	patched, err := patch.ApplyTo(mt, current, body, opts)
	if err != nil {
		return nil, err
	}
	obj, err := api.ParseObject(patched)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("the patched object is not a JSON object: %v", err))
	}
	if obj.ResourceVersion() == rv {
		delete(obj.Metadata(), "resourceVersion")
	}
	return obj, nil
}

// apply serves server-side apply: create the object from the applied
// configuration, or merge the configuration into it.
func (q *request) apply(body []byte) {
	if q.r.URL.Query().Get("fieldManager") == "" {
		q.fail(patchOptionInvalid(api.CauseTypeFieldValueRequired, "fieldManager", "Required value: is required for apply patch"))
		return
	}
	m, err := q.manager()
	if err != nil {
		q.fail(err)
		return
	}
	config, err := q.applyConfig(body)
	if err != nil {
		q.fail(err)
		return
	}
	force := boolParam(q.r.URL.Query(), "force")
	_, err = q.s.registry.Get(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
	if isStatus(err, http.StatusNotFound) && q.info.Subresource == "" {
		err = q.applyCreate(m, config, force)
		if !isReason(err, api.StatusReasonAlreadyExists) {
			if err != nil {
				q.fail(err)
			}
			return
		}
		// Created meanwhile: apply to what was created.
	}
	q.applyUpdate(func(cur api.Object) (api.Object, error) {
		live := cur.DeepCopy()
		delete(live.Metadata(), "resourceVersion") // one in the configuration is a precondition
		return m.Apply(live, config, force)
	})
}

// applyConfig decodes an apply configuration and checks its type, as
// kube's apply does.
func (q *request) applyConfig(body []byte) (api.Object, error) {
	config, err := applyConfigOf(body, q.res.APIVersion(), q.res.Kind)
	if err != nil {
		return nil, err
	}
	if q.res.PruneAndDefault != nil {
		// Kube's apply refuses what its schema lacks (whatever
		// fieldValidation says), so managedFields name kept fields only.
		if unknown := q.res.PruneAndDefault(config.DeepCopy()); len(unknown) > 0 {
			return nil, apierror.BadRequest(fmt.Sprintf("failed to create typed patch object (%s/%s, Kind=%s): .%s: field not declared in schema",
				q.res.Group, q.res.Version, q.res.Kind, apierror.Truncate(unknown[0], apierror.MaxItemRunes)))
		}
	}
	return config, nil
}

// applyConfigOf decodes an apply configuration of an object of apiVersion
// and kind.
func applyConfigOf(body []byte, apiVersion, kind string) (api.Object, error) {
	j, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	config, err := api.ParseObject(j)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("the apply configuration is not a JSON object: %v", err))
	}
	if v := config.APIVersion(); v != apiVersion {
		return nil, apierror.BadRequest(fmt.Sprintf("Incorrect version specified in apply patch. Specified patch version: %s, expected: %s", v, apiVersion))
	}
	if k := config.Kind(); k != kind {
		return nil, apierror.BadRequest(fmt.Sprintf("Object 'Kind' is %q in the apply patch, expected %q", k, kind))
	}
	if m, ok := config["metadata"]; ok && m != nil {
		if _, isMap := m.(map[string]any); !isMap {
			return nil, apierror.BadRequest("metadata must be an object")
		}
	}
	return config, nil
}

// applyCreate creates the object an apply configuration describes.
func (q *request) applyCreate(m patch.Manager, config api.Object, force bool) error {
	obj, err := m.Apply(nil, config, force)
	if err != nil {
		return err
	}
	if err := q.sameName(obj); err != nil {
		return err
	}
	obj, err = q.mutate(obj, nil)
	if err == nil {
		err = q.sameName(obj) // a mutating webhook may have renamed it
	}
	if err == nil {
		err = q.checkWrite(obj, nil)
	}
	if err != nil {
		return err
	}
	created, err := q.s.registry.Create(q.admitting(q.r.Context()), q.res, q.info.Namespace, obj)
	if err != nil {
		return err
	}
	q.s.afterWrite(q.res, created.Object)
	q.respondWritten(http.StatusCreated, created)
	return nil
}

// sameName refuses obj unless it has the name on the URL.
func (q *request) sameName(obj api.Object) error {
	if name := obj.Name(); name != q.info.Name {
		return apierror.OtherName(name, q.info.Name)
	}
	return nil
}

func isStatus(err error, code int32) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Code == code
}

func isReason(err error, reason api.StatusReason) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Reason == reason
}
