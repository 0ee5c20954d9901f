package api

import "encoding/json"

// WatchEvent is one event of a watch stream (meta/v1 WatchEvent).
type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// Watch event types.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
	Error    = "ERROR"
)

// List is a list of objects of one kind (e.g. ConfigMapList).
type List struct {
	TypeMeta `json:",inline"`
	ListMeta ListMeta          `json:"metadata"`
	Items    []json.RawMessage `json:"items"`
}
