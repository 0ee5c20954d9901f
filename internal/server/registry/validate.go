package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// maxAnnotationsSize is kube's limit on the total size of an object's annotations.
const maxAnnotationsSize = 256 * 1024

// validateName checks an object's name as kube does: a DNS-1123 label for
// namespaces, the resource's own rule if it has one, a DNS-1123 subdomain
// for everything else.
func validateName(res *resource.Resource, obj api.Object) []api.StatusCause {
	name, field, rule := obj.Name(), "metadata.name", res.NameRule
	if res.NameRuleOf != nil {
		rule = res.NameRuleOf(obj)
	}
	if rule != nil {
		var causes []api.StatusCause
		for _, msg := range rule(name) {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, field, fmt.Sprintf("Invalid value: %q: %s", name, msg)))
		}
		return causes
	}
	if res.Plural == "namespaces" && res.Group == "" {
		if !IsNamespaceName(name) {
			return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueInvalid, field, fmt.Sprintf("Invalid value: %q: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", name))}
		}
		return nil
	}
	if !IsObjectName(name) {
		return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueInvalid, field, fmt.Sprintf("Invalid value: %q: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", name))}
	}
	return nil
}

// IsNamespaceName says whether name is a valid namespace name, an RFC 1123
// label, as kube's ValidateNamespaceName.
func IsNamespaceName(name string) bool { return len(name) <= 63 && dns1123Label.MatchString(name) }

// IsObjectName says whether name is a valid name for most kinds, an RFC
// 1123 subdomain, as kube's NameIsDNSSubdomain.
func IsObjectName(name string) bool { return len(name) <= 253 && dns1123Subdomain.MatchString(name) }

// validateMeta checks metadata shapes, labels and annotations.
func validateMeta(obj api.Object) []api.StatusCause {
	var causes []api.StatusCause
	md := obj.Metadata()
	for _, f := range []string{"labels", "annotations"} {
		if v, ok := md[f]; ok && v != nil {
			m, isMap := v.(map[string]any)
			if !isMap {
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata."+f, "Invalid value: must be an object of strings"))
				continue
			}
			for k, v := range m {
				if _, isString := v.(string); !isString {
					causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata."+f+"["+k+"]", "Invalid value: must be a string"))
				}
			}
		}
	}
	for k, v := range obj.Labels() {
		if err := selector.ValidateLabel(k, v); err != nil {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.labels", "Invalid value: "+err.Error()))
		}
	}
	size := 0
	for k, v := range obj.Annotations() {
		size += len(k) + len(v)
		if err := selector.ValidateLabelKey(k); err != nil {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.annotations", "Invalid value: "+err.Error()))
		}
	}
	if size > maxAnnotationsSize {
		causes = append(causes, apierror.Field(api.CauseTypeFieldValueTooLong, "metadata.annotations", fmt.Sprintf("Too long: must have at most %d bytes", maxAnnotationsSize)))
	}
	for _, f := range []string{"name", "namespace", "generateName", "uid", "resourceVersion"} {
		if v, ok := md[f]; ok && v != nil {
			if _, isString := v.(string); !isString {
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata."+f, "Invalid value: must be a string"))
			}
		}
	}
	if f, ok := md["finalizers"]; ok && f != nil {
		if _, isList := f.([]any); !isList {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers", "Invalid value: must be a list of strings"))
		}
	}
	return causes
}

// validateNoNewFinalizers refuses finalizers added to an object being
// deleted, as kube's ValidateObjectMetaAccessorUpdate: the finalizers
// holding it may only go (a DELETE alone may change the garbage
// collector's).
func validateNoNewFinalizers(obj, old api.Object) []api.StatusCause {
	had := map[string]bool{} // sets, as kube's: linear in a megabyte of finalizers
	for _, f := range finalizers(old) {
		if s, ok := f.(string); ok {
			had[s] = true
		}
	}
	var added []string
	for _, f := range finalizers(obj) {
		if s, ok := f.(string); ok && !had[s] {
			had[s] = true // once
			added = append(added, s)
		}
	}
	if len(added) == 0 {
		return nil
	}
	slices.Sort(added)
	return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueForbidden, "metadata.finalizers",
		fmt.Sprintf("Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers %#v", added))}
}

// jsonValue is v as kube's field errors print a value that is not a
// scalar: in JSON.
func jsonValue(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CheckTypeAndScope fills in apiVersion and kind if absent, rejects ones that
// do not match the URL, and makes metadata.namespace agree with it.
func CheckTypeAndScope(res *resource.Resource, ns string, obj api.Object) error {
	if v, ok := obj["apiVersion"]; ok && v != res.APIVersion() && v != "" {
		return apierror.BadRequest(fmt.Sprintf("the API version in the data (%v) does not match the expected API version (%s)", v, res.APIVersion()))
	}
	if k, ok := obj["kind"]; ok && k != res.Kind && k != "" {
		return apierror.BadRequest(fmt.Sprintf("%v is not the kind expected for %s: expected %s", k, res.GroupResource(), res.Kind))
	}
	obj["apiVersion"], obj["kind"] = res.APIVersion(), res.Kind
	if m, ok := obj["metadata"]; ok && m != nil {
		if _, isMap := m.(map[string]any); !isMap {
			return apierror.BadRequest("metadata must be an object")
		}
	}
	md := obj.EnsureMetadata()
	if !res.Namespaced {
		delete(md, "namespace")
		return nil
	}
	if bodyNS := obj.Namespace(); bodyNS != "" && bodyNS != ns {
		return apierror.BadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	md["namespace"] = ns
	return nil
}

// validate runs every check on an object about to be written; old is the
// stored object on update and nil on create.
func validate(ctx context.Context, res *resource.Resource, obj, old api.Object) error {
	if err := api.CheckObjectDepth(obj); err != nil {
		// Stored, it could not be decoded again (listed, watched, updated).
		return apierror.BadRequest(fmt.Sprintf("%s %s cannot be stored: %v", res.Kind, apierror.Quote(obj.Name()), err))
	}
	if res.Unvalidated {
		return nil
	}
	causes := append(validateName(res, obj), validateMeta(obj)...)
	causes = append(causes, validateOwnerReferences(obj)...)
	causes = append(causes, validateFinalizers(obj)...)
	if res.Validate != nil {
		causes = append(causes, res.Validate(obj)...)
	}
	if old == nil && res.ValidateCreate != nil {
		causes = append(causes, res.ValidateCreate(ctx, obj)...)
	}
	if old != nil && deleting(old) {
		causes = append(causes, validateNoNewFinalizers(obj, old)...)
	}
	if old != nil && res.ValidateUpdate != nil {
		causes = append(causes, res.ValidateUpdate(ctx, obj, old)...)
	}
	if len(causes) > 0 {
		return apierror.Invalid(res.Group, res.Kind, obj.Name(), causes)
	}
	return nil
}
