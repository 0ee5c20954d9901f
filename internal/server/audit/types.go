// Package audit is kube-apiserver's audit log: audit.k8s.io/v1 Events, one
// JSON line each, written at the stages of a request its Policy selects,
// to a file that rotates as kube's (--audit-log-*), or to standard output.
//
// The server builds the events (internal/server/audit.go); this package
// holds their wire types, the policy (its file, validation and rules), and
// the Log they are written to. An event is bounded in bytes: past the
// Log's MaxEventBytes its request and response objects are dropped (as
// kube's truncating backend does), and one still too large is dropped.
//
// # Concurrency
//
// A Log is safe for concurrent use. Each request encodes its own events;
// one goroutine, started by OpenLog and stopped by Close, writes them.
package audit

import (
	"encoding/json"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// Level is how much of a request an event records.
type Level string

// The levels, each recording what the one before it does and more.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

var levelOrder = map[Level]int{LevelNone: 0, LevelMetadata: 1, LevelRequest: 2, LevelRequestResponse: 3}

// AtLeast says whether l records at least what o does.
func (l Level) AtLeast(o Level) bool { return levelOrder[l] >= levelOrder[o] }

// Stage is the point of a request at which an event is written.
type Stage string

// The stages, as kube's.
const (
	// StageRequestReceived: once the request is authenticated, before it
	// is handled.
	StageRequestReceived Stage = "RequestReceived"
	// StageResponseStarted: once a long-running request (a watch) has
	// sent its response's headers.
	StageResponseStarted Stage = "ResponseStarted"
	// StageResponseComplete: once the response has been sent.
	StageResponseComplete Stage = "ResponseComplete"
	// StagePanic: the handler panicked.
	StagePanic Stage = "Panic"
)

// Annotations the server and the Log set on events, with kube's keys.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
	// TruncatedAnnotation says the event's request and response objects
	// were left out to keep it within MaxEventBytes.
	TruncatedAnnotation = "audit.k8s.io/truncated"
)

// HeaderAuditID carries a request's audit ID, the client's if it sent
// one, in the response.
const HeaderAuditID = "Audit-ID"

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    Level             `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    Stage             `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	ImpersonatedUser         *UserInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus           *api.Status       `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp MicroTime         `json:"requestReceivedTimestamp"`
	StageTimestamp           MicroTime         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// UserInfo is authentication.k8s.io/v1 UserInfo.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectReference is what a resource request is about.
type ObjectReference struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// MicroTime is meta/v1 MicroTime: RFC 3339 in UTC with microseconds.
type MicroTime time.Time

// MarshalJSON implements json.Marshaler.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(`"2006-01-02T15:04:05.000000Z"`))
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	*t = MicroTime(v)
	return err
}

// Redacted says whether requests of a resource carry secrets in their
// bodies, which are never logged, whatever the policy's level: a Secret's
// data, a ServiceAccount token issued (serviceaccounts/token), a token
// under review (tokenreviews). Kube leaves this to the policy (its
// examples log them at Metadata); here a policy cannot turn it off.
func Redacted(group, resource, subresource string) bool {
	switch {
	case group == "" && resource == "secrets":
		return true
	case group == "" && resource == "serviceaccounts" && subresource == "token":
		return true
	case group == "authentication.k8s.io" && resource == "tokenreviews":
		return true
	}
	return false
}
