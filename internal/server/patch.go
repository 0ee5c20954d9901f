package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
)

// patch serves PATCH in every form kube accepts; an apply patch creates the
// object when it does not exist.
func (q *request) patch() {
	mt, err := bodyMediaType(q.r)
	if err != nil {
		q.fail(err)
		return
	}
	if !slices.Contains(patch.Types(q.res.StrategicMerge), mt) {
		q.fail(apierror.UnsupportedMediaType(q.r.Header.Get("Content-Type"), patch.Types(q.res.StrategicMerge)))
		return
	}
	body, err := q.s.readBody(q.r)
	if err != nil {
		q.fail(err)
		return
	}
	if mt == patch.Apply {
		q.apply(body)
		return
	}
	q.applyUpdate(func(cur api.Object) (api.Object, error) {
		return patchObject(cur, mt, body, patch.Options{Strategic: q.res.StrategicMerge})
	})
}

// patchObject applies a patch to cur. cur's resourceVersion is removed first,
// so one in the result came from the patch and is a precondition.
func patchObject(cur api.Object, mt string, body []byte, opts patch.Options) (api.Object, error) {
	delete(cur.Metadata(), "resourceVersion")
	current, err := json.Marshal(cur)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	patched, err := patch.ApplyTo(mt, current, body, opts)
	if err != nil {
		return nil, err
	}
	obj, err := api.ParseObject(patched)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("the patched object is not a JSON object: %v", err))
	}
	return obj, nil
}

// apply serves server-side apply: create the object from the applied
// configuration, or merge the configuration into it.
func (q *request) apply(body []byte) {
	if q.r.URL.Query().Get("fieldManager") == "" {
		q.fail(apierror.Invalid("meta.k8s.io", "PatchOptions", "", []api.StatusCause{
			apierror.Field(api.CauseTypeFieldValueRequired, "fieldManager", "Required value: is required for apply patch"),
		}))
		return
	}
	config, err := yaml.YAMLToJSON(body)
	if err != nil {
		q.fail(apierror.BadRequest(fmt.Sprintf("the apply configuration is not valid YAML: %v", err)))
		return
	}
	_, err = q.s.registry.Get(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
	var se *api.StatusError
	if errors.As(err, &se) && se.Status.Code == http.StatusNotFound {
		q.applyCreate(config)
		return
	}
	q.applyUpdate(func(cur api.Object) (api.Object, error) {
		return patchObject(cur, patch.MergePatch, config, patch.Options{})
	})
}

func (q *request) applyCreate(config []byte) {
	obj, err := api.ParseObject(config)
	if err != nil {
		q.fail(apierror.BadRequest(fmt.Sprintf("the apply configuration is not a JSON object: %v", err)))
		return
	}
	if obj.Name() != q.info.Name {
		q.fail(apierror.BadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.Name(), q.info.Name)))
		return
	}
	created, err := q.s.registry.Create(q.r.Context(), q.res, q.info.Namespace, obj)
	if err != nil {
		q.fail(err)
		return
	}
	q.s.afterWrite(q.res, created)
	q.respond(http.StatusCreated, created)
}
