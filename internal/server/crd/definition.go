package crd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// Group, Version and Plural of the CustomResourceDefinition resource.
const (
	Group   = "apiextensions.k8s.io"
	Version = "v1"
	Plural  = "customresourcedefinitions"
)

// definition is the part of a CustomResourceDefinition the server acts on.
type definition struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec spec `json:"spec"`
}

type spec struct {
	Group      string      `json:"group"`
	Names      names       `json:"names"`
	Scope      string      `json:"scope"`
	Versions   []version   `json:"versions"`
	Conversion *conversion `json:"conversion"`
}

type names struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

type version struct {
	Name    string `json:"name"`
	Served  bool   `json:"served"`
	Storage bool   `json:"storage"`
	Schema  *struct {
		OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
	} `json:"schema"`
	Subresources *struct {
		Status *struct{} `json:"status"`
		Scale  *scale    `json:"scale"`
	} `json:"subresources"`
	AdditionalPrinterColumns []printerColumn   `json:"additionalPrinterColumns"`
	SelectableFields         []selectableField `json:"selectableFields"`
}

type selectableField struct {
	JSONPath string `json:"jsonPath"`
}

type printerColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
	JSONPath    string `json:"jsonPath"`
}

// decode reads a CustomResourceDefinition object.
func decode(obj api.Object) (*definition, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding CustomResourceDefinition: %w", err)
	}
	var d definition
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("decoding CustomResourceDefinition %s: %w", obj.Name(), err)
	}
	d.Spec.Names = d.Spec.Names.withDefaults()
	return &d, nil
}

// withDefaults fills singular and listKind as kube's defaulting does.
func (n names) withDefaults() names {
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" && n.Kind != "" {
		n.ListKind = n.Kind + "List"
	}
	return n
}

// storageVersion returns the version marked storage, or nil.
func (d *definition) storageVersion() *version {
	for i := range d.Spec.Versions {
		if d.Spec.Versions[i].Storage {
			return &d.Spec.Versions[i]
		}
	}
	return nil
}

// hasStatus reports whether the version has the status subresource.
func (v *version) hasStatus() bool { return v.Subresources != nil && v.Subresources.Status != nil }

// rawSchema returns the version's openAPIV3Schema, or nil.
func (v *version) rawSchema() json.RawMessage {
	if v.Schema == nil || len(v.Schema.OpenAPIV3Schema) == 0 || string(v.Schema.OpenAPIV3Schema) == "null" {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}
