package api

import "time"

// TypeMeta names an object's kind and API version.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta is metadata every persisted object has (meta/v1 ObjectMeta).
type ObjectMeta struct {
	Name                       string               `json:"name,omitempty"`
	GenerateName               string               `json:"generateName,omitempty"`
	Namespace                  string               `json:"namespace,omitempty"`
	SelfLink                   string               `json:"selfLink,omitempty"`
	UID                        string               `json:"uid,omitempty"`
	ResourceVersion            string               `json:"resourceVersion,omitempty"`
	Generation                 int64                `json:"generation,omitempty"`
	CreationTimestamp          *Time                `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *Time                `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string    `json:"labels,omitempty"`
	Annotations                map[string]string    `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference     `json:"ownerReferences,omitempty"`
	Finalizers                 []string             `json:"finalizers,omitempty"`
	ManagedFields              []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// The getters of ObjectMeta are those of metav1.ObjectMeta, with pointer
// receivers as there: a struct that embeds ObjectMeta (as
// `api.ObjectMeta \`json:"metadata"\``) is, through its pointer, a
// client.Object with no code of its own.

// GetName returns the name.
func (m *ObjectMeta) GetName() string { return m.Name }

// GetGenerateName returns the prefix of a name the server generates.
func (m *ObjectMeta) GetGenerateName() string { return m.GenerateName }

// GetNamespace returns the namespace ("" for cluster-scoped objects).
func (m *ObjectMeta) GetNamespace() string { return m.Namespace }

// GetUID returns the UID.
func (m *ObjectMeta) GetUID() string { return m.UID }

// GetResourceVersion returns the resourceVersion.
func (m *ObjectMeta) GetResourceVersion() string { return m.ResourceVersion }

// GetGeneration returns the generation of the desired state.
func (m *ObjectMeta) GetGeneration() int64 { return m.Generation }

// GetCreationTimestamp returns when the object was created (nil if unset).
func (m *ObjectMeta) GetCreationTimestamp() *Time { return m.CreationTimestamp }

// GetDeletionTimestamp returns when the object's deletion was requested
// (nil if it was not).
func (m *ObjectMeta) GetDeletionTimestamp() *Time { return m.DeletionTimestamp }

// GetLabels returns the labels.
func (m *ObjectMeta) GetLabels() map[string]string { return m.Labels }

// GetAnnotations returns the annotations.
func (m *ObjectMeta) GetAnnotations() map[string]string { return m.Annotations }

// GetOwnerReferences returns the owners.
func (m *ObjectMeta) GetOwnerReferences() []OwnerReference { return m.OwnerReferences }

// GetFinalizers returns the finalizers.
func (m *ObjectMeta) GetFinalizers() []string { return m.Finalizers }

// GetManagedFields returns the managedFields entries.
func (m *ObjectMeta) GetManagedFields() []ManagedFieldsEntry { return m.ManagedFields }

// PartialObjectMetadata is an object's metadata alone (meta.k8s.io/v1
// PartialObjectMetadata), as a server answers a client that accepts
// "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1":
// client-go's metadata client and controller-runtime's metadata-only
// watches read objects this way, so that a cache of, say, Secrets or Pods
// holds names and labels and not their contents.
type PartialObjectMetadata struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
}

// OwnerReference points at an object's owner.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ManagedFieldsEntry records which manager set which fields (server-side apply).
type ManagedFieldsEntry struct {
	Manager     string         `json:"manager,omitempty"`
	Operation   string         `json:"operation,omitempty"`
	APIVersion  string         `json:"apiVersion,omitempty"`
	Time        *Time          `json:"time,omitempty"`
	FieldsType  string         `json:"fieldsType,omitempty"`
	FieldsV1    map[string]any `json:"fieldsV1,omitempty"`
	Subresource string         `json:"subresource,omitempty"`
}

// ListMeta is the metadata of a list (meta/v1 ListMeta).
type ListMeta struct {
	SelfLink           string `json:"selfLink,omitempty"`
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// Time is a timestamp serialised as RFC 3339 with second precision, as
// meta/v1 Time is.
type Time struct{ time.Time }

// NewTime returns t truncated to seconds, in UTC.
func NewTime(t time.Time) *Time { return &Time{t.UTC().Truncate(time.Second)} }

// MarshalJSON writes the RFC 3339 form, or null for the zero time.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format(time.RFC3339) + `"`), nil
}

// UnmarshalJSON reads the RFC 3339 form or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	parsed, err := time.Parse(`"`+time.RFC3339+`"`, string(b))
	if err != nil {
		return err
	}
	t.Time = parsed.Local()
	return nil
}

// Well-known annotation and label keys.
const (
	// InitialEventsEndAnnotation marks the BOOKMARK that ends a watch's
	// initial events (sendInitialEvents=true).
	InitialEventsEndAnnotation = "k8s.io/initial-events-end"
)

// MicroTime is a timestamp serialised as RFC 3339 with microsecond
// precision, as meta/v1 MicroTime is (a Lease's renewTime, an Event's
// eventTime).
type MicroTime struct{ time.Time }

// rfc3339Micro is meta/v1's RFC3339Micro: always six fractional digits.
const rfc3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// NewMicroTime returns t truncated to microseconds, in UTC.
func NewMicroTime(t time.Time) *MicroTime { return &MicroTime{t.UTC().Truncate(time.Microsecond)} }

// MarshalJSON writes the RFC 3339 form with microseconds, or null for the
// zero time.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format(rfc3339Micro) + `"`), nil
}

// UnmarshalJSON reads the form MarshalJSON writes, or null.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	parsed, err := time.Parse(`"`+rfc3339Micro+`"`, string(b))
	if err != nil {
		return err
	}
	t.Time = parsed.Local()
	return nil
}
