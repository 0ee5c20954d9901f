package bench

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// The kinds a fan-out, list or CRUD run writes: ConfigMaps by default, or
// Pods of about the same size, to compare a kind kube defaults and
// validates at length, with a richer schema, against the plainest one.
const (
	KindConfigMaps = "configmaps"
	KindPods       = "pods"
)

// kind is what a run writes: the collection in the benchmark namespace and
// its objects.
type kind struct {
	path string
	// object is an object named name, of about size bytes of JSON, that
	// carries ts (unix ns) in a member "ts" the watch readers find.
	object func(name string, size int, ts time.Time) []byte
	// patch, when set, is the merge patch that changes an object to one
	// of about size bytes carrying ts, in place of a PUT of object.
	patch func(size int, ts time.Time) []byte
}

var configMapKind = kind{path: configMaps, object: configMap}

// kindFor is the kind named name ("" for ConfigMaps).
func kindFor(name string) (kind, error) {
	switch name {
	case "", KindConfigMaps:
		return configMapKind, nil
	case KindPods:
		return kind{path: "/api/v1/namespaces/" + namespace + "/pods", object: pod, patch: podPatch}, nil
	}
	return kind{}, fmt.Errorf("unknown kind %q: use %s or %s", name, KindConfigMaps, KindPods)
}

// podContainer is a container as deployments write them: env, resources,
// a readiness probe and a mount.
func podContainer(name string) string {
	return `{"name":"` + name + `","image":"registry.example.com/team/` + name + `:v1.2.3",` +
		`"ports":[{"containerPort":8080,"name":"http"}],` +
		`"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],` +
		`"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}},` +
		`"readinessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":5},` +
		`"volumeMounts":[{"name":"config","mountPath":"/etc/app"}]}`
}

var podSpec = `"spec":{"containers":[` + podContainer("web") + `,` + podContainer("sidecar") + `],` +
	`"volumes":[{"name":"config","configMap":{"name":"web-config"}}]}}`

// pod is a Pod of about size bytes of JSON (before the server's defaults
// and admission): two containers, labels, the write time in annotation
// "ts" and padding in annotation "pad".
func pod(name string, size int, ts time.Time) []byte {
	b := make([]byte, 0, size+len(podSpec)+256)
	b = append(b, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`...)
	b = append(b, name...)
	b = append(b, `","namespace":"`+namespace+`","labels":{"app":"web","tier":"frontend"},"annotations":{"ts":"`...)
	b = strconv.AppendInt(b, ts.UnixNano(), 10)
	b = append(b, `","pad":"`...)
	b = appendPad(b, size-len(b)-len(podSpec)-4)
	b = append(b, `"}},`...)
	return append(b, podSpec...)
}

// podPatch changes a pod's annotations to carry ts, its size kept (the
// same annotations as pod's): a pod's spec may not change, and a PUT would
// have to resend what admission added.
func podPatch(size int, ts time.Time) []byte {
	b := pod(objectName(0), size, ts)
	annotations := b[bytes.Index(b, []byte(`"annotations":`)):bytes.Index(b, []byte(`},"spec"`))]
	return fmt.Appendf(nil, `{"metadata":{%s}}`, annotations)
}
