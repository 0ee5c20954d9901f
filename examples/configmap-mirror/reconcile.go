package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/controller"
	"github.com/listwatch/listwatch/client/events"
)

// The label and annotation that drive the controller, the index of copies
// by source, and the name the controller writes under.
const (
	toLabel        = "mirror.listwatch.io/to"
	fromAnnotation = "mirror.listwatch.io/from"
	mirrorOfIndex  = "mirrorOf"
	fieldManager   = "configmap-mirror"
)

// ConfigMap is the part of a v1 ConfigMap the controller reads and applies.
// Every field is omitempty, so an applied ConfigMap claims only the fields
// it sets.
type ConfigMap struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Data           map[string]string `json:"data,omitempty"`
	BinaryData     map[string][]byte `json:"binaryData,omitempty"`
}

// mirrorOf indexes a copy by the key of its source.
func mirrorOf(cm *ConfigMap) []string {
	if from := cm.Annotations[fromAnnotation]; from != "" {
		return []string{from}
	}
	return nil
}

// requestsFor maps an event on any ConfigMap to the source it concerns: a
// copy's source, or the object itself when it is labelled. The controller
// maps both the old and the new object of an update, so a source whose
// label was removed is reconciled too.
func requestsFor(cm *ConfigMap) []controller.Request {
	if from := cm.Annotations[fromAnnotation]; from != "" {
		ns, name, err := cache.SplitMetaNamespaceKey(from)
		if err != nil {
			return nil
		}
		return []controller.Request{{Namespace: ns, Name: name}}
	}
	if cm.Labels[toLabel] != "" {
		return []controller.Request{controller.RequestFor(cm)}
	}
	return nil
}

// mirror reconciles the copies of one source from the informer's cache.
type mirror struct {
	configMaps *client.Resource[*ConfigMap]
	indexer    *cache.Indexer[*ConfigMap]
	lister     cache.Lister[*ConfigMap]
	recorder   *events.Recorder
}

// reconcile makes the copies of the source req names what the source's
// label says: none, or one in the labelled namespace with the source's
// data. Cached objects are shared with the informer and never modified.
func (m *mirror) reconcile(ctx context.Context, req controller.Request) (controller.Result, error) {
	key := req.String()
	source, ok := m.lister.Namespace(req.Namespace).Get(req.Name)
	want := ""
	if ok && source.DeletionTimestamp == nil && source.Labels[toLabel] != req.Namespace {
		want = source.Labels[toLabel]
	}
	copies, err := m.indexer.ByIndex(mirrorOfIndex, key)
	if err != nil {
		return controller.Result{}, err
	}
	for _, c := range copies {
		if c.Namespace == want {
			continue
		}
		// The UID precondition spares an object re-created under the same
		// name since the cache saw the copy.
		err := m.configMaps.InNamespace(c.Namespace).Delete(ctx, c.Name, client.DeleteOptions{Preconditions: client.Preconditions{UID: c.UID}})
		if err != nil && !client.IsNotFound(err) {
			return controller.Result{}, fmt.Errorf("deleting the copy in %s: %w", c.Namespace, err)
		}
	}
	if want == "" {
		return controller.Result{}, nil
	}
	if err := m.apply(ctx, key, source, want); err != nil {
		m.recorder.Eventf(reference(source), nil, events.Warning, "Failed", "Mirror", "Copying to %s: %v", want, err)
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}

// apply writes the copy of source into namespace ns by server-side apply,
// unless the cached copy is already up to date. The controller owns the
// copy's data, binaryData and its annotation; labels and annotations that
// others set are theirs and survive.
func (m *mirror) apply(ctx context.Context, key string, source *ConfigMap, ns string) error {
	current, exists := m.lister.Namespace(ns).Get(source.Name)
	if exists && current.Annotations[fromAnnotation] != key {
		return fmt.Errorf("%s/%s exists and is not a copy of %s", ns, source.Name, key)
	}
	if exists && maps.Equal(current.Data, source.Data) && maps.EqualFunc(current.BinaryData, source.BinaryData, bytes.Equal) {
		return nil
	}
	desired := &ConfigMap{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: api.ObjectMeta{Name: source.Name, Namespace: ns, Annotations: map[string]string{fromAnnotation: key}},
		Data:       source.Data,
		BinaryData: source.BinaryData,
	}
	// Force: the copy's data is the source's, whoever edited it since.
	if _, err := m.configMaps.InNamespace(ns).Apply(ctx, source.Name, desired, client.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return err
	}
	m.recorder.Eventf(reference(source), nil, events.Normal, "Mirrored", "Mirror", "Copied to %s", ns)
	return nil
}

// reference points an event at cm.
func reference(cm *ConfigMap) events.Reference {
	return events.Reference{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID, ResourceVersion: cm.ResourceVersion}
}
