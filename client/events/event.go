package events

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// Event types, the only two the API accepts.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// Reference points at the object an event is about (core/v1
// ObjectReference).
type Reference struct {
	APIVersion      string `json:"apiVersion,omitempty"`
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

// Series is how often an event recurred and when it was last seen.
type Series struct {
	Count            int32         `json:"count"`
	LastObservedTime api.MicroTime `json:"lastObservedTime"`
}

// Event is an events.k8s.io/v1 Event, as the recorder writes it.
type Event struct {
	api.TypeMeta        `json:",inline"`
	api.ObjectMeta      `json:"metadata"`
	EventTime           api.MicroTime `json:"eventTime"`
	Series              *Series       `json:"series,omitempty"`
	ReportingController string        `json:"reportingController,omitempty"`
	ReportingInstance   string        `json:"reportingInstance,omitempty"`
	Action              string        `json:"action,omitempty"`
	Reason              string        `json:"reason,omitempty"`
	Regarding           Reference     `json:"regarding"`
	Related             *Reference    `json:"related,omitempty"`
	Note                string        `json:"note,omitempty"`
	Type                string        `json:"type,omitempty"`
}

// CoreEvent is a core/v1 Event with the fields of a new-style event (an
// eventTime, no source, counts or first and last timestamps), which kube
// stores as the same object as an events.k8s.io/v1 Event.
type CoreEvent struct {
	api.TypeMeta       `json:",inline"`
	api.ObjectMeta     `json:"metadata"`
	InvolvedObject     Reference     `json:"involvedObject"`
	Reason             string        `json:"reason,omitempty"`
	Message            string        `json:"message,omitempty"`
	Type               string        `json:"type,omitempty"`
	EventTime          api.MicroTime `json:"eventTime"`
	Series             *Series       `json:"series,omitempty"`
	Action             string        `json:"action,omitempty"`
	Related            *Reference    `json:"related,omitempty"`
	ReportingComponent string        `json:"reportingComponent"`
	ReportingInstance  string        `json:"reportingInstance"`
}

var (
	_ client.Object = (*Event)(nil)
	_ client.Object = (*CoreEvent)(nil)
)

// core is e as a core/v1 Event.
func (e *Event) core() *CoreEvent {
	return &CoreEvent{
		TypeMeta:       api.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     e.ObjectMeta,
		InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note, Type: e.Type,
		EventTime: e.EventTime, Series: e.Series, Action: e.Action, Related: e.Related,
		ReportingComponent: e.ReportingController, ReportingInstance: e.ReportingInstance,
	}
}

// eventName is client-go's: the regarding object's name and the time in
// hexadecimal nanoseconds, unless that is not a valid name.
func eventName(regarding string, now time.Time) string {
	name := regarding + "." + strconv.FormatInt(now.UnixNano(), 16)
	if !isDNSSubdomain(name) {
		name = fmt.Sprintf("event.%x", now.UnixNano())
	}
	return name
}

// dnsSubdomain is a DNS-1123 subdomain, as kube validates object names.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

func isDNSSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomain.MatchString(s) }
