package resource

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/validation"
)

func init() {
	csrs := GVR{"certificates.k8s.io", "v1", "certificatesigningrequests"}
	strategies[csrs] = append(strategies[csrs], csrStrategy)
	bundles := GVR{"certificates.k8s.io", "v1", "clustertrustbundles"}
	strategies[bundles] = append(strategies[bundles], func(r *Resource) { r.NameRuleOf = bundleName })
}

// bundleName is a ClusterTrustBundle's name rule, by its signer.
func bundleName(obj api.Object) func(string) []string {
	spec, _ := obj["spec"].(map[string]any)
	signer, _ := spec["signerName"].(string)
	return validation.ClusterTrustBundleName(signer)
}

// csrStrategy is kube's registry of CertificateSigningRequests
// (pkg/registry/certificates/certificates/strategy.go): a new request
// records who made it; an update of the request keeps its spec (and, as a
// status subresource, its status), and no write of it owns either in
// managedFields; its status subresource writes the status but keeps the
// approval conditions; its approval subresource writes the conditions
// only.
func csrStrategy(r *Resource) {
	r.PrepareCreate = recordRequester
	prepare(keepSpec)(r)
	r.Parts = csrParts
	r.Reset = [][]string{{"spec"}, {"status"}}
}

// csrParts are a CSR's status and approval subresources.
var csrParts = map[string]Part{
	"status":   {Write: csrStatus, ValidateUpdate: validation.CSRStatusUpdate, Reset: [][]string{{"spec"}, {"status", "conditions"}}},
	"approval": {Write: csrApproval, ValidateUpdate: validation.CSRApprovalUpdate, Reset: [][]string{{"spec"}, {"status", "certificate"}}},
}

// keepSpec keeps the stored spec on update.
func keepSpec(obj, old api.Object) {
	if old != nil {
		obj["spec"] = old["spec"]
	}
}

// recordRequester sets a new CSR's spec.username, uid, groups and extra to
// the requesting user's, whatever the client wrote (absent without a user).
func recordRequester(ctx context.Context, obj api.Object) {
	spec := MapAt(obj, "spec")
	for _, f := range []string{"username", "uid", "groups", "extra"} {
		delete(spec, f)
	}
	u, ok := authn.UserFrom(ctx)
	if !ok || u == nil {
		return
	}
	// The v1 type omits each field when empty.
	if u.Name != "" {
		spec["username"] = u.Name
	}
	if u.UID != "" {
		spec["uid"] = u.UID
	}
	if len(u.Groups) > 0 {
		spec["groups"] = api.StringList(u.Groups)
	}
	if len(u.Extra) > 0 {
		extra := make(map[string]any, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = api.StringList(v)
		}
		spec["extra"] = extra
	}
}

// The condition types only the approval subresource may change.
var approvalConditions = []string{"Approved", "Denied"}

// csrStatus is kube's status strategy of a CSR: the written metadata and
// status, except that when the status has as many Approved (likewise
// Denied) conditions as the stored one, those are the stored ones, so that
// a signer cannot approve; then the conditions' timestamps are filled.
func csrStatus(cur, next api.Object) api.Object {
	out := cur.DeepCopy()
	takeMetadata(out, next)
	status, _ := next["status"].(map[string]any)
	status = maps.Clone(status)
	if status == nil {
		status = map[string]any{}
	}
	conds := slices.Clone(conditionsOf(status))
	old := conditionsOf(MapAt(out, "status"))
	for _, typ := range approvalConditions {
		was, is := indicesOf(old, typ), indicesOf(conds, typ)
		if len(was) != len(is) {
			continue
		}
		for i, o := range was {
			conds[is[i]] = old[o]
		}
	}
	if conds != nil {
		status["conditions"] = conds
	}
	stampConditions(conds, old)
	out["status"] = status
	return out
}

// csrApproval is kube's approval strategy of a CSR: the stored spec and
// status with the written metadata and conditions, their timestamps
// filled.
func csrApproval(cur, next api.Object) api.Object {
	out := cur.DeepCopy()
	takeMetadata(out, next)
	status := MapAt(out, "status")
	newStatus, _ := next["status"].(map[string]any)
	conds, ok := newStatus["conditions"].([]any)
	if !ok {
		delete(status, "conditions")
		return out
	}
	conds = slices.Clone(conds)
	stampConditions(conds, conditionsOf(status))
	status["conditions"] = conds
	return out
}

// stampConditions is kube's populateConditionTimestamps: a condition
// without lastUpdateTime gets now; one without lastTransitionTime gets that
// of a stored condition of the same type and status, else now. Conditions
// are replaced, never changed in place, as they may be shared.
func stampConditions(conds, old []any) {
	now := api.NewTime(time.Now()).Format(time.RFC3339)
	for i, c := range conds {
		c, ok := c.(map[string]any)
		if !ok {
			continue
		}
		c = maps.Clone(c)
		if c["lastUpdateTime"] == nil {
			c["lastUpdateTime"] = now
		}
		if c["lastTransitionTime"] == nil {
			c["lastTransitionTime"] = now
			for _, o := range old {
				o, _ := o.(map[string]any)
				if o["type"] == c["type"] && o["status"] == c["status"] && o["lastTransitionTime"] != nil {
					c["lastTransitionTime"] = o["lastTransitionTime"]
					break
				}
			}
		}
		conds[i] = c
	}
}

// conditionsOf is status.conditions; nil when absent or not a list.
func conditionsOf(status map[string]any) []any {
	l, _ := status["conditions"].([]any)
	return l
}

// indicesOf are the indices of the conditions of type typ.
func indicesOf(conds []any, typ string) []int {
	var out []int
	for i, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == typ {
			out = append(out, i)
		}
	}
	return out
}
