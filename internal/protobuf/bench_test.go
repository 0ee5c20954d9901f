package protobuf

import "testing"

// BenchmarkEncode encodes a Namespace with every ObjectMeta field set: the
// server's cost per object written to a protobuf watcher or list.
func BenchmarkEncode(b *testing.B) {
	obj := parse(b, docs["namespace"])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode decodes the same Namespace: the server's cost per
// protobuf request body.
func BenchmarkDecode(b *testing.B) {
	data, err := Encode(parse(b, docs["namespace"]))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPod is a Pod of about 2 KiB as a Deployment's controller writes
// one: labels, an owner, two containers with ports, env, resources,
// probes and mounts, tolerations and a status.
const benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c8f6-x2x7k","generateName":"web-7d4b9c8f6-","namespace":"default",
	"uid":"5f0d2a9e-3c1b-4c2e-9a65-2d7f3b1e8c40","resourceVersion":"123456","creationTimestamp":"2026-01-02T03:04:05Z",
	"labels":{"app":"web","pod-template-hash":"7d4b9c8f6"},
	"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c8f6","uid":"0b6f0f4e-8a7e-4a53-b1b4-0e5c8f3d2a11","controller":true,"blockOwnerDeletion":true}]},
"spec":{"containers":[
	{"name":"web","image":"nginx:1.27","ports":[{"name":"http","containerPort":80,"protocol":"TCP"}],
	 "env":[{"name":"MODE","value":"production"},{"name":"POD_IP","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"status.podIP"}}}],
	 "resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"250m","memory":"64Mi"}},
	 "readinessProbe":{"httpGet":{"path":"/healthz","port":"http","scheme":"HTTP"},"periodSeconds":10,"timeoutSeconds":1,"successThreshold":1,"failureThreshold":3},
	 "volumeMounts":[{"name":"kube-api-access","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],
	 "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},
	{"name":"sidecar","image":"busybox:1.36","command":["sh","-c","sleep infinity"],"resources":{},
	 "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],
	"volumes":[{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},
		{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],
	"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",
	"nodeName":"node-1","securityContext":{},"schedulerName":"default-scheduler",
	"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},
		{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
	"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},
"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:15Z"}],
	"hostIP":"10.0.0.1","podIP":"10.244.1.7","podIPs":[{"ip":"10.244.1.7"}],"startTime":"2026-01-02T03:04:05Z","qosClass":"Burstable"}}`

// BenchmarkEncodePod and BenchmarkDecodePod are Encode and Decode of
// benchPod: a kind from kube's data, with Quantities and IntOrStrings.
func BenchmarkEncodePod(b *testing.B) {
	obj := parse(b, benchPod)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(obj); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePod(b *testing.B) {
	data, err := Encode(parse(b, benchPod))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
