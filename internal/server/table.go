package server

import (
	"encoding/json"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/resource"
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
	for _, obj := range objs {
		row := api.TableRow{Object: rowObject(obj, includeObject)}
		if !named {
			row.Cells = append(row.Cells, obj.Name())
		}
		for _, c := range cols {
			row.Cells = append(row.Cells, c.Cell(obj))
		}
		t.Rows = append(t.Rows, row)
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
