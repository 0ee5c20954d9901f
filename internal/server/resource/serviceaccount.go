package resource

import (
	"strconv"

	"github.com/listwatch/listwatch/client/api"
)

// serviceAccounts is core/v1 serviceaccounts, printed as kube's
// printServiceAccount: the age only, no count of secrets.
func serviceAccounts() *Resource {
	return &Resource{
		Version: "v1", Plural: "serviceaccounts",
		Validate:            validateServiceAccount,
		ReturnDeletedObject: true,
		Columns:             []Column{ageColumn()},
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
