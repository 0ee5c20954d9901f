package podsecurity

import (
	"encoding/json"
	"fmt"
)

// Pod is what the checks and the plugin read of a pod or a pod template,
// in core/v1's JSON names.
type Pod struct {
	Metadata struct {
		Name            string            `json:"name"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			UID        string `json:"uid"`
			Controller *bool  `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec PodSpec `json:"spec"`
}

// PodSpec is the part of a pod's spec the checks read.
type PodSpec struct {
	HostNetwork      bool   `json:"hostNetwork"`
	HostPID          bool   `json:"hostPID"`
	HostIPC          bool   `json:"hostIPC"`
	HostUsers        *bool  `json:"hostUsers"`
	RuntimeClassName string `json:"runtimeClassName"`
	OS               *struct {
		Name string `json:"name"`
	} `json:"os"`
	SecurityContext     *PodSecurityContext `json:"securityContext"`
	Volumes             []Volume            `json:"volumes"`
	InitContainers      []Container         `json:"initContainers"`
	Containers          []Container         `json:"containers"`
	EphemeralContainers []Container         `json:"ephemeralContainers"`
}

// PodSecurityContext is a pod's securityContext.
type PodSecurityContext struct {
	securityOptions
	Sysctls []struct {
		Name string `json:"name"`
	} `json:"sysctls"`
}

// securityOptions are the fields pods' and containers' security
// contexts share.
type securityOptions struct {
	RunAsNonRoot    *bool    `json:"runAsNonRoot"`
	RunAsUser       *int64   `json:"runAsUser"`
	SeccompProfile  *profile `json:"seccompProfile"`
	AppArmorProfile *profile `json:"appArmorProfile"`
	SELinuxOptions  *seLinux `json:"seLinuxOptions"`
	WindowsOptions  *struct {
		HostProcess *bool `json:"hostProcess"`
	} `json:"windowsOptions"`
}

type profile struct {
	Type string `json:"type"`
}

type seLinux struct {
	User string `json:"user"`
	Role string `json:"role"`
	Type string `json:"type"`
}

// Container is a container, init container or ephemeral container.
type Container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Ports []struct {
		HostPort int32 `json:"hostPort"`
	} `json:"ports"`
	SecurityContext *struct {
		securityOptions
		Privileged               *bool   `json:"privileged"`
		AllowPrivilegeEscalation *bool   `json:"allowPrivilegeEscalation"`
		ProcMount                *string `json:"procMount"`
		Capabilities             *struct {
			Add  []string `json:"add"`
			Drop []string `json:"drop"`
		} `json:"capabilities"`
	} `json:"securityContext"`
	LivenessProbe  *handler `json:"livenessProbe"`
	ReadinessProbe *handler `json:"readinessProbe"`
	StartupProbe   *handler `json:"startupProbe"`
	Lifecycle      *struct {
		PostStart *handler `json:"postStart"`
		PreStop   *handler `json:"preStop"`
	} `json:"lifecycle"`
}

// handler is a probe's or lifecycle hook's network target.
type handler struct {
	HTTPGet *struct {
		Host string `json:"host"`
	} `json:"httpGet"`
	TCPSocket *struct {
		Host string `json:"host"`
	} `json:"tcpSocket"`
}

// Volume is a pod's volume: its name and the field of its source.
type Volume struct {
	Name   string
	Source string
}

// UnmarshalJSON keeps the volume's name and which source it sets (the
// one field besides name that is not null).
func (v *Volume) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*v = Volume{}
	for k, raw := range fields {
		switch {
		case k == "name":
			if err := json.Unmarshal(raw, &v.Name); err != nil {
				return err
			}
		case string(raw) != "null":
			v.Source = k
		}
	}
	return nil
}

// Decode reads a pod (or a pod template) from its JSON-shaped value.
func Decode(obj any) (*Pod, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	pod := new(Pod)
	if err := json.Unmarshal(b, pod); err != nil {
		return nil, fmt.Errorf("decoding pod: %w", err)
	}
	return pod, nil
}

// containers calls visit for every container: init containers, then
// containers, then ephemeral containers (kube's visitContainers).
func (s *PodSpec) containers(visit func(*Container)) {
	for _, cs := range [][]Container{s.InitContainers, s.Containers, s.EphemeralContainers} {
		for i := range cs {
			visit(&cs[i])
		}
	}
}

func (s *PodSpec) windows() bool { return s.OS != nil && s.OS.Name == "windows" }

// userNamespace is kube's relaxPolicyForUserNamespacePod.
func (s *PodSpec) userNamespace() bool { return s.HostUsers != nil && !*s.HostUsers }
