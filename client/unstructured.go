package client

import (
	"bytes"
	"encoding/json"

	"github.com/listwatch/listwatch/client/api"
)

// Unstructured is any object as its JSON map (an api.Object), for resources
// without a Go type: Resource[Unstructured] reads and writes them. Numbers
// decode as json.Number, so large integers survive a round trip.
type Unstructured api.Object

var _ Object = Unstructured(nil)

// Object returns u as an api.Object, with its accessors and DeepCopy.
func (u Unstructured) Object() api.Object { return api.Object(u) }

// GetName returns metadata.name.
func (u Unstructured) GetName() string { return api.Object(u).Name() }

// GetNamespace returns metadata.namespace.
func (u Unstructured) GetNamespace() string { return api.Object(u).Namespace() }

// GetResourceVersion returns metadata.resourceVersion.
func (u Unstructured) GetResourceVersion() string { return api.Object(u).ResourceVersion() }

// GetLabels returns metadata.labels (nil when there are none).
func (u Unstructured) GetLabels() map[string]string { return api.Object(u).Labels() }

// GetAnnotations returns metadata.annotations (nil when there are none).
func (u Unstructured) GetAnnotations() map[string]string { return api.Object(u).Annotations() }

// GetKind returns kind.
func (u Unstructured) GetKind() string { return api.Object(u).Kind() }

// GetAPIVersion returns apiVersion.
func (u Unstructured) GetAPIVersion() string { return api.Object(u).APIVersion() }

// UnmarshalJSON decodes a JSON object, keeping numbers exact.
func (u *Unstructured) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*u = m
	return nil
}
