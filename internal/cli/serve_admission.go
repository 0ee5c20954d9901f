package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/internal/server/admission/podsecurity"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// admissionSettings are what listwatch reads of kube's
// AdmissionConfiguration (--admission-control-config-file): the
// kubeConfigFile of the WebhookAdmissionConfiguration of its
// ValidatingAdmissionWebhook ([0]) and MutatingAdmissionWebhook ([1])
// plugins, the PodSecurity plugin's PodSecurityConfiguration and the
// ResourceQuota plugin's limitedResources. Other plugins' configurations
// are ignored.
type admissionSettings struct {
	webhookCredentials [2]*webhookclient.Kubeconfig
	podSecurity        *podsecurity.Config
	quotaLimited       []quota.Limited
}

// readAdmissionConfig reads --admission-control-config-file.
func readAdmissionConfig(path string) (out admissionSettings, err error) {
	configs, err := pluginConfigs(path)
	if err != nil {
		return out, err
	}
	if c, ok := configs["PodSecurity"]; ok {
		if out.podSecurity, err = podsecurity.LoadConfig(c); err != nil {
			return out, fmt.Errorf("%s: plugin PodSecurity: %w", path, err)
		}
	}
	if c, ok := configs["ResourceQuota"]; ok {
		if out.quotaLimited, err = quota.LoadConfig(c); err != nil {
			return out, fmt.Errorf("%s: plugin ResourceQuota: %w", path, err)
		}
	}
	for name, i := range map[string]int{"ValidatingAdmissionWebhook": 0, "MutatingAdmissionWebhook": 1} {
		c, ok := configs[name]
		if !ok {
			continue
		}
		var wc struct {
			Kind           string `json:"kind"`
			KubeConfigFile string `json:"kubeConfigFile"`
		}
		if err := yaml.Unmarshal(c, &wc); err != nil {
			return out, fmt.Errorf("%s: plugin %s: %w", path, name, err)
		}
		if wc.KubeConfigFile == "" {
			continue
		}
		if !filepath.IsAbs(wc.KubeConfigFile) {
			return out, fmt.Errorf("%s: plugin %s: kubeConfigFile: Invalid value: %q: must be an absolute file path", path, name, wc.KubeConfigFile)
		}
		if out.webhookCredentials[i], err = webhookclient.LoadKubeconfig(wc.KubeConfigFile); err != nil {
			return out, fmt.Errorf("%s: plugin %s: %w", path, name, err)
		}
	}
	return out, nil
}

// pluginConfigs are the configurations of an AdmissionConfiguration's
// plugins by name, given inline or in the file a plugin's path names
// (relative to the configuration's directory), as kube-apiserver reads
// them; none if path is "".
func pluginConfigs(path string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if path == "" {
		return out, nil
	}
	var cfg struct {
		Kind    string `json:"kind"`
		Plugins []struct {
			Name          string          `json:"name"`
			Path          string          `json:"path"`
			Configuration json.RawMessage `json:"configuration"`
		} `json:"plugins"`
	}
	if err := readYAML(path, &cfg); err != nil {
		return nil, err
	}
	if cfg.Kind != "AdmissionConfiguration" {
		return nil, fmt.Errorf("%s: kind %q, want AdmissionConfiguration", path, cfg.Kind)
	}
	for _, p := range cfg.Plugins {
		switch {
		case p.Path != "":
			file := p.Path
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(path), file)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("%s: plugin %s: %w", path, p.Name, err)
			}
			out[p.Name] = b
		case len(p.Configuration) > 0:
			out[p.Name] = p.Configuration
		}
	}
	return out, nil
}

// readYAML decodes a YAML (or JSON) file into v.
func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
