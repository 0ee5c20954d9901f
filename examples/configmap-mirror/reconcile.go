package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/cache"
	"github.com/listwatch/listwatch/client"
)

// reconcile makes the copies of source key what the source says: they are
// found through the cache's index and created, updated or deleted on the
// server.
func (ctl *controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	source, ok := ctl.lister.Namespace(ns).Get(name)
	want := ""
	if ok {
		want = source.Metadata.Labels[toLabel]
	}
	copies, err := ctl.indexer.ByIndex(mirrorOfIndex, key)
	if err != nil {
		return err
	}
	for _, m := range copies {
		if m.Metadata.Namespace != want {
			if err := ctl.configMaps.InNamespace(m.Metadata.Namespace).Delete(ctx, m.Metadata.Name, client.DeleteOptions{}); err != nil && !client.IsNotFound(err) {
				return fmt.Errorf("deleting stale mirror %s/%s: %w", m.Metadata.Namespace, m.Metadata.Name, err)
			}
		}
	}
	if want == "" || want == ns {
		return nil
	}
	return ctl.ensureMirror(ctx, key, source, want)
}

// ensureMirror creates or updates the copy of source in namespace ns. The
// cached objects are not modified: the copy is built anew.
func (ctl *controller) ensureMirror(ctx context.Context, key string, source *ConfigMap, ns string) error {
	mirrors := ctl.configMaps.InNamespace(ns)
	current, exists := ctl.lister.Namespace(ns).Get(source.Metadata.Name)
	if exists && current.Metadata.Annotations[fromAnnotation] != key {
		return fmt.Errorf("%s/%s exists and is not a mirror of %s: leaving it alone", ns, source.Metadata.Name, key)
	}
	if exists && maps.Equal(current.Data, source.Data) {
		return nil
	}
	mirror := &ConfigMap{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Metadata: api.ObjectMeta{
			Name:        source.Metadata.Name,
			Namespace:   ns,
			Annotations: map[string]string{fromAnnotation: key},
		},
		Data: maps.Clone(source.Data),
	}
	if !exists {
		if _, err := mirrors.Create(ctx, mirror, client.WriteOptions{}); err != nil {
			return fmt.Errorf("creating mirror of %s in %s: %w", key, ns, err)
		}
		return nil
	}
	mirror.Metadata.ResourceVersion = current.Metadata.ResourceVersion // update only what we saw
	if _, err := mirrors.Update(ctx, mirror, client.WriteOptions{}); err != nil {
		return fmt.Errorf("updating mirror of %s in %s: %w", key, ns, err)
	}
	return nil
}
