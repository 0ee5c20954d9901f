package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// coreEvents is core/v1 events, with kube's field selectors
// (EventToSelectableFields: "source" is the source's component, else the
// reporting controller).
func coreEvents() *Resource {
	return &Resource{
		Version: "v1", Plural: "events",
		CreateOnUpdate: true,
		// Any name a path can hold (the legacy recorder names events after
		// their objects, "system:controller.<hex>" too), and a core/v1
		// request's event meets the legacy rules only.
		NameRule: api.PathSegmentNameErrors,
		Validate: func(o api.Object) []api.StatusCause { return validateEventV1(eventFromCore(o)) },
		Columns:  eventColumns(), NameColumn: true,
		FieldPaths: map[string][]string{
			"involvedObject.kind":            {"involvedObject", "kind"},
			"involvedObject.namespace":       {"involvedObject", "namespace"},
			"involvedObject.name":            {"involvedObject", "name"},
			"involvedObject.uid":             {"involvedObject", "uid"},
			"involvedObject.apiVersion":      {"involvedObject", "apiVersion"},
			"involvedObject.resourceVersion": {"involvedObject", "resourceVersion"},
			"involvedObject.fieldPath":       {"involvedObject", "fieldPath"},
			"reportingComponent":             {"reportingComponent"},
			"reason":                         {"reason"},
			"type":                           {"type"},
			"source":                         {"source", "component"},
		},
		FieldFallbacks: map[string]string{"source": "reportingComponent"},
	}
}

// eventColumns are kube's event printer's columns (printEvent, the wide
// ones for kubectl -o wide), the object's name last instead of first.
func eventColumns() []Column {
	name := Column{TableColumnDefinition: NameDefinition, Cell: func(o api.Object) any { return o.Name() }}
	return []Column{
		column("Last Seen", "string", "", "The time at which the most recent occurrence of this event was recorded.", func(o api.Object) any { return lastSeen(o) }),
		column("Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future", stringCell("type")),
		column("Reason", "string", "", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", stringCell("reason")),
		column("Object", "string", "", "The object that this event is about.", eventObject),
		wide(column("Subobject", "string", "", doc("core.v1.ObjectReference", "fieldPath"), stringCell("involvedObject", "fieldPath"))),
		wide(column("Source", "string", "", "The component reporting this event. Should be a short machine understandable string.", eventSource)),
		column("Message", "string", "", "A human-readable description of the status of this operation.", func(o api.Object) any { return strings.TrimSpace(pathString("message")(o)) }),
		wide(column("First Seen", "string", "", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)", func(o api.Object) any { return firstSeen(o) })),
		wide(column("Count", "string", "", "The number of times this event has occurred.", eventCount)),
		wide(name),
	}
}

// firstSeen is firstTimestamp's age, else eventTime's.
func firstSeen(o api.Object) string {
	if s := pathString("firstTimestamp")(o); s != "" {
		return age(s)
	}
	return age(pathString("eventTime")(o))
}

// lastSeen is the series' last observation's age, else lastTimestamp's,
// else the first seen.
func lastSeen(o api.Object) string {
	if Path(o, "series") != nil {
		return age(pathString("series", "lastObservedTime")(o))
	}
	if s := pathString("lastTimestamp")(o); s != "" {
		return age(s)
	}
	return firstSeen(o)
}

// age is kube's translateTimestampSince of an RFC 3339 time (with or
// without fractional seconds): "<unknown>" when unset.
func age(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "<unknown>"
	}
	return HumanDuration(time.Since(t))
}

// eventCount is the series' count, else count, else 1 (a singleton event
// of the new API has none).
func eventCount(o api.Object) any {
	series := Path(o, "series")
	v := Path(o, "count")
	if series != nil {
		v = Path(o, "series", "count")
	}
	n, _ := int32Value(v)
	if n == 0 && series == nil {
		n = 1
	}
	return n
}

func eventObject(o api.Object) any {
	kind, name := lower(pathString("involvedObject", "kind")(o)), pathString("involvedObject", "name")(o)
	if name == "" {
		return kind
	}
	return kind + "/" + name
}

// eventSource is kube's formatEventSource: component (else the reporting
// controller), then ", " and the host (else the reporting instance).
func eventSource(o api.Object) any {
	component, instance := pathString("source", "component")(o), pathString("source", "host")(o)
	if component == "" {
		component = pathString("reportingComponent")(o)
	}
	if instance == "" {
		instance = pathString("reportingInstance")(o)
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

// eventsV1 is events.k8s.io/v1 events, served from core/v1 events' store as
// kube-apiserver cohabits them: one object under core's key, written as a
// core/v1 Event and read through either API, renamed by eventRenames
// (kube's pkg/apis/events/v1 conversion). Its watch cache is its own, fed by
// the same key prefix, so that an event written through one API reaches the
// watchers of both, each in its own form.
func eventsV1(core *Resource) *Resource {
	return &Resource{
		Group: "events.k8s.io", Version: "v1", Plural: "events",
		CreateOnUpdate: true,
		Storage:        core, FromStorage: infallible(eventFromCore), ToStorage: infallible(eventToCore), NameRule: api.PathSegmentNameErrors,
		Validate: validateEventV1, ValidateCreate: validateEventV1Create, ValidateUpdate: validateEventV1Update,
		// kube prints both APIs' events with the one printer of the internal type.
		Columns: convertedColumns(core.Columns, eventToCore), NameColumn: true,
		// kube's field label conversion for events.k8s.io/v1 (AddFieldLabelConversionsForEvent).
		FieldPaths: map[string][]string{
			"regarding.kind":            {"regarding", "kind"},
			"regarding.namespace":       {"regarding", "namespace"},
			"regarding.name":            {"regarding", "name"},
			"regarding.uid":             {"regarding", "uid"},
			"regarding.apiVersion":      {"regarding", "apiVersion"},
			"regarding.resourceVersion": {"regarding", "resourceVersion"},
			"regarding.fieldPath":       {"regarding", "fieldPath"},
			"reason":                    {"reason"},
			"reportingController":       {"reportingController"},
			"type":                      {"type"},
		},
	}
}

// eventRenames pairs the core/v1 Event fields with their events.k8s.io/v1
// names; the other fields have one name in both.
var eventRenames = [][2]string{
	{"involvedObject", "regarding"},
	{"message", "note"},
	{"source", "deprecatedSource"},
	{"firstTimestamp", "deprecatedFirstTimestamp"},
	{"lastTimestamp", "deprecatedLastTimestamp"},
	{"count", "deprecatedCount"},
	{"reportingComponent", "reportingController"},
}

func eventFromCore(o api.Object) api.Object { return renameEvent(o, "events.k8s.io/v1", 0) }
func eventToCore(o api.Object) api.Object   { return renameEvent(o, "v1", 1) }

// infallible is conv as FromStorage and ToStorage are typed.
func infallible(conv func(api.Object) api.Object) func(context.Context, api.Object) (api.Object, error) {
	return func(_ context.Context, o api.Object) (api.Object, error) { return conv(o), nil }
}

// renameEvent returns o with apiVersion and the fields of side from (0 core,
// 1 events.k8s.io) renamed to the other side's names.
func renameEvent(o api.Object, apiVersion string, from int) api.Object {
	out := make(api.Object, len(o))
	for k, v := range o {
		out[k] = v
	}
	for _, r := range eventRenames {
		if v, ok := out[r[from]]; ok {
			delete(out, r[from])
			out[r[1-from]] = v
		}
	}
	out["apiVersion"] = apiVersion
	return out
}

// convertedColumns are columns whose cells read an object converted by conv.
func convertedColumns(cols []Column, conv func(api.Object) api.Object) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		cell := c.Cell
		out[i] = c
		out[i].Cell = func(o api.Object) any { return cell(conv(o)) }
	}
	return out
}

// kube's limits on events' strings (pkg/apis/core/validation/events.go).
const (
	eventReportingInstanceMax = 128
	eventActionMax            = 128
	eventReasonMax            = 128
	eventNoteMax              = 1024
)

// validateEventV1 is the part of kube's ValidateEventCreate and
// ValidateEventUpdate through events.k8s.io/v1 that every write meets: the
// legacy rules. Fields are named as kube names them, by the internal (core)
// type's names ("message" for note). What ValidateObjectMeta checks the
// registry checks for every kind.
func validateEventV1(o api.Object) []api.StatusCause {
	c := &checker{}
	c.legacyEvent(o)
	return c.causes
}

// validateEventV1Create is the rest of kube's ValidateEventCreate through
// events.k8s.io/v1: the strict rules only new events meet, a name that is
// a DNS subdomain first.
func validateEventV1Create(_ context.Context, o api.Object) []api.StatusCause {
	c := &checker{}
	for _, msg := range DNS1123Subdomain(o.Name()) {
		c.invalid("metadata.name", o.Name(), msg)
	}
	c.eventSeries(o)
	if isEmpty(o["eventTime"]) {
		c.required("eventTime", "")
	}
	if t := c.string(o["type"], "type"); t != "Normal" && t != "Warning" {
		c.invalid("type", "", "has invalid value: "+t)
	}
	for _, f := range []struct{ v1, core string }{
		{"deprecatedFirstTimestamp", "firstTimestamp"},
		{"deprecatedLastTimestamp", "lastTimestamp"},
	} {
		if !isEmpty(o[f.v1]) {
			c.invalid(f.core, "", "needs to be unset")
		}
	}
	if n, ok := int32Value(o["deprecatedCount"]); o["deprecatedCount"] != nil && (!ok || n != 0) {
		c.invalid("count", "", "needs to be unset")
	}
	src := c.object(o["deprecatedSource"], "source")
	if !isEmpty(src["component"]) || !isEmpty(src["host"]) {
		c.invalid("source", "", "needs to be unset")
	}
	return c.causes
}

// legacyEvent is kube's legacyValidateEvent. The namespace's format is
// checked by the registry.
func (c *checker) legacyEvent(o api.Object) {
	regarding := c.object(o["regarding"], "involvedObject")
	ns, rns := o.Namespace(), c.string(regarding["namespace"], "involvedObject.namespace")
	if isEmpty(o["eventTime"]) {
		// An event of the older kind: its namespace is its object's (none
		// or "default" for a cluster-scoped object); nothing else is checked.
		if rns == "" && ns != "" && ns != "default" || rns != "" && ns != rns {
			c.invalid("involvedObject.namespace", rns, "does not match event.namespace")
		}
		return
	}
	if rns == "" && ns != "default" && ns != "kube-system" {
		c.invalid("involvedObject.namespace", rns, "does not match event.namespace")
	}
	controller := c.string(o["reportingController"], "reportingController")
	if controller == "" {
		c.required("reportingController", "")
	}
	for _, msg := range labelKey(controller) {
		c.invalid("reportingController", controller, msg)
	}
	for _, f := range []struct {
		v1, core string
		max      int
		required bool
	}{
		{"reportingInstance", "reportingInstance", eventReportingInstanceMax, true},
		{"action", "action", eventActionMax, true},
		{"reason", "reason", eventReasonMax, true},
		{"note", "message", eventNoteMax, false},
	} {
		s := c.string(o[f.v1], f.core)
		if f.required && s == "" {
			c.required(f.core, "")
		}
		if len(s) > f.max {
			c.invalid(f.core, "", fmt.Sprintf("can have at most %d characters", f.max))
		}
	}
}

// eventSeries is kube's validateV1EventSeries.
func (c *checker) eventSeries(o api.Object) {
	series := c.object(o["series"], "series")
	if series == nil {
		return
	}
	if n, _ := int32Value(series["count"]); n < 2 {
		c.invalid("series.count", "", "should be at least 2")
	}
	if isEmpty(series["lastObservedTime"]) {
		c.required("series.lastObservedTime", "")
	}
}

// validateEventV1Update is the rest of kube's ValidateEventUpdate through
// events.k8s.io/v1 (Validate ran the legacy rules): the series checked when
// it changed, and every field but series and metadata immutable.
func validateEventV1Update(_ context.Context, o, old api.Object) []api.StatusCause {
	c := &checker{}
	if !sameJSON(o["series"], old["series"]) {
		c.eventSeries(o)
	}
	for _, f := range []struct{ v1, core string }{
		{"regarding", "involvedObject"}, {"reason", "reason"}, {"note", "message"},
		{"deprecatedSource", "source"}, {"deprecatedFirstTimestamp", "firstTimestamp"},
		{"deprecatedLastTimestamp", "lastTimestamp"}, {"deprecatedCount", "count"},
		{"type", "type"}, {"eventTime", "eventTime"}, {"action", "action"}, {"related", "related"},
		{"reportingController", "reportingController"}, {"reportingInstance", "reportingInstance"},
	} {
		// "" is absent, as in kube's Go type (v1 omits it, core does not)
		if !sameJSON(o[f.v1], old[f.v1]) && !(isEmpty(o[f.v1]) && isEmpty(old[f.v1])) {
			c.invalid(f.core, o[f.v1], "field is immutable")
		}
	}
	return c.causes
}

// sameJSON reports whether a and b encode alike, so that a number decoded
// from JSON (json.Number) equals the one a protobuf body gave (float64).
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
