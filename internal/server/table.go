package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage"
)

// defaultColumns are used for resources that define none: Created At, as
// kube-apiserver's default table convertor.
var defaultColumns = []resource.Column{{
	TableColumnDefinition: api.TableColumnDefinition{Name: "Created At", Type: "date", Description: resource.CreationTimestampDescription},
	Cell:                  func(o api.Object) any { return o.MetaString("creationTimestamp") },
}}

// toTable converts objects to the Table kubectl prints. includeObject is
// "None", "Object" or (default) "Metadata".
func toTable(res *resource.Resource, objs []api.Object, includeObject string) api.Table {
	return tableOf(res, objs, func(i int) json.RawMessage { return rowObject(objs[i], includeObject) })
}

// tableOf is toTable with each row's object (rowObject's) from row.
func tableOf(res *resource.Resource, objs []api.Object, row func(i int) json.RawMessage) api.Table {
	cols := res.Columns
	if len(cols) == 0 {
		cols = defaultColumns
	}
	t := api.Table{
		TypeMeta: api.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		Rows:     make([]api.TableRow, 0, len(objs)),
	}
	named := res.NameColumn
	if !named {
		t.ColumnDefinitions = append(t.ColumnDefinitions, resource.NameDefinition)
	}
	for _, c := range cols {
		t.ColumnDefinitions = append(t.ColumnDefinitions, c.TableColumnDefinition)
	}
	for i, obj := range objs {
		r := api.TableRow{Object: row(i), Cells: make([]any, 0, len(t.ColumnDefinitions))}
		if !named {
			r.Cells = append(r.Cells, obj.Name())
		}
		if res.StoredForm != nil {
			obj = res.StoredForm(obj)
		}
		for _, c := range cols {
			r.Cells = append(r.Cells, c.Cell(obj))
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// rowObject is what a row carries of its object.
func rowObject(obj api.Object, includeObject string) json.RawMessage {
	var v any
	switch includeObject {
	case "None":
		return json.RawMessage("null") // kube's empty RawExtension, still sent
	case "Object":
		v = obj
	default:
		v = partialObject(metaV1, obj)
	}
	b, _ := json.Marshal(v)
	return b
}

// writeCachedTable writes objects of the watch cache as a Table: the rows'
// objects made from their cached JSON, not encoded again, and a built-in
// kind's objects decoded without their managedFields, which its printers
// never read (a custom resource's columns are JSONPaths, which may).
func (q *request) writeCachedTable(objs []*watchcache.Object, rev int64) {
	items := make([]api.Object, len(objs))
	for i, o := range objs {
		var err error
		if b, ok := registry.WithoutManagedFields(o.JSON); ok && q.res.Owner == "" {
			items[i], err = cacheDecode(q.r.Context(), q.res, storage.KV{Key: o.Key, Value: b, ModRevision: o.Rev})
		} else {
			items[i], err = o.Obj()
		}
		if err != nil {
			q.fail(err)
			return
		}
	}
	include := q.r.URL.Query().Get("includeObject")
	t := tableOf(q.res, items, func(i int) json.RawMessage { return cachedRowObject(objs[i], items[i], include) })
	t.ListMeta = api.ListMeta{ResourceVersion: formatRV(rev)}
	writeAs(q.w, http.StatusOK, q.out, t)
}

// cachedRowObject is rowObject of obj, decoded from o, made from o's JSON
// (json.Marshal's, as every cached object's) without encoding obj again.
func cachedRowObject(o *watchcache.Object, obj api.Object, includeObject string) json.RawMessage {
	switch includeObject {
	case "None":
	case "Object":
		return o.JSON
	default:
		if b, ok := partialSplice(metaV1, o.JSON); ok {
			return b
		}
	}
	return rowObject(obj, includeObject)
}

// printStored gives the resources that print their stored form a way to
// read it: the object of their Storage's watch cache, if it holds the
// object at the same revision (their cache and its are fed by the same
// writes); else the object as served.
func (s *Server) printStored(rs []*resource.Resource) {
	for _, r := range rs {
		if !r.PrintStored || r.Storage == nil {
			continue
		}
		r.StoredForm = func(obj api.Object) api.Object {
			c := s.caches.get(r.Storage)
			if c == nil {
				return obj
			}
			o := c.Get(r.Storage.Key(obj.Namespace(), obj.Name()))
			if o == nil || strconv.FormatInt(o.Rev, 10) != obj.ResourceVersion() {
				return obj
			}
			if stored, err := o.Obj(); err == nil {
				return stored
			}
			return obj
		}
	}
}
