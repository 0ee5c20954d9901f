package policy

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// Group is the API group of the RBAC kinds.
const Group = "rbac.authorization.k8s.io"

// autoUpdate is the annotation whose value "false" keeps an object from
// reconciliation (rbacv1.AutoUpdateAnnotationKey).
const autoUpdate = "rbac.authorization.kubernetes.io/autoupdate"

// sameRule is kube's semantic equality of rules: an empty list is a nil one.
func sameRule(r, o authz.Rule) bool {
	return slices.Equal(r.Verbs, o.Verbs) && slices.Equal(r.APIGroups, o.APIGroups) &&
		slices.Equal(r.Resources, o.Resources) && slices.Equal(r.ResourceNames, o.ResourceNames) &&
		slices.Equal(r.NonResourceURLs, o.NonResourceURLs)
}

// ruleKey is the same for rules that are equal, and differs otherwise:
// each list's length, then each string's length and bytes.
func ruleKey(r authz.Rule) string {
	var b []byte
	for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
		b = binary.AppendUvarint(b, uint64(len(l)))
		for _, s := range l {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return string(b)
}

type aggregationRule struct {
	ClusterRoleSelectors []selector.LabelSelector `json:"clusterRoleSelectors"`
}

// rbacObject is what reconciliation and aggregation read of a Role,
// ClusterRole, RoleBinding or ClusterRoleBinding.
type rbacObject struct {
	Metadata struct {
		Name            string            `json:"name"`
		UID             string            `json:"uid"`
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Rules           []authz.Rule     `json:"rules"`
	AggregationRule *aggregationRule `json:"aggregationRule"`
	RoleRef         authz.RoleRef    `json:"roleRef"`
	Subjects        []authz.Subject  `json:"subjects"`
}

// read returns what obj says of RBAC. It encodes only the fields
// rbacObject has, not the rest of the metadata (managedFields).
func read(obj api.Object) (rbacObject, error) {
	md := obj.Metadata()
	part := api.Object{"metadata": map[string]any{}}
	for _, f := range []string{"name", "uid", "resourceVersion", "labels", "annotations"} {
		part["metadata"].(map[string]any)[f] = md[f]
	}
	for _, f := range []string{"rules", "aggregationRule", "roleRef", "subjects"} {
		part[f] = obj[f]
	}
	var o rbacObject
	b, err := api.MarshalObject(part)
	if err == nil {
		err = json.Unmarshal(b, &o)
	}
	return o, err
}

// jsonValue returns v as decoded JSON (maps, slices, strings), for an api.Object.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // v is made of strings, maps and slices
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// sameSelector is kube's semantic equality of label selectors.
func sameSelector(a, b selector.LabelSelector) bool {
	return maps.Equal(a.MatchLabels, b.MatchLabels) && slices.EqualFunc(a.MatchExpressions, b.MatchExpressions,
		func(x, y selector.LabelSelectorRequirement) bool {
			return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
		})
}
