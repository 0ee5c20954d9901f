package cache

import (
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client"
)

// KeyFunc returns the key an object is stored under.
type KeyFunc[T any] func(obj T) string

// MetaNamespaceKeyFunc is the default key: "namespace/name", or "name" for
// a cluster-scoped object (empty namespace).
func MetaNamespaceKeyFunc[T client.Object](obj T) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// SplitMetaNamespaceKey splits a key made by MetaNamespaceKeyFunc.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	parts := strings.Split(key, "/")
	switch len(parts) {
	case 1:
		return "", parts[0], nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("unexpected key format %q: want namespace/name or name", key)
}
