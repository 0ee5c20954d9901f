package api

// APIVersions lists the versions of the core group (/api).
type APIVersions struct {
	TypeMeta                   `json:",inline"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

// ServerAddressByClientCIDR tells clients in a CIDR which address to use.
type ServerAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

// APIGroupList lists the named groups (/apis).
type APIGroupList struct {
	TypeMeta `json:",inline"`
	Groups   []APIGroup `json:"groups"`
}

// APIGroup is one named group and its versions (/apis/<group>).
type APIGroup struct {
	TypeMeta         `json:",inline"`
	Name             string                     `json:"name"`
	Versions         []GroupVersionForDiscovery `json:"versions"`
	PreferredVersion GroupVersionForDiscovery   `json:"preferredVersion"`
}

// GroupVersionForDiscovery names one version of a group.
type GroupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// APIResourceList lists the resources of one group version (/api/v1, /apis/<g>/<v>).
type APIResourceList struct {
	TypeMeta     `json:",inline"`
	GroupVersion string        `json:"groupVersion"`
	APIResources []APIResource `json:"resources"`
}

// APIResource describes one resource in legacy discovery.
type APIResource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Group              string   `json:"group,omitempty"`
	Version            string   `json:"version,omitempty"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
}

// APIGroupDiscoveryList is aggregated discovery v2 (apidiscovery.k8s.io/v2).
type APIGroupDiscoveryList struct {
	TypeMeta `json:",inline"`
	ListMeta ListMeta            `json:"metadata"`
	Items    []APIGroupDiscovery `json:"items"`
}

// APIGroupDiscovery is one group in aggregated discovery; metadata.name is the group.
type APIGroupDiscovery struct {
	TypeMeta   `json:",inline"`
	ObjectMeta ObjectMeta            `json:"metadata"`
	Versions   []APIVersionDiscovery `json:"versions"`
}

// APIVersionDiscovery is one version of a group in aggregated discovery.
type APIVersionDiscovery struct {
	Version   string                 `json:"version"`
	Resources []APIResourceDiscovery `json:"resources"`
	Freshness string                 `json:"freshness,omitempty"`
}

// APIResourceDiscovery is one resource in aggregated discovery.
type APIResourceDiscovery struct {
	Resource         string                    `json:"resource"`
	ResponseKind     *GroupVersionKind         `json:"responseKind"`
	Scope            string                    `json:"scope"`
	SingularResource string                    `json:"singularResource"`
	Verbs            []string                  `json:"verbs"`
	ShortNames       []string                  `json:"shortNames,omitempty"`
	Categories       []string                  `json:"categories,omitempty"`
	Subresources     []APISubresourceDiscovery `json:"subresources,omitempty"`
}

// APISubresourceDiscovery is one subresource in aggregated discovery.
type APISubresourceDiscovery struct {
	Subresource  string            `json:"subresource"`
	ResponseKind *GroupVersionKind `json:"responseKind,omitempty"`
	Verbs        []string          `json:"verbs"`
}

// GroupVersionKind names a kind in a group version.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}
