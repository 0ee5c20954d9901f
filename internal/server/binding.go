package server

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// bindingSubresource is pods/binding: POST a v1 Binding naming a node, and
// the pod is bound to it, as kube-scheduler binds pods.
var bindingSubresource = resource.Subresource{Name: "binding", Version: "v1", Kind: "Binding", Verbs: []string{"create"}}

// isBindings says whether res is the bindings resource, kube's legacy
// form of pods/binding.
func isBindings(res *resource.Resource) bool { return res.Group == "" && res.Plural == "bindings" }

// initContainerAnnotations are the legacy annotations kube drops from a
// pod its binding writes (pkg/api/pod DropInitContainerAnnotations).
var initContainerAnnotations = []string{
	"pod.beta.kubernetes.io/init-containers", "pod.alpha.kubernetes.io/init-containers",
	"pod.beta.kubernetes.io/init-container-statuses", "pod.alpha.kubernetes.io/init-container-statuses",
}

// bind serves a pod's binding as kube's BindingREST.Create: the Binding
// is admitted (PodTopologyLabels gives it its node's zone and region) and
// bound by bindPod.
func (q *request) bind() {
	binding, err := q.readBinding()
	if err == nil && binding.Name() != q.info.Name {
		err = apierror.BadRequest("name in URL does not match name in Binding object")
	}
	if err == nil {
		binding, err = q.mutate(binding, nil)
	}
	if err != nil {
		q.fail(err)
		return
	}
	q.bindPod(binding, q.info.Name)
}

// bindLegacy serves a POST to bindings, kube's LegacyBindingREST: the pod
// is the one the Binding names, and admission sees a write of bindings
// (which PodTopologyLabels ignores).
func (q *request) bindLegacy() {
	binding, err := q.readBinding()
	if err == nil && binding.Name() == "" {
		err = apierror.BadRequest("Name parameter required.") // kube's key function's
	}
	if err == nil {
		binding, err = q.mutate(binding, nil)
	}
	if err != nil {
		q.fail(err)
		return
	}
	q.bindPod(binding, binding.Name())
}

// bindPod binds pod name as the admitted binding says, once
// ValidatePodBinding and validating admission pass: the pod, unless
// deleted, bound or gated, gets the node, the Binding's annotations and
// labels (unchecked) and the PodScheduled condition, written as it is (no
// pod strategy, validation or admission of the pod: kube writes it
// straight to storage). The answer is a Success Status.
func (q *request) bindPod(binding api.Object, name string) {
	err := q.s.registry.CheckNamespace(q.r.Context(), q.res, q.info.Namespace, name)
	if err == nil {
		err = validateBinding(binding)
	}
	if err == nil {
		err = q.admit(q.r.Context(), binding, nil)
	}
	if err != nil {
		q.fail(err)
		return
	}
	md := binding.Metadata()
	target, _ := binding["target"].(map[string]any)
	uid, _ := md["uid"].(string)
	rv, _ := md["resourceVersion"].(string)
	annotations, labels := binding.Annotations(), binding.Labels()
	pods, _ := q.s.catalog.Get("", "v1", "pods")
	updated, err := q.s.registry.Update(q.r.Context(), bindingView(pods), q.info.Namespace, name, func(cur api.Object) (api.Object, error) {
		if err := bindingPreconditions(cur, q.info.Namespace, name, uid, rv); err != nil {
			return nil, err
		}
		pod := cur.DeepCopy()
		delete(pod.Metadata(), "resourceVersion") // the preconditions are checked
		spec, _ := pod["spec"].(map[string]any)
		conflict := func(msg string) error {
			return apierror.Conflict(apierror.Target{Resource: "pods/binding", Name: name}, msg)
		}
		switch {
		case pod.Metadata()["deletionTimestamp"] != nil:
			return nil, conflict(fmt.Sprintf("pod %s is being deleted, cannot be assigned to a host", name))
		case stringAt(spec, "nodeName") != "":
			return nil, conflict(fmt.Sprintf("pod %s is already assigned to node %q", name, stringAt(spec, "nodeName")))
		case len(listAt(spec, "schedulingGates")) != 0:
			return nil, conflict(fmt.Sprintf("pod %s has non-empty .spec.schedulingGates", name))
		}
		spec["nodeName"] = stringAt(target, "name")
		bindPodMeta(pod, annotations, labels)
		status, _ := pod["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			pod["status"] = status
		}
		// Gate ClearingNominatedNodeNameAfterBinding, beta and on.
		delete(status, "nominatedNodeName")
		status["conditions"] = setPodCondition(listAt(status, "conditions"), map[string]any{"type": "PodScheduled", "status": "True"})
		return pod, nil
	})
	if err != nil {
		q.fail(err)
		return
	}
	q.s.afterWrite(pods, updated.Object)
	s := api.Status{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: api.StatusSuccess, Code: http.StatusCreated}
	writeAs(q.w, http.StatusCreated, q.out, s)
}

// readBinding reads the request's Binding, which must be in the
// request's namespace. Its uid and resourceVersion are the bind's
// preconditions: kube's BindingREST keeps the system fields of its
// metadata that a create wipes elsewhere.
func (q *request) readBinding() (api.Object, error) {
	return q.readCreate(bindingSubresource, "")
}

// readCreate reads the object of a create on subresource sub as kube's
// create handler decodes it: apiVersion and kind checked and defaulted to
// sub's (an object of apiVersion alias is read as sub's version, whose
// fields it has), and put in the request's namespace.
func (q *request) readCreate(sub resource.Subresource, alias string) (api.Object, error) {
	obj, err := q.s.readObject(q.r, sub.Kind)
	if err != nil {
		return nil, err
	}
	version := sub.Version
	if sub.Group != "" {
		version = sub.Group + "/" + sub.Version
	}
	if alias != "" && obj.APIVersion() == alias {
		obj["apiVersion"] = version
	}
	if err := checkKind(obj, version, sub.Kind); err != nil {
		return nil, err
	}
	obj["apiVersion"], obj["kind"] = version, sub.Kind
	return obj, q.inNamespace(obj)
}

// inNamespace puts obj, a subresource's object, in the request's
// namespace, unless it names another (kube's
// EnsureObjectNamespaceMatchesRequestNamespace).
func (q *request) inNamespace(obj api.Object) error {
	switch ns := obj.Namespace(); ns {
	case "":
		obj.SetMeta("namespace", q.info.Namespace)
	case q.info.Namespace:
	default:
		return apierror.BadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// validateBinding is kube's ValidatePodBinding. Its errors reach the
// client as kube's do, an aggregate error the handler did not convert: a
// 500 with no reason.
func validateBinding(binding api.Object) error {
	target, _ := binding["target"].(map[string]any)
	kind, name := stringAt(target, "kind"), stringAt(target, "name")
	var errs []string
	if kind != "" && kind != "Node" {
		errs = append(errs, fmt.Sprintf(`target.kind: Unsupported value: %q: supported values: "Node", "<empty>"`, kind))
	}
	if name == "" {
		errs = append(errs, "target.name: Required value")
	} else if kind == "" || kind == "Node" {
		for _, msg := range kubefmt.Util.DNS1123Subdomain(name) {
			errs = append(errs, fmt.Sprintf("target.name: Invalid value: %q: %s", name, msg))
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return apierror.Unconverted(errs[0])
	}
	return apierror.Unconverted("[" + strings.Join(errs, ", ") + "]")
}

// bindingPreconditions checks the Binding's uid and resourceVersion, if
// given, against the pod's, with kube's storage error.
func bindingPreconditions(pod api.Object, ns, name, uid, rv string) error {
	var failed string
	switch {
	case uid != "" && uid != pod.UID():
		failed = fmt.Sprintf("UID in precondition: %s, UID in object meta: %s", uid, pod.UID())
	case rv != "" && rv != pod.ResourceVersion():
		failed = fmt.Sprintf("ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", rv, pod.ResourceVersion())
	default:
		return nil
	}
	return apierror.Conflict(apierror.Target{Resource: "pods", Name: name}, fmt.Sprintf(
		"StorageError: invalid object, Code: 4, Key: /registry/pods/%s/%s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: %s",
		ns, name, failed))
}

// bindPodMeta gives the pod the binding's annotations and labels, over
// its own, and drops the legacy init container annotations.
func bindPodMeta(pod api.Object, annotations, labels map[string]string) {
	md := pod.Metadata()
	for key, add := range map[string]map[string]string{"annotations": annotations, "labels": labels} {
		m, _ := md[key].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		for k, v := range add {
			m[k] = v
		}
		if key == "annotations" {
			for _, k := range initContainerAnnotations {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(md, key) // kube's encoder omits an empty map
		} else {
			md[key] = m
		}
	}
}

// setPodCondition is a pod's conditions with cond set as kube's
// UpdatePodCondition sets it: the condition of its type replaced whole,
// its transition time kept only if its status was the same already.
func setPodCondition(conditions []any, cond map[string]any) []any {
	cond["lastProbeTime"] = nil
	cond["lastTransitionTime"] = api.NewTime(time.Now()).Format(time.RFC3339)
	for i, c := range conditions {
		c, _ := c.(map[string]any)
		if stringAt(c, "type") != stringAt(cond, "type") {
			continue
		}
		if stringAt(c, "status") == stringAt(cond, "status") {
			cond["lastTransitionTime"] = c["lastTransitionTime"]
		}
		out := append([]any(nil), conditions...)
		out[i] = cond
		return out
	}
	return append(conditions, cond)
}

// bindingView is the pods resource as a binding writes to it: status
// included, no generation, no pod strategy, no validation (not even of
// the labels and annotations the Binding brings: ValidatePodBinding checks
// its target alone).
func bindingView(res *resource.Resource) *resource.Resource {
	v := partView(res)
	v.Prepare, v.Unvalidated = nil, true
	return v
}

// stringAt is the string m[key], "" if it is not one.
func stringAt(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}

// listAt is the list m[key], nil if it is not one.
func listAt(m map[string]any, key string) []any {
	v, _ := m[key].([]any)
	return v
}
