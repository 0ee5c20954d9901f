package pki

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// KubeconfigFile is the admin kubeconfig's name in the data directory.
const KubeconfigFile = "admin.kubeconfig"

// kubeconfig is the subset of kubectl's Config that the admin kubeconfig
// sets; its entries are all named "default", as in k3s's k3s.yaml.
type kubeconfig struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Users          []namedUser    `json:"users"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
}

type namedCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                   string `json:"server"`
		CertificateAuthorityData []byte `json:"certificate-authority-data"`
	} `json:"cluster"`
}

type namedUser struct {
	Name string `json:"name"`
	User struct {
		ClientCertificateData []byte `json:"client-certificate-data"`
		ClientKeyData         []byte `json:"client-key-data"`
	} `json:"user"`
}

type namedContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
}

// WriteKubeconfig writes, 0600, the Kubeconfig for server.
func (p *PKI) WriteKubeconfig(path, server string) error {
	b, err := p.Kubeconfig(server)
	if err != nil {
		return err
	}
	return WriteFile(path, b, 0o600)
}

// Kubeconfig is a kubeconfig that reaches server as the admin, trusting
// the server CA, its certificates embedded.
func (p *PKI) Kubeconfig(server string) ([]byte, error) {
	const name = "default"
	c := namedCluster{Name: name}
	c.Cluster.Server, c.Cluster.CertificateAuthorityData = server, p.ServerCA
	u := namedUser{Name: name}
	u.User.ClientCertificateData, u.User.ClientKeyData = p.AdminCert, p.AdminKey
	x := namedContext{Name: name}
	x.Context.Cluster, x.Context.User = name, name
	b, err := yaml.Marshal(kubeconfig{
		APIVersion: "v1", Kind: "Config", CurrentContext: name,
		Clusters: []namedCluster{c}, Users: []namedUser{u}, Contexts: []namedContext{x},
	})
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	return b, nil
}
