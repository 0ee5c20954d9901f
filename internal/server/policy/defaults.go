package policy

import (
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// Defaults returns kube's default RBAC objects, fresh copies, in the order
// kube-apiserver reconciles them.
func Defaults() []api.Object {
	lines := strings.Split(strings.TrimSuffix(defaultsJSON, "\n"), "\n")
	objs := make([]api.Object, len(lines))
	for i, l := range lines {
		obj, err := api.ParseObject([]byte(l))
		if err != nil {
			panic(fmt.Sprintf("policy: generated object %d: %v", i, err)) // the generator wrote JSON
		}
		objs[i] = obj
	}
	return objs
}
