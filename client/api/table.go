package api

import "encoding/json"

// Table is the tabular form of a list or object that kubectl asks for
// (meta.k8s.io/v1 Table).
type Table struct {
	TypeMeta          `json:",inline"`
	ListMeta          ListMeta                `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition describes one column of a Table.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

// TableRow is one object's row: its cells and, by default, its metadata.
type TableRow struct {
	Cells  []any           `json:"cells"`
	Object json.RawMessage `json:"object,omitempty"`
}
