package resource

import (
	"strings"

	"github.com/listwatch/listwatch/internal/kubespec"
)

// Definition names of the shared meta/v1 types, as kube's OpenAPI
// documents name them.
const (
	metaPrefix     = "io.k8s.apimachinery.pkg.apis.meta.v1."
	ObjectMetaName = metaPrefix + "ObjectMeta"
	ListMetaName   = metaPrefix + "ListMeta"
	StatusName     = metaPrefix + "Status"
	PatchName      = metaPrefix + "Patch"
	DeleteOptsName = metaPrefix + "DeleteOptions"
)

// DefinitionName is the name of the definition of a kind: kube's for the
// kinds it publishes ("io.k8s.api.core.v1.ConfigMap"), else the reversed
// group ("com.example.stable.v1.CronTab" for stable.example.com), as kube
// names custom resources' definitions.
func DefinitionName(group, version, kind string) string {
	if name := kubespec.DefinitionName(group, version, kind); name != "" {
		return name
	}
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + version + "." + kind
}

// Definitions returns kube's published definitions, by name: those the
// built-in kinds' schemas reference. The map is new; its values are shared
// and must not be modified.
func Definitions() map[string]map[string]any { return kubespec.Definitions() }
