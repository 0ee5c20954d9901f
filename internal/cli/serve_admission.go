package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/internal/server/webhookclient"
)

// webhookCredentials reads --admission-control-config-file, kube's
// AdmissionConfiguration: the kubeConfigFile of the
// WebhookAdmissionConfiguration of its ValidatingAdmissionWebhook ([0])
// and MutatingAdmissionWebhook ([1]) plugins, given inline or in the file
// a plugin's path names (relative to the configuration's directory), as
// kube-apiserver reads them. Other plugins' configurations are ignored.
func webhookCredentials(path string) (out [2]*webhookclient.Kubeconfig, err error) {
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
		return out, err
	}
	if cfg.Kind != "AdmissionConfiguration" {
		return out, fmt.Errorf("%s: kind %q, want AdmissionConfiguration", path, cfg.Kind)
	}
	for _, p := range cfg.Plugins {
		i, ok := map[string]int{"ValidatingAdmissionWebhook": 0, "MutatingAdmissionWebhook": 1}[p.Name]
		if !ok {
			continue
		}
		var wc struct {
			Kind           string `json:"kind"`
			KubeConfigFile string `json:"kubeConfigFile"`
		}
		switch {
		case p.Path != "":
			file := p.Path
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(path), file)
			}
			err = readYAML(file, &wc)
		case len(p.Configuration) > 0:
			err = json.Unmarshal(p.Configuration, &wc)
		}
		if err != nil {
			return out, fmt.Errorf("%s: plugin %s: %w", path, p.Name, err)
		}
		if wc.KubeConfigFile == "" {
			continue
		}
		if !filepath.IsAbs(wc.KubeConfigFile) {
			return out, fmt.Errorf("%s: plugin %s: kubeConfigFile: Invalid value: %q: must be an absolute file path", path, p.Name, wc.KubeConfigFile)
		}
		if out[i], err = webhookclient.LoadKubeconfig(wc.KubeConfigFile); err != nil {
			return out, fmt.Errorf("%s: plugin %s: %w", path, p.Name, err)
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
