package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/patch"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// scaleObject is an autoscaling/v1 Scale, its fields in kube's order and
// with its omitempty rules.
type scaleObject struct {
	Kind       string    `json:"kind"`
	APIVersion string    `json:"apiVersion"`
	Metadata   scaleMeta `json:"metadata"`
	Spec       struct {
		Replicas int32 `json:"replicas,omitempty"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}

type scaleMeta struct {
	Name              string `json:"name,omitempty"`
	Namespace         string `json:"namespace,omitempty"`
	UID               string `json:"uid,omitempty"`
	ResourceVersion   string `json:"resourceVersion,omitempty"`
	CreationTimestamp any    `json:"creationTimestamp"`
}

// unsetReplicas marks, as kube's ScaleREST does, the replicas of a Scale
// read from an object that has none, so that an update leaving them so
// can be refused.
const unsetReplicas = math.MinInt32

// scaleOf reads obj's Scale as kube's scaleFromCustomResource; found is
// false when obj has no spec replicas (they read as unsetReplicas).
func scaleOf(p *resource.ScalePaths, obj api.Object) (s scaleObject, found bool) {
	s.Kind, s.APIVersion = "Scale", "autoscaling/v1"
	md := obj.Metadata()
	s.Metadata = scaleMeta{Name: obj.Name(), Namespace: obj.Namespace(), UID: obj.UID(), ResourceVersion: obj.ResourceVersion(), CreationTimestamp: md["creationTimestamp"]}
	spec, found, _ := resource.Replicas(obj, p.SpecReplicas)
	if !found {
		spec = unsetReplicas
	}
	s.Spec.Replicas = int32(spec)
	status, _, _ := resource.Replicas(obj, p.StatusReplicas)
	s.Status.Replicas = int32(status)
	if p.Selector != nil {
		s.Status.Selector = p.Selector(obj)
	} else if p.LabelSelector != "" {
		s.Status.Selector, _ = resource.Path(obj, resource.SplitPath(p.LabelSelector)...).(string)
	}
	return s, found
}

// serveScale serves the scale subresource: get, update and patch of the
// object's Scale, as kube's ScaleREST.
func (q *request) serveScale() {
	switch q.info.Verb {
	case "get":
		q.getScale()
	case "update":
		q.updateScale()
	case "patch":
		q.patchScale()
	}
}

func (q *request) getScale() {
	if err := q.getFresh(); err != nil {
		q.fail(err)
		return
	}
	obj, err := q.s.registry.Get(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
	if err != nil {
		q.fail(err)
		return
	}
	s, found := scaleOf(q.res.Scale, obj)
	if !found {
		q.fail(apierror.Internal(fmt.Errorf("the spec replicas field %q does not exist", q.res.Scale.SpecReplicas)))
		return
	}
	if q.out.as == "Table" {
		b, err := json.Marshal(s)
		var scale api.Object
		if err == nil {
			scale, err = api.ParseObject(b)
		}
		if err != nil {
			q.fail(apierror.Internal(err))
			return
		}
		t := toTable(&resource.Resource{Columns: q.res.Scale.Columns}, []api.Object{scale}, q.r.URL.Query().Get("includeObject"))
		t.ListMeta.ResourceVersion = s.Metadata.ResourceVersion
		writeAs(q.w, http.StatusOK, q.out, t)
		return
	}
	writeAs(q.w, http.StatusOK, q.out, s)
}

func (q *request) updateScale() {
	obj, err := q.s.readObject(q.r, "Scale")
	if err != nil {
		q.fail(err)
		return
	}
	q.writeScale(func(scaleObject) (scaleObject, error) { return toScale(obj) }, q.recorded)
}

// patchScale patches the Scale with the types kube accepts there: a
// built-in kind's typed Scale takes strategic merge patches, a custom
// resource's does not (415).
func (q *request) patchScale() {
	mt, body, err := q.readPatch(patch.Types(q.res.StrategicMerge))
	if err != nil {
		q.fail(err)
		return
	}
	record := q.recorded
	if mt == patch.Apply {
		if body, record, err = q.applyToScale(body); err != nil {
			q.fail(err)
			return
		}
		mt = patch.MergePatch // a Scale has no lists: apply merges as a merge patch
	} else if q.r.URL.Query().Has("force") {
		q.fail(patchOptionInvalid(api.CauseTypeFieldValueForbidden, "force", "Forbidden: may not be specified for non-apply patch"))
		return
	}
	opts := patch.Options{Strategic: q.res.StrategicMerge, Schema: patch.SchemaFor("autoscaling", "v1", "Scale")}
	q.writeScale(func(old scaleObject) (scaleObject, error) {
		cur, err := json.Marshal(old)
		if err != nil {
			return scaleObject{}, apierror.Internal(err)
		}
		patched, err := patch.ApplyTo(mt, cur, body, opts)
		if err != nil {
			return scaleObject{}, err
		}
		obj, err := api.ParseObject(patched)
		if err != nil {
			return scaleObject{}, apierror.BadRequest(fmt.Sprintf("the patched object is not a JSON object: %v", err))
		}
		s, err := toScale(obj)
		if s.Metadata.ResourceVersion == old.Metadata.ResourceVersion {
			s.Metadata.ResourceVersion = "" // unchanged: no precondition, as patchObject
		}
		return s, err
	}, record)
}

// applyToScale reads an apply configuration of a Scale: it returns the
// configuration as JSON and how the write records it, as kube's scale
// field manager does: the manager's Apply entry (subresource scale) owns
// the object's spec replicas path, and taking it from another manager is
// a conflict unless forced.
func (q *request) applyToScale(body []byte) ([]byte, func(registry.UpdateFunc) registry.UpdateFunc, error) {
	if q.r.URL.Query().Get("fieldManager") == "" {
		return nil, nil, patchOptionInvalid(api.CauseTypeFieldValueRequired, "fieldManager", "Required value: is required for apply patch")
	}
	m, err := q.manager()
	if err != nil {
		return nil, nil, err
	}
	config, err := applyConfigOf(body, "autoscaling/v1", "Scale")
	if err != nil {
		return nil, nil, err
	}
	if mf := config.Metadata()["managedFields"]; mf != nil {
		return nil, nil, apierror.BadRequest("metadata.managedFields must be nil")
	}
	if _, err := toScale(config); err != nil {
		return nil, nil, err
	}
	j, err := json.Marshal(config)
	if err != nil {
		return nil, nil, apierror.Internal(err)
	}
	force := boolParam(q.r.URL.Query(), "force")
	path := resource.SplitPath(q.res.Scale.SpecReplicas)
	record := func(fn registry.UpdateFunc) registry.UpdateFunc {
		return func(cur api.Object) (api.Object, error) {
			next, err := fn(cur)
			if err != nil {
				return nil, err
			}
			// The object as the configuration would set it: its replicas.
			applied := api.Object{"apiVersion": q.res.APIVersion(), "kind": q.res.Kind, "metadata": map[string]any{"name": cur.Name()}}
			if err := setPath(applied, path, resource.Path(next, path...)); err != nil {
				return nil, apierror.Internal(err)
			}
			live := cur.DeepCopy()
			delete(live.Metadata(), "resourceVersion")
			merged, err := m.Apply(live, applied, force)
			if err != nil {
				return nil, err
			}
			next = next.DeepCopy()
			next.SetMeta("managedFields", api.Object(merged).Metadata()["managedFields"])
			return next, nil
		}
	}
	return j, record, nil
}

// mutateScale runs the mutating webhooks on the Scale s replacing old, as
// kube's scale storage has them see the Scale, not the object.
func (q *request) mutateScale(s, old scaleObject) (scaleObject, error) {
	obj, err := scaleMap(s)
	if err != nil {
		return s, err
	}
	oldObj, err := scaleMap(old)
	if err != nil {
		return s, err
	}
	if obj, err = q.mutate(obj, oldObj); err != nil {
		return s, err
	}
	return toScale(obj)
}

// scaleMap is a Scale as an object.
func scaleMap(s scaleObject) (api.Object, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	return api.ParseObject(b)
}

// scaleView is obj as the webhooks of its scale subresource see it, its
// Scale; nil stays nil.
func (q *request) scaleView(obj api.Object) api.Object {
	if obj == nil {
		return nil
	}
	s, _ := scaleOf(q.res.Scale, obj)
	out, err := scaleMap(s)
	if err != nil {
		return obj
	}
	return out
}

// toScale reads a Scale from a request's object.
func toScale(obj api.Object) (scaleObject, error) {
	var s scaleObject
	b, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return s, apierror.BadRequest(fmt.Sprintf("decoding Scale: %v", err))
	}
	return s, nil
}

// writeScale updates the object's spec replicas with the Scale next makes
// of its current one, and answers the Scale of the result, as kube's
// ScaleREST.Update: the object goes through the resource's own update
// (validation, generation), and a resourceVersion in the Scale is a
// precondition.
func (q *request) writeScale(next func(scaleObject) (scaleObject, error), record func(registry.UpdateFunc) registry.UpdateFunc) {
	p := q.res.Scale
	updated, err := q.s.registry.Update(q.admitting(q.r.Context()), q.res, q.info.Namespace, q.info.Name, record(func(cur api.Object) (api.Object, error) {
		old, _ := scaleOf(p, cur)
		s, err := next(old)
		if err == nil {
			s, err = q.mutateScale(s, old)
		}
		if err != nil {
			return nil, err
		}
		if err := checkScaleName(s.Metadata, q.info.Namespace, q.info.Name); err != nil {
			return nil, err
		}
		if s.Spec.Replicas == unsetReplicas {
			return nil, apierror.BadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", p.SpecReplicas))
		}
		if p.Selector != nil && s.Spec.Replicas < 0 {
			// kube's ScaleREST of a built-in kind validates the Scale
			// itself (ValidateScale); a custom resource's schema does.
			return nil, apierror.Invalid("autoscaling", "Scale", q.info.Name, []api.StatusCause{
				apierror.Field(api.CauseTypeFieldValueInvalid, "spec.replicas", fmt.Sprintf("Invalid value: %d: must be greater than or equal to 0", s.Spec.Replicas)),
			})
		}
		obj := cur.DeepCopy()
		if err := setPath(obj, resource.SplitPath(p.SpecReplicas), json.Number(strconv.Itoa(int(s.Spec.Replicas)))); err != nil {
			return nil, apierror.Internal(err)
		}
		if s.Metadata.ResourceVersion != "" {
			obj.SetMeta("resourceVersion", s.Metadata.ResourceVersion)
		} else {
			delete(obj.Metadata(), "resourceVersion")
		}
		return obj, q.checkWrite(obj, cur)
	}))
	if err != nil {
		q.fail(err)
		return
	}
	q.s.afterWrite(q.res, updated.Object)
	s, _ := scaleOf(p, updated.Object)
	writeAs(q.w, http.StatusOK, q.out, s)
}

// checkScaleName requires a Scale to name the object of the URL, as kube's
// update and patch handlers' checkName.
func checkScaleName(md scaleMeta, ns, name string) error {
	if md.Name != name {
		return apierror.OtherName(md.Name, name)
	}
	if ns != "" && md.Namespace != "" && md.Namespace != ns {
		return apierror.BadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", md.Namespace, ns))
	}
	return nil
}

// setPath sets the value at path in obj, making the maps on the way, as
// unstructured.SetNestedField; a value on the way that is not a map is an
// error.
func setPath(obj api.Object, path []string, v any) error {
	m := map[string]any(obj)
	for i, k := range path[:len(path)-1] {
		switch c := m[k].(type) {
		case map[string]any:
			m = c
		case nil:
			made := map[string]any{}
			m[k], m = made, made
		default:
			return fmt.Errorf("value cannot be set because %v is not a map[string]interface{}", "."+strings.Join(path[:i+1], "."))
		}
	}
	m[path[len(path)-1]] = v
	return nil
}
