package plugins

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// kube's ServiceAccount plugin's names (plugin/pkg/admission/serviceaccount).
const (
	defaultServiceAccount = "default"
	// tokenVolumePrefix begins the name of the projected volume of the
	// account's token; a volume so named is taken as it.
	tokenVolumePrefix = "kube-api-access-"
	tokenMountPath    = "/var/run/secrets/kubernetes.io/serviceaccount"
	// enforceMountableSecrets on an account limits the secrets its pods
	// may reference to the account's own.
	enforceMountableSecrets = "kubernetes.io/enforce-mountable-secrets"
	mirrorPodAnnotation     = "kubernetes.io/config.mirror"
	// RootCAConfigMap is the ConfigMap of the API server's CA in every
	// namespace, which the token volume projects.
	RootCAConfigMap = "kube-root-ca.crt"
	// tokenExpirationSeconds is the projected token's lifetime, kube's
	// WarnOnlyBoundTokenExpirationSeconds (an hour and 7 s).
	tokenExpirationSeconds = 60*60 + 7
	// projectedDefaultMode is 0644, v1.ProjectedVolumeSourceDefaultMode.
	projectedDefaultMode = 0o644
)

func generateName(prefix string) string { return prefix + registry.GenerateSuffix() }

// serviceAccount is kube's ServiceAccount plugin: a new pod runs as its
// namespace's default account unless it names one, which must exist; it
// mounts the account's token, the API server's CA and its namespace in
// every container, and pulls images with the account's secrets.
type serviceAccount struct {
	src          Source
	generateName func(prefix string) string
}

func (p *serviceAccount) admit(ctx context.Context, a *webhook.Attributes) error {
	spec := podSpec(a)
	if spec == nil || a.Operation != webhook.Create {
		return nil
	}
	// A mirror pod's spec is the kubelet's: changed, the kubelet would
	// delete the pod.
	if _, mirror := a.Object.Annotations()[mirrorPodAnnotation]; mirror {
		return p.validate(ctx, a)
	}
	if str(spec, "serviceAccountName") == "" {
		spec["serviceAccountName"] = defaultServiceAccount
		spec["serviceAccount"] = defaultServiceAccount // the deprecated alias, kept equal
	}
	sa, err := p.account(ctx, a, str(spec, "serviceAccountName"))
	if err != nil {
		return err
	}
	if automount(sa, spec) {
		p.mountToken(spec)
	}
	if pulls := objects(sa, "imagePullSecrets"); len(pulls) > 0 && len(objects(spec, "imagePullSecrets")) == 0 {
		secrets := make([]any, len(pulls))
		for i, s := range pulls {
			secrets[i] = map[string]any{"name": str(s, "name")}
		}
		spec["imagePullSecrets"] = secrets
	}
	return p.validate(ctx, a)
}

func (p *serviceAccount) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation == webhook.Update && a.Subresource == "ephemeralcontainers" && a.Resource.Group == "" && a.Resource.Resource == "pods" {
		return p.validateEphemeral(ctx, a)
	}
	spec := podSpec(a)
	if spec == nil || a.Operation != webhook.Create {
		return nil
	}
	if _, mirror := a.Object.Annotations()[mirrorPodAnnotation]; mirror {
		return validateMirror(a, spec)
	}
	sa, err := p.enforcingAccount(ctx, a, spec)
	if sa == nil || err != nil {
		return err
	}
	if why := unmountableSecret(sa, spec); why != "" {
		return Forbidden(a, why)
	}
	return nil
}

// enforcingAccount is the pod's account if it enforces mountable secrets,
// nil if not; a pod that names none, or one that is missing, is refused.
func (p *serviceAccount) enforcingAccount(ctx context.Context, a *webhook.Attributes, spec map[string]any) (api.Object, error) {
	name := str(spec, "serviceAccountName")
	if name == "" {
		return nil, Forbidden(a, fmt.Sprintf("no service account specified for pod %s/%s", a.Namespace, a.Object.Name()))
	}
	sa, err := p.account(ctx, a, name)
	if err != nil {
		return nil, err
	}
	if enforce, _ := strconv.ParseBool(sa.Annotations()[enforceMountableSecrets]); !enforce {
		return nil, nil
	}
	return sa, nil
}

// validateEphemeral is kube's limitEphemeralContainerSecretReferences:
// under an account that enforces mountable secrets, the pod's ephemeral
// containers may reference only the account's secrets. kube returns that
// refusal as a plain error, which its handler answers as a 500 with no
// reason; its other refusals are Forbidden.
func (p *serviceAccount) validateEphemeral(ctx context.Context, a *webhook.Attributes) error {
	spec, _ := a.Object["spec"].(map[string]any)
	sa, err := p.enforcingAccount(ctx, a, spec)
	if sa == nil || err != nil {
		return err
	}
	mountable := mountableSecrets(sa)
	for _, c := range objects(spec, "ephemeralContainers") {
		if ref := envSecret(c, func(name string) bool { return !mountable[name] }); ref != "" {
			return apierror.Unconverted(fmt.Sprintf("ephemeral container %s with %s is not allowed because service account %s does not reference that secret", str(c, "name"), ref, sa.Name()))
		}
	}
	return nil
}

// mountableSecrets are the names of the account's secrets.
func mountableSecrets(sa api.Object) map[string]bool {
	mountable := map[string]bool{}
	for _, s := range objects(sa, "secrets") {
		mountable[str(s, "name")] = true
	}
	return mountable
}

// account reads the pod's service account; one missing refuses the pod.
func (p *serviceAccount) account(ctx context.Context, a *webhook.Attributes, name string) (api.Object, error) {
	sa, err := p.src.Get(ctx, ServiceAccounts, a.Namespace, name)
	if err == nil && sa == nil {
		err = fmt.Errorf("serviceaccount %q not found", name)
	}
	if err != nil {
		return nil, Forbidden(a, fmt.Sprintf("error looking up service account %s/%s: %v", a.Namespace, name, err))
	}
	return sa, nil
}

// automount is the pod's automountServiceAccountToken, else the
// account's, else true.
func automount(sa api.Object, spec map[string]any) bool {
	if b, ok := spec["automountServiceAccountToken"].(bool); ok {
		return b
	}
	if b, ok := sa["automountServiceAccountToken"].(bool); ok {
		return b
	}
	return true
}

// mountToken mounts the token volume (the pod's own if it has one named
// so, else a new one) in each container and init container that mounts
// nothing at the token's path.
func (p *serviceAccount) mountToken(spec map[string]any) {
	volume := ""
	for _, v := range objects(spec, "volumes") {
		if name := str(v, "name"); strings.HasPrefix(name, tokenVolumePrefix) {
			volume = name
			break
		}
	}
	exists := volume != ""
	if !exists {
		volume = p.generateName(tokenVolumePrefix)
	}
	mounted := false
	for _, list := range []string{"initContainers", "containers"} {
		for _, c := range objects(spec, list) {
			if !mountsTokenPath(c) {
				mounts, _ := c["volumeMounts"].([]any)
				c["volumeMounts"] = append(mounts, map[string]any{"name": volume, "readOnly": true, "mountPath": tokenMountPath})
				mounted = true
			}
		}
	}
	if mounted && !exists {
		volumes, _ := spec["volumes"].([]any)
		spec["volumes"] = append(volumes, tokenVolume(volume))
	}
}

func mountsTokenPath(c map[string]any) bool {
	for _, m := range objects(c, "volumeMounts") {
		if str(m, "mountPath") == tokenMountPath {
			return true
		}
	}
	return false
}

// tokenVolume is kube's TokenVolumeSource: the account's token, the API
// server's CA from RootCAConfigMap and the pod's namespace.
func tokenVolume(name string) map[string]any {
	return map[string]any{"name": name, "projected": map[string]any{
		"defaultMode": number(projectedDefaultMode),
		"sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"path": "token", "expirationSeconds": number(tokenExpirationSeconds)}},
			map[string]any{"configMap": map[string]any{"name": RootCAConfigMap, "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
			map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{
				"path": "namespace", "fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"},
			}}}},
		},
	}}
}

// validateMirror refuses a mirror pod that references an account,
// secrets or a projected token, as kube.
func validateMirror(a *webhook.Attributes, spec map[string]any) error {
	if str(spec, "serviceAccountName") != "" {
		return Forbidden(a, "a mirror pod may not reference service accounts")
	}
	if referencesSecrets(spec) {
		return Forbidden(a, "a mirror pod may not reference secrets")
	}
	for _, v := range objects(spec, "volumes") {
		projected, _ := v["projected"].(map[string]any)
		for _, s := range objects(projected, "sources") {
			if s["serviceAccountToken"] != nil {
				return Forbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// volumeSecrets are, for each volume source that names a Secret, the path
// of the name in it (kube's VisitPodSecretNames).
var volumeSecrets = map[string][]string{
	"azureFile": {"secretName"}, "cephfs": {"secretRef", "name"}, "cinder": {"secretRef", "name"},
	"flexVolume": {"secretRef", "name"}, "rbd": {"secretRef", "name"}, "secret": {"secretName"},
	"scaleIO": {"secretRef", "name"}, "iscsi": {"secretRef", "name"}, "storageos": {"secretRef", "name"},
	"csi": {"nodePublishSecretRef", "name"},
}

// referencesSecrets says whether the pod names a Secret anywhere kube's
// VisitPodSecretNames looks.
func referencesSecrets(spec map[string]any) bool {
	for _, s := range objects(spec, "imagePullSecrets") {
		if str(s, "name") != "" {
			return true
		}
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range objects(spec, list) {
			if envSecret(c, func(string) bool { return true }) != "" {
				return true
			}
		}
	}
	for _, v := range objects(spec, "volumes") {
		for src, path := range volumeSecrets {
			if at(v, append([]string{src}, path...)...) != "" {
				return true
			}
		}
		projected, _ := v["projected"].(map[string]any)
		for _, s := range objects(projected, "sources") {
			if at(s, "secret", "name") != "" {
				return true
			}
		}
	}
	return false
}

// at is the string at a path of objects, or "".
func at(m map[string]any, path ...string) string {
	for _, k := range path[:len(path)-1] {
		m, _ = m[k].(map[string]any)
	}
	return str(m, path[len(path)-1])
}

// envSecret returns the first of a container's env and envFrom Secret
// references that refused rejects, as kube's messages say it, or "".
func envSecret(c map[string]any, refused func(secret string) bool) string {
	for _, e := range objects(c, "env") {
		if name := at(e, "valueFrom", "secretKeyRef", "name"); name != "" && refused(name) {
			return fmt.Sprintf(`envVar %s referencing secret.secretName="%s"`, str(e, "name"), name)
		}
	}
	for _, e := range objects(c, "envFrom") {
		if name := at(e, "secretRef", "name"); name != "" && refused(name) {
			return fmt.Sprintf(`envFrom referencing secret.secretName="%s"`, name)
		}
	}
	return ""
}

// unmountableSecret is kube's limitSecretReferences: why the pod may not
// reference a Secret its account does not, or "".
func unmountableSecret(sa api.Object, spec map[string]any) string {
	mountable := mountableSecrets(sa)
	for _, v := range objects(spec, "volumes") {
		if secret, ok := v["secret"].(map[string]any); ok && !mountable[str(secret, "secretName")] {
			return fmt.Sprintf(`volume with secret.secretName="%s" is not allowed because service account %s does not reference that secret`, str(secret, "secretName"), sa.Name())
		}
	}
	for _, list := range []struct{ key, what string }{{"initContainers", "init container"}, {"containers", "container"}} {
		for _, c := range objects(spec, list.key) {
			if ref := envSecret(c, func(name string) bool { return !mountable[name] }); ref != "" {
				return fmt.Sprintf("%s %s with %s is not allowed because service account %s does not reference that secret", list.what, str(c, "name"), ref, sa.Name())
			}
		}
	}
	pullable := map[string]bool{}
	for _, s := range objects(sa, "imagePullSecrets") {
		pullable[str(s, "name")] = true
	}
	for i, s := range objects(spec, "imagePullSecrets") {
		if !pullable[str(s, "name")] {
			return fmt.Sprintf(`imagePullSecrets[%d].name="%s" is not allowed because service account %s does not reference that imagePullSecret`, i, str(s, "name"), sa.Name())
		}
	}
	return ""
}
