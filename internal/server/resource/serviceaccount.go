package resource

import (
	"strconv"

	"github.com/listwatch/listwatch/api"
)

// serviceAccounts is core/v1 serviceaccounts, printed as kube's
// printServiceAccount: the number of secrets, and the age.
func serviceAccounts() *Resource {
	return &Resource{
		Version: "v1", Plural: "serviceaccounts", Singular: "serviceaccount", Kind: "ServiceAccount", ListKind: "ServiceAccountList",
		ShortNames: []string{"sa"}, Namespaced: true, StrategicMerge: true, Validate: validateServiceAccount,
		ReturnDeletedObject: true,
		Columns: []Column{
			column("Secrets", "string", "", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.", func(o api.Object) any {
				s, _ := o["secrets"].([]any)
				return int64(len(s))
			}),
			ageColumn(),
		},
	}
}

// serviceAccountDefinitions are the schemas of core/v1 ServiceAccount and
// the reference it lists image pull secrets by.
func serviceAccountDefinitions() map[string]map[string]any {
	return map[string]map[string]any{
		corePrefix + "ServiceAccount": kind("", "v1", "ServiceAccount", "ServiceAccount binds together: * a name, understood by users, and perhaps by peripheral systems, for an identity * a principal that can be authenticated and authorized * a set of secrets", map[string]any{
			"automountServiceAccountToken": boolean("AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted."),
			"imagePullSecrets": with(arrayOf(refItem(corePrefix+"LocalObjectReference"), "ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount."),
				"x-kubernetes-list-type", "atomic"),
			"secrets": with(arrayOf(refItem(corePrefix+"ObjectReference"), "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
				"x-kubernetes-patch-merge-key", "name", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"name"}),
		}),
		corePrefix + "LocalObjectReference": with(object("LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.", map[string]any{
			"name": with(str("Name of the referent."), "default", ""),
		}), "x-kubernetes-map-type", "atomic"),
	}
}

// validateServiceAccount checks the types of a service account's fields,
// which kube's typed decoder enforces and our protobuf encoder needs; kube
// validates nothing else of it beyond metadata.
func validateServiceAccount(o api.Object) []api.StatusCause {
	var causes []api.StatusCause
	if v, ok := o["automountServiceAccountToken"]; ok && v != nil {
		if _, isBool := v.(bool); !isBool {
			causes = append(causes, invalid("automountServiceAccountToken", "must be a boolean"))
		}
	}
	for _, refs := range []struct {
		list   string
		fields []string
	}{
		{"secrets", []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}},
		{"imagePullSecrets", []string{"name"}},
	} {
		list, fields := refs.list, refs.fields
		v, ok := o[list]
		if !ok || v == nil {
			continue
		}
		items, ok := v.([]any)
		if !ok {
			causes = append(causes, invalid(list, "must be an array of objects"))
			continue
		}
		for i, item := range items {
			path := list + "[" + strconv.Itoa(i) + "]"
			m, ok := item.(map[string]any)
			if !ok {
				causes = append(causes, invalid(path, "must be an object"))
				continue
			}
			for _, f := range fields {
				if fv, ok := m[f]; ok && fv != nil {
					if _, isString := fv.(string); !isString {
						causes = append(causes, invalid(path+"."+f, "must be a string"))
					}
				}
			}
		}
	}
	return causes
}
