package plugins

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// LimitRanges are read by LimitRanger.
var LimitRanges = Ref{Version: "v1", Plural: "limitranges"}

// limitRangerAnnotation lists the defaults LimitRanger gave a pod.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// The limit types of a LimitRange's limits.
const (
	limitContainer = "Container"
	limitPod       = "Pod"
	limitClaim     = "PersistentVolumeClaim"
)

// limitRanger is kube's LimitRanger plugin
// (plugin/pkg/admission/limitranger): the LimitRanges of a new pod's
// namespace give its containers and init containers the default requests
// and limits they lack (and the pod the kubernetes.io/limit-ranger
// annotation saying so); their min, max and maxLimitRequestRatio refuse a
// new pod whose containers or whole (kube's pod requests: init containers
// as their peak, sidecars added, pod-level resources over the sum) fall
// outside, and a claim whose storage request does. LimitRanges are read
// from the watch cache, in name order: one created a moment ago may not
// be seen yet (kube lists them live when its cache has none, and keeps
// that answer 30 s).
type limitRanger struct{ src Source }

// limitRangerApplies says whether LimitRanger acts on a write: a pod's
// create or resize, a claim's create or update, not of an object being
// deleted (kube's SupportsAttributes).
func limitRangerApplies(a *webhook.Attributes) bool {
	if a.Resource.Group != "" || a.Operation != webhook.Create && a.Operation != webhook.Update {
		return false
	}
	if a.OldObject != nil && a.OldObject.Metadata()["deletionTimestamp"] != nil {
		return false
	}
	if a.Subresource != "" {
		return a.Subresource == "resize" && a.Resource.Resource == "pods" && a.Operation == webhook.Update
	}
	switch a.Resource.Resource {
	case "pods":
		return a.Operation == webhook.Create
	case "persistentvolumeclaims":
		return true
	}
	return false
}

// ranges are the limits of each of a namespace's LimitRanges, in name
// order.
func (l *limitRanger) ranges(ctx context.Context, a *webhook.Attributes) ([][]map[string]any, error) {
	ranges, err := l.src.List(ctx, LimitRanges, a.Namespace)
	if err != nil {
		return nil, Forbidden(a, fmt.Sprintf("unable to %s %s at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
	}
	slices.SortFunc(ranges, func(x, y api.Object) int { return cmp.Compare(x.Name(), y.Name()) })
	out := make([][]map[string]any, len(ranges))
	for i, r := range ranges {
		out[i] = objects(mapAt(r, "spec"), "limits")
	}
	return out, nil
}

func (l *limitRanger) admit(ctx context.Context, a *webhook.Attributes) error {
	if !limitRangerApplies(a) || a.Resource.Resource != "pods" {
		return nil
	}
	ranges, err := l.ranges(ctx, a)
	if err != nil || len(ranges) == 0 {
		return err
	}
	// kube applies each LimitRange's defaults in turn (the last Container
	// limit of one naming a resource): the first range to give a
	// container a resource's default wins.
	var notes []string
	spec := mapAt(a.Object, "spec")
	for _, limits := range ranges {
		requests, defaults := map[string]resource.Quantity{}, map[string]resource.Quantity{}
		for _, limit := range limits {
			if str(limit, "type") == limitContainer {
				maps.Copy(requests, quota.Read(limit, "defaultRequest"))
				maps.Copy(defaults, quota.Read(limit, "default"))
			}
		}
		for _, c := range objects(spec, "containers") {
			notes = defaultResources(c, requests, defaults, "container", notes)
		}
		for _, c := range objects(spec, "initContainers") {
			notes = defaultResources(c, requests, defaults, "init container", notes)
		}
	}
	if len(notes) > 0 {
		md := a.Object.Metadata()
		annotations, _ := md["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
			md["annotations"] = annotations
		}
		annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
	return nil
}

// defaultResources gives container c the requests and limits it lacks,
// and returns notes with kube's note of what it set.
func defaultResources(c map[string]any, requests, limits map[string]resource.Quantity, what string, notes []string) []string {
	if len(requests) == 0 && len(limits) == 0 {
		return notes
	}
	res, _ := c["resources"].(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	setLimits, setRequests := fill(res, "limits", limits), fill(res, "requests", requests)
	if len(res) > 0 {
		c["resources"] = res
	}
	name := str(c, "name")
	if len(setRequests) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), what, name))
	}
	if len(setLimits) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), what, name))
	}
	return notes
}

// fill sets in res[key] the quantities of defaults it lacks and returns
// their names, sorted.
func fill(res map[string]any, key string, defaults map[string]resource.Quantity) []string {
	list, _ := res[key].(map[string]any)
	var set []string
	for name, q := range defaults {
		if _, ok := list[name]; ok {
			continue
		}
		if list == nil {
			list = map[string]any{}
			res[key] = list
		}
		list[name] = q.String()
		set = append(set, name)
	}
	slices.Sort(set)
	return set
}

func (l *limitRanger) validate(ctx context.Context, a *webhook.Attributes) error {
	if !limitRangerApplies(a) {
		return nil
	}
	ranges, err := l.ranges(ctx, a)
	if err != nil || len(ranges) == 0 {
		return err
	}
	limits := slices.Concat(ranges...)
	var errs []error
	spec := mapAt(a.Object, "spec")
	if a.Resource.Resource == "persistentvolumeclaims" {
		requests := quota.Read(mapAt(spec, "resources"), "requests")
		for _, limit := range limits {
			if str(limit, "type") != limitClaim {
				continue
			}
			for name, q := range sorted(quota.Read(limit, "min")) {
				errs = appendErr(errs, minConstraint(limitClaim, name, q, requests, nil))
			}
			for name, q := range sorted(quota.Read(limit, "max")) {
				errs = appendErr(errs, maxRequestConstraint(limitClaim, name, q, requests))
			}
		}
		return refuse(a, errs)
	}
	for _, limit := range limits {
		switch str(limit, "type") {
		case limitContainer:
			for _, key := range []string{"containers", "initContainers"} {
				for _, c := range objects(spec, key) {
					res := mapAt(c, "resources")
					errs = append(errs, checkLimit(limitContainer, limit, quota.Read(res, "requests"), quota.Read(res, "limits"))...)
				}
			}
		case limitPod:
			requests, limits := podResources(spec)
			errs = append(errs, checkLimit(limitPod, limit, requests, limits)...)
		}
	}
	return refuse(a, errs)
}

// checkLimit checks requests and limits against a limit's min, max and
// maxLimitRequestRatio.
func checkLimit(typ string, limit map[string]any, requests, limits map[string]resource.Quantity) []error {
	var errs []error
	for name, q := range sorted(quota.Read(limit, "min")) {
		errs = appendErr(errs, minConstraint(typ, name, q, requests, limits))
	}
	for name, q := range sorted(quota.Read(limit, "max")) {
		errs = appendErr(errs, maxConstraint(typ, name, q, requests, limits))
	}
	for name, q := range sorted(quota.Read(limit, "maxLimitRequestRatio")) {
		errs = appendErr(errs, ratioConstraint(typ, name, q, requests, limits))
	}
	return errs
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// refuse is kube's refusal of errs: one message, or several in brackets,
// each once (utilerrors' aggregate).
func refuse(a *webhook.Attributes, errs []error) error {
	var msgs []string
	for _, e := range errs {
		if !slices.Contains(msgs, e.Error()) {
			msgs = append(msgs, e.Error())
		}
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return Forbidden(a, msgs[0])
	}
	return Forbidden(a, "["+strings.Join(msgs, ", ")+"]")
}

// sorted iterates over a resource list in name order (kube ranges over a
// map: its messages come in any order).
func sorted(m map[string]resource.Quantity) func(func(string, resource.Quantity) bool) {
	return func(yield func(string, resource.Quantity) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// values are kube's comparable values of a request, a limit and the bound
// they are held to: in thousandths when all three fit, else in units.
func values(request, limit, bound resource.Quantity) (int64, int64, int64) {
	r, l, b := request.Value(), limit.Value(), bound.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && b <= resource.MaxMilliValue {
		return request.MilliValue(), limit.MilliValue(), bound.MilliValue()
	}
	return r, l, b
}

func minConstraint(typ, name string, bound resource.Quantity, requests, limits map[string]resource.Quantity) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, b := values(req, lim, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, typ, bound.String())
	case r < b:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	case hasLim && l < b:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, typ, bound.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(typ, name string, bound resource.Quantity, requests map[string]resource.Quantity) error {
	req, hasReq := requests[name]
	r, _, b := values(req, resource.Quantity{}, bound)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, typ, bound.String())
	case r > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	}
	return nil
}

func maxConstraint(typ, name string, bound resource.Quantity, requests, limits map[string]resource.Quantity) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, b := values(req, lim, bound)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, typ, bound.String())
	case l > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, typ, bound.String(), lim.String())
	case hasReq && r > b:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, typ, bound.String(), req.String())
	}
	return nil
}

func ratioConstraint(typ, name string, bound resource.Quantity, requests, limits map[string]resource.Quantity) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := values(req, lim, bound)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, typ, bound.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, typ, bound.String())
	}
	ratio := float64(l) / float64(r)
	observed, allowed := ratio, float64(bound.Value())
	if bound.Value() <= resource.MaxMilliValue {
		observed, allowed = ratio*1000, float64(bound.MilliValue())
	}
	if observed > allowed {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, typ, bound.String(), ratio)
	}
	return nil
}

// podResources are a pod's requests and limits as kube's LimitRanger
// counts them: its containers' sums, init containers as the most any one
// of them needs with the sidecars (restartPolicy Always) started before it,
// sidecars also added to the sum; the pod's own cpu and memory, if set,
// instead (PodLevelResources, on by default).
func podResources(spec map[string]any) (requests, limits map[string]resource.Quantity) {
	total := func(key string) map[string]resource.Quantity {
		sum := map[string]resource.Quantity{}
		for _, c := range objects(spec, "containers") {
			quota.Add(sum, quota.Read(mapAt(c, "resources"), key))
		}
		sidecars, peak := map[string]resource.Quantity{}, map[string]resource.Quantity{}
		for _, c := range objects(spec, "initContainers") {
			own := quota.Read(mapAt(c, "resources"), key)
			var need map[string]resource.Quantity
			if str(c, "restartPolicy") == "Always" {
				quota.Add(sum, own)
				quota.Add(sidecars, own)
				need = sidecars
			} else {
				need = map[string]resource.Quantity{}
				quota.Add(need, own)
				quota.Add(need, sidecars)
			}
			maxOf(peak, need)
		}
		maxOf(sum, peak)
		for name, q := range quota.Read(mapAt(spec, "resources"), key) {
			if name == "cpu" || name == "memory" {
				sum[name] = q
			}
		}
		return sum
	}
	return total("requests"), total("limits")
}

func maxOf(peak, list map[string]resource.Quantity) {
	for name, q := range list {
		if v, ok := peak[name]; !ok || q.Cmp(v) > 0 {
			peak[name] = q.DeepCopy()
		}
	}
}

// mapAt is the object m[key], nil if it is not one.
func mapAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}
