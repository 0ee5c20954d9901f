package interop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	apiserviceetcd "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	"github.com/listwatch/listwatch/client/api"
)

// kubeInternal decodes a v1 object as kube-apiserver does (defaulted, in
// its internal version) and returns it with its defaulted v1 JSON, which
// is what listwatch stores.
func kubeInternal(t *testing.T, gv schema.GroupVersion, doc string) (runtime.Object, api.Object) {
	t.Helper()
	return kubeDecode(t, legacyscheme.Codecs, gv, doc)
}

// kubeDecode is kubeInternal with the codecs of another kube server.
func kubeDecode(t *testing.T, codecs serializer.CodecFactory, gv schema.GroupVersion, doc string) (runtime.Object, api.Object) {
	t.Helper()
	obj, _, err := codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
	if err != nil {
		t.Fatalf("kube decodes %s: %v", doc, err)
	}
	b, err := runtime.Encode(codecs.LegacyCodec(gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := api.ParseObject(b)
	if err != nil {
		t.Fatal(err)
	}
	return obj, ours
}

// printerCase is a kind and objects of it whose cells differ.
type printerCase struct {
	gv      schema.GroupVersion
	plural  string
	objects []string
}

func printerCases() []printerCase {
	ago := func(d time.Duration) string { return time.Now().Add(-d).UTC().Format(time.RFC3339) }
	created := `"creationTimestamp":"` + ago(95*time.Minute+20*time.Second) + `"`
	restarted := ago(3*time.Hour + 30*time.Minute)
	meta := func(name string) string {
		return `"metadata":{"name":"` + name + `","namespace":"default",` + created + `}`
	}
	pod := func(name, spec, status string) string {
		if spec == "" {
			spec = `{"containers":[{"name":"a","image":"nginx"},{"name":"b","image":"redis"}]}`
		}
		return `{"apiVersion":"v1","kind":"Pod",` + meta(name) + `,"spec":` + spec + `,"status":` + status + `}`
	}
	running := `{"running":{"startedAt":"2020-01-02T03:04:05Z"}}`
	term := func(reason string, code, signal int) string {
		return fmt.Sprintf(`{"terminated":{"reason":%q,"exitCode":%d,"signal":%d,"finishedAt":%q}}`, reason, code, signal, restarted)
	}
	cstatus := func(name, state string, ready bool, restarts int) string {
		return fmt.Sprintf(`{"name":%q,"image":"x","imageID":"","ready":%t,"restartCount":%d,"state":%s,"lastState":{"terminated":{"exitCode":1,"finishedAt":%q}}}`,
			name, ready, restarts, state, restarted)
	}
	initSpec := `{"initContainers":[{"name":"i1","image":"busybox"},{"name":"side","image":"envoy","restartPolicy":"Always"}],"containers":[{"name":"a","image":"nginx"}],"readinessGates":[{"conditionType":"example.com/gate"},{"conditionType":"other"}]}`
	pods := []string{
		pod("pending", "", `{"phase":"Pending"}`),
		pod("empty", "", `{}`),
		pod("running", "", `{"phase":"Running","podIP":"10.0.0.5","podIPs":[{"ip":"10.0.0.5"},{"ip":"fd00::5"}],"nominatedNodeName":"n2","containerStatuses":[`+
			cstatus("a", running, true, 0)+`,`+cstatus("b", running, true, 3)+`]}`),
		pod("crashloop", "", `{"phase":"Running","containerStatuses":[`+cstatus("a", `{"waiting":{"reason":"CrashLoopBackOff"}}`, false, 7)+`,`+cstatus("b", running, true, 0)+`]}`),
		pod("completed-running", "", `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[`+cstatus("a", term("Completed", 0, 0), false, 0)+`,`+cstatus("b", running, true, 0)+`]}`),
		pod("completed-notready", "", `{"phase":"Running","containerStatuses":[`+cstatus("a", term("Completed", 0, 0), false, 0)+`,`+cstatus("b", running, true, 0)+`]}`),
		pod("completed-error", "", `{"phase":"Running","containerStatuses":[`+cstatus("a", term("Completed", 0, 0), false, 0)+`,`+cstatus("b", term("", 2, 0), false, 0)+`]}`),
		pod("signal", "", `{"phase":"Failed","reason":"Evicted","containerStatuses":[`+cstatus("a", term("", 0, 9), false, 1)+`]}`),
		pod("gated", "", `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulingGated"}]}`),
		pod("init-waiting", initSpec, `{"phase":"Pending","initContainerStatuses":[`+cstatus("i1", `{"waiting":{"reason":"ImagePullBackOff"}}`, false, 2)+`]}`),
		pod("init-failed", initSpec, `{"phase":"Pending","initContainerStatuses":[`+cstatus("i1", term("", 3, 0), false, 1)+`]}`),
		pod("init-failed-reason", initSpec, `{"phase":"Pending","initContainerStatuses":[`+cstatus("i1", term("OOMKilled", 137, 0), false, 1)+`]}`),
		pod("init-signal", initSpec, `{"phase":"Pending","initContainerStatuses":[`+cstatus("i1", term("", 0, 0), false, 0)+`,`+cstatus("side", term("", 1, 15), false, 0)+`]}`),
		pod("init-progress", initSpec, `{"phase":"Pending","initContainerStatuses":[`+cstatus("i1", term("Completed", 0, 0), false, 0)+`,`+cstatus("side", `{"waiting":{"reason":"PodInitializing"}}`, false, 0)+`]}`),
		pod("sidecar", initSpec, `{"phase":"Running","conditions":[{"type":"Initialized","status":"True"},{"type":"example.com/gate","status":"True"},{"type":"other","status":"False"}],"initContainerStatuses":[`+
			cstatus("i1", term("Completed", 0, 0), false, 4)+`,`+strings.Replace(cstatus("side", running, true, 2), `"ready"`, `"started":true,"ready"`, 1)+`],"containerStatuses":[`+cstatus("a", running, true, 1)+`]}`),
		strings.Replace(pod("terminating", "", `{"phase":"Running"}`), created, created+`,"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1),
		strings.Replace(pod("lost", "", `{"phase":"Running","reason":"NodeLost"}`), created, created+`,"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1),
		strings.Replace(pod("done-deleted", "", `{"phase":"Succeeded"}`), created, created+`,"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1),
		pod("scheduled", `{"nodeName":"node-1","containers":[{"name":"a","image":"nginx"}]}`, `{"phase":"Running"}`),
	}
	template := `"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"},{"name":"log","image":"fluentd"}]}}`
	sel := `"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["b","a"]},{"key":"canary","operator":"DoesNotExist"}]}`
	apps := func(kind, name, spec, status string) string {
		return `{"apiVersion":"apps/v1","kind":"` + kind + `",` + meta(name) + `,"spec":` + spec + `,"status":` + status + `}`
	}
	svc := func(name, spec, status string) string {
		return `{"apiVersion":"v1","kind":"Service",` + meta(name) + `,"spec":` + spec + `,"status":` + status + `}`
	}
	job := func(name, spec, status string) string {
		return `{"apiVersion":"batch/v1","kind":"Job",` + meta(name) + `,"spec":` + spec + `,"status":` + status + `}`
	}
	jobTemplate := `"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"pi","image":"perl"}]}}`
	started, finished := ago(50*time.Minute), ago(47*time.Minute)
	cond := func(t, status string) string { return `{"type":"` + t + `","status":"` + status + `"}` }
	node := func(name, labels, spec, status string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + name + `",` + created + `,"labels":` + labels + `},"spec":` + spec + `,"status":` + status + `}`
	}
	pvc := func(name, spec, status string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim",` + meta(name) + `,"spec":` + spec + `,"status":` + status + `}`
	}
	claim := `"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}`
	ep := func(name, subsets string) string {
		return `{"apiVersion":"v1","kind":"Endpoints",` + meta(name) + `,"subsets":` + subsets + `}`
	}
	cluster := func(apiVersion, kind, name, body string) string {
		return `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{"name":"` + name + `",` + created + `}` + body + `}`
	}
	deleting := func(doc string) string {
		return strings.Replace(doc, created, created+`,"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1)
	}
	object := func(apiVersion, kind, name, body string) string {
		return `{"apiVersion":"` + apiVersion + `","kind":"` + kind + `",` + meta(name) + body + `}`
	}
	annotated := func(doc, annotations string) string {
		return strings.Replace(doc, created, created+`,"annotations":`+annotations, 1)
	}
	return []printerCase{
		{schema.GroupVersion{Group: "autoscaling", Version: "v1"}, "horizontalpodautoscalers", []string{
			object("autoscaling/v1", "HorizontalPodAutoscaler", "default-cpu", `,"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":10},"status":{"currentReplicas":0,"desiredReplicas":0}`),
			object("autoscaling/v1", "HorizontalPodAutoscaler", "cpu", `,"spec":{"scaleTargetRef":{"kind":"StatefulSet","name":"db"},"minReplicas":2,"maxReplicas":5,"targetCPUUtilizationPercentage":60},
			  "status":{"currentReplicas":3,"desiredReplicas":3,"currentCPUUtilizationPercentage":45}`),
		}},
		{schema.GroupVersion{Group: "autoscaling", Version: "v2"}, "horizontalpodautoscalers", []string{
			object("autoscaling/v2", "HorizontalPodAutoscaler", "none", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":3},"status":{"desiredReplicas":0}`),
			object("autoscaling/v2", "HorizontalPodAutoscaler", "resources", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":9,"metrics":[
			    {"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}},
			    {"type":"ContainerResource","containerResource":{"name":"memory","container":"app","target":{"type":"AverageValue","averageValue":"500Mi"}}}]},
			  "status":{"currentReplicas":2,"desiredReplicas":2,"currentMetrics":[
			    {"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":35,"averageValue":"150m"}}},
			    {"type":"ContainerResource","containerResource":{"name":"memory","container":"app","current":{"averageValue":"300Mi"}}}]}`),
			object("autoscaling/v2", "HorizontalPodAutoscaler", "unknown", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":9,"metrics":[
			    {"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}},
			    {"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"1Gi"}}}]},
			  "status":{"desiredReplicas":0,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageValue":"10m"}}}]}`),
			object("autoscaling/v2", "HorizontalPodAutoscaler", "custom", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":9,"metrics":[
			    {"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"1k"}}},
			    {"type":"Object","object":{"describedObject":{"kind":"Service","name":"s"},"metric":{"name":"hits"},"target":{"type":"Value","value":"2"}}},
			    {"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"AverageValue","averageValue":"30"}}}]},
			  "status":{"desiredReplicas":0,"currentMetrics":[{"type":"Pods","pods":{"metric":{"name":"qps"},"current":{"averageValue":"800"}}},
			    {"type":"Object","object":{"describedObject":{"kind":"Service","name":"s"},"metric":{"name":"hits"},"current":{"value":"5"}}}]}`),
			object("autoscaling/v2", "HorizontalPodAutoscaler", "averages", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":9,"metrics":[
			    {"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"AverageValue","averageValue":"30"}}},
			    {"type":"Object","object":{"describedObject":{"kind":"Service","name":"s"},"metric":{"name":"hits"},"target":{"type":"AverageValue","averageValue":"2"}}}]},
			  "status":{"desiredReplicas":0,"currentMetrics":[{"type":"External","external":{"metric":{"name":"queue"},"current":{"value":"4"}}},
			    {"type":"Object","object":{"describedObject":{"kind":"Service","name":"s"},"metric":{"name":"hits"},"current":{"averageValue":"1"}}}]}`),
			object("autoscaling/v2", "HorizontalPodAutoscaler", "values", `,"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":9,"metrics":[
			    {"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"Value","value":"30"}}},
			    {"type":"Object","object":{"describedObject":{"kind":"Service","name":"s"},"metric":{"name":"hits"},"target":{"type":"Value","value":"2"}}}]},
			  "status":{"desiredReplicas":0,"currentMetrics":[{"type":"External","external":{"metric":{"name":"queue"},"current":{"averageValue":"4"}}}]}`),
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "csidrivers", []string{
			cluster("storage.k8s.io/v1", "CSIDriver", "defaults", `,"spec":{}`),
			cluster("storage.k8s.io/v1", "CSIDriver", "set", `,"spec":{"attachRequired":false,"podInfoOnMount":true,"storageCapacity":true,"requiresRepublish":true,
			  "tokenRequests":[{"audience":"a"},{"audience":"b","expirationSeconds":3600}],"volumeLifecycleModes":["Persistent","Ephemeral"]}`),
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "csistoragecapacities", []string{
			object("storage.k8s.io/v1", "CSIStorageCapacity", "some", `,"storageClassName":"fast","capacity":"10Gi"`),
			object("storage.k8s.io/v1", "CSIStorageCapacity", "unknown", `,"storageClassName":"slow"`),
		}},
		{schema.GroupVersion{Version: "v1"}, "resourcequotas", []string{
			object("v1", "ResourceQuota", "new", `,"spec":{"hard":{"pods":"10"}}`),
			object("v1", "ResourceQuota", "used", `,"spec":{"hard":{"pods":"10","requests.cpu":"2","limits.memory":"4Gi","limits.cpu":"4","limitsx":"1"}},
			  "status":{"hard":{"pods":"10","requests.cpu":"2","limits.memory":"4Gi","limits.cpu":"4","limitsx":"1"},"used":{"pods":"3","limits.cpu":"500m"}}`),
		}},
		{schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}, "flowschemas", []string{
			cluster("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "defaults", `,"spec":{"priorityLevelConfiguration":{"name":"global-default"}}`),
			cluster("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "set", `,"spec":{"priorityLevelConfiguration":{"name":"workload-low"},"matchingPrecedence":9000,"distinguisherMethod":{"type":"ByUser"}},
			  "status":{"conditions":[{"type":"Other","status":"True"},{"type":"Dangling","status":"False"}]}`),
		}},
		{schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}, "prioritylevelconfigurations", []string{
			cluster("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "exempt", `,"spec":{"type":"Exempt","exempt":{}}`),
			cluster("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "rejecting", `,"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}`),
			cluster("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "queuing", `,"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":100,"limitResponse":{"type":"Queue","queuing":{"queues":128}}}}`),
		}},
		{schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1"}, "clustertrustbundles", []string{
			cluster("certificates.k8s.io/v1", "ClusterTrustBundle", "example.com:signer:a", `,"spec":{"signerName":"example.com/signer","trustBundle":"x"}`),
			cluster("certificates.k8s.io/v1", "ClusterTrustBundle", "plain", `,"spec":{"trustBundle":"x"}`),
		}},
		{schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1"}, "podcertificaterequests", []string{
			object("certificates.k8s.io/v1", "PodCertificateRequest", "pending", `,"spec":{"signerName":"example.com/s","podName":"p","podUID":"1","serviceAccountName":"sa","serviceAccountUID":"2","nodeName":"n","nodeUID":"3",
			  "pkixPublicKey":"eA==","proofOfPossession":"eA==","unverifiedUserAnnotations":{"b":"2","a":"1"}}`),
			object("certificates.k8s.io/v1", "PodCertificateRequest", "issued", `,"spec":{"signerName":"example.com/s","podName":"p","podUID":"1","serviceAccountName":"sa","serviceAccountUID":"2","nodeName":"n","nodeUID":"3",
			  "pkixPublicKey":"eA==","proofOfPossession":"eA=="},"status":{"conditions":[{"type":"Denied","status":"True"},{"type":"Issued","status":"True"}]}`),
		}},
		{schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}, "deviceclasses", []string{
			cluster("resource.k8s.io/v1", "DeviceClass", "gpu", `,"spec":{}`),
		}},
		{schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}, "resourceclaimtemplates", []string{
			object("resource.k8s.io/v1", "ResourceClaimTemplate", "gpu", `,"spec":{"spec":{}}`),
		}},
		{schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}, "resourceclaims", []string{
			object("resource.k8s.io/v1", "ResourceClaim", "pending", `,"spec":{}`),
			object("resource.k8s.io/v1", "ResourceClaim", "reserved", `,"spec":{},"status":{"allocation":{"devices":{}},"reservedFor":[{"resource":"pods","name":"p","uid":"1"}]}`),
			deleting(object("resource.k8s.io/v1", "ResourceClaim", "deleted", `,"spec":{}`)),
			deleting(object("resource.k8s.io/v1", "ResourceClaim", "deleted-allocated", `,"spec":{},"status":{"allocation":{"devices":{}}}`)),
		}},
		{schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}, "resourceslices", []string{
			cluster("resource.k8s.io/v1", "ResourceSlice", "node-1-gpu", `,"spec":{"driver":"gpu.example.com","nodeName":"node-1","pool":{"name":"node-1","generation":1,"resourceSliceCount":1}}`),
			cluster("resource.k8s.io/v1", "ResourceSlice", "all", `,"spec":{"driver":"net.example.com","allNodes":true,"pool":{"name":"net","generation":1,"resourceSliceCount":1}}`),
		}},
		{schema.GroupVersion{Group: "resource.k8s.io", Version: "v1"}, "devicetaintrules", []string{
			cluster("resource.k8s.io/v1", "DeviceTaintRule", "added", `,"spec":{"taint":{"key":"example.com/broken","value":"yes","effect":"NoExecute","timeAdded":"`+finished+`"}}`),
			cluster("resource.k8s.io/v1", "DeviceTaintRule", "plain", `,"spec":{"taint":{"key":"example.com/broken","effect":"NoSchedule"}}`),
		}},
		{schema.GroupVersion{Group: "apiregistration.k8s.io", Version: "v1"}, "apiservices", []string{
			cluster("apiregistration.k8s.io/v1", "APIService", "v1.apps", `,"spec":{"group":"apps","version":"v1","groupPriorityMinimum":17800,"versionPriority":15},
			  "status":{"conditions":[{"type":"Available","status":"True","reason":"Local"}]}`),
			cluster("apiregistration.k8s.io/v1", "APIService", "v1beta1.metrics.k8s.io", `,"spec":{"group":"metrics.k8s.io","version":"v1beta1","groupPriorityMinimum":100,"versionPriority":100,
			  "service":{"namespace":"kube-system","name":"metrics-server"}},"status":{"conditions":[{"type":"Other","status":"True"},{"type":"Available","status":"False","reason":"MissingEndpoints"}]}`),
			cluster("apiregistration.k8s.io/v1", "APIService", "v1.example.com", `,"spec":{"group":"example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":100,
			  "service":{"namespace":"ns","name":"s"}},"status":{"conditions":[{"type":"Available","status":"Unknown"}]}`),
			cluster("apiregistration.k8s.io/v1", "APIService", "v2.example.com", `,"spec":{"group":"example.com","version":"v2","groupPriorityMinimum":100,"versionPriority":100}`),
		}},
		{schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1"}, "certificatesigningrequests", []string{
			cluster("certificates.k8s.io/v1", "CertificateSigningRequest", "pending", `,"spec":{"request":"eA==","signerName":"example.com/s","usages":["client auth"],"username":"alice"}`),
			cluster("certificates.k8s.io/v1", "CertificateSigningRequest", "issued", `,"spec":{"request":"eA==","signerName":"kubernetes.io/kube-apiserver-client","expirationSeconds":86400,"usages":["client auth"],"username":"bob"},
			  "status":{"conditions":[{"type":"Approved","status":"True"},{"type":"Failed","status":"False"}],"certificate":"eA=="}`),
			cluster("certificates.k8s.io/v1", "CertificateSigningRequest", "denied", `,"spec":{"request":"eA==","signerName":"example.com/s","expirationSeconds":3600,"usages":["client auth"]},
			  "status":{"conditions":[{"type":"Approved","status":"True"},{"type":"Denied","status":"True"}]}`),
		}},
		{schema.GroupVersion{Group: "storagemigration.k8s.io", Version: "v1"}, "storageversionmigrations", []string{
			cluster("storagemigration.k8s.io/v1", "StorageVersionMigration", "core", `,"spec":{"resource":{"resource":"secrets"}}`),
			cluster("storagemigration.k8s.io/v1", "StorageVersionMigration", "done", `,"spec":{"resource":{"group":"apps","resource":"deployments"}},
			  "status":{"conditions":[{"type":"Running","status":"True","lastUpdateTime":"`+finished+`","reason":"r","message":"m"},{"type":"Succeeded","status":"True","lastUpdateTime":"`+finished+`","reason":"r","message":"m"},
			    {"type":"Failed","status":"False","lastUpdateTime":"`+finished+`","reason":"r","message":"m"}]}`),
		}},
		{schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}, "rolebindings", []string{
			object("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", `,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},
			  "subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","namespace":"ns","name":"sa"},{"kind":"User","name":"bob"}]`),
			object("rbac.authorization.k8s.io/v1", "RoleBinding", "empty", `,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}`),
		}},
		{schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}, "clusterrolebindings", []string{
			cluster("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "crb", `,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},"subjects":[{"kind":"ServiceAccount","namespace":"kube-system","name":"x"}]`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "validatingwebhookconfigurations", []string{
			cluster("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "v", `,"webhooks":[{"name":"a.example.com","clientConfig":{"url":"https://a"},"sideEffects":"None","admissionReviewVersions":["v1"]}]`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "mutatingwebhookconfigurations", []string{
			cluster("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "m", `,"webhooks":[]`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "validatingadmissionpolicies", []string{
			cluster("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "p", `,"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"validations":[{"expression":"true"},{"expression":"false"}]}`),
			cluster("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "plain", `,"spec":{"validations":[{"expression":"true"}]}`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "validatingadmissionpolicybindings", []string{
			cluster("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "b", `,"spec":{"policyName":"p","paramRef":{"name":"cm","namespace":"ns"},"validationActions":["Deny"]}`),
			cluster("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "plain", `,"spec":{"policyName":"p","validationActions":["Deny"]}`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "mutatingadmissionpolicies", []string{
			cluster("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy", "p", `,"spec":{"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"reinvocationPolicy":"Never","mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{}"}}]}`),
		}},
		{schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}, "mutatingadmissionpolicybindings", []string{
			cluster("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding", "b", `,"spec":{"policyName":"p","paramRef":{"selector":{"matchLabels":{"a":"b"}}}}`),
			cluster("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding", "exprs", `,"spec":{"policyName":"p","paramRef":{"selector":{"matchLabels":{"z":"1","a":"2"},
			  "matchExpressions":[{"key":"k","operator":"In","values":["x","y"]},{"key":"e","operator":"Exists"}]}}}`),
			cluster("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding", "cluster-param", `,"spec":{"policyName":"p","paramRef":{"name":"cm"}}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "events", []string{
			object("v1", "Event", "e1", `,"involvedObject":{"kind":"Pod","namespace":"default","name":"web-1","fieldPath":"spec.containers{web}"},"reason":"Pulled","message":" pulled \n",
			  "source":{"component":"kubelet","host":"node-1"},"firstTimestamp":"`+started+`","lastTimestamp":"`+finished+`","count":3,"type":"Normal"`),
			object("v1", "Event", "e2", `,"involvedObject":{"kind":"Node","name":"node-1"},"reason":"R","message":"m","eventTime":"`+strings.TrimSuffix(finished, "Z")+`.000000Z","reportingComponent":"c","reportingInstance":"i",
			  "series":{"count":4,"lastObservedTime":"`+strings.TrimSuffix(finished, "Z")+`.000000Z"},"type":"Warning","action":"a"`),
		}},
		{schema.GroupVersion{Group: "events.k8s.io", Version: "v1"}, "events", []string{
			object("events.k8s.io/v1", "Event", "e1", `,"eventTime":"`+strings.TrimSuffix(finished, "Z")+`.000000Z","reportingController":"kubelet","reportingInstance":"node-1","action":"Pull",
			  "reason":"Pulled","regarding":{"kind":"Pod","namespace":"default","name":"web-1","fieldPath":"spec.containers{web}"},"note":"pulled","type":"Normal",
			  "deprecatedSource":{"component":"kubelet","host":"node-1"},"deprecatedFirstTimestamp":"`+started+`","deprecatedLastTimestamp":"`+finished+`","deprecatedCount":3`),
		}},
		{schema.GroupVersion{Version: "v1"}, "namespaces", []string{
			cluster("v1", "Namespace", "active", `,"status":{"phase":"Active"}`),
			deleting(cluster("v1", "Namespace", "going", `,"status":{"phase":"Terminating"}`)),
		}},
		{schema.GroupVersion{Version: "v1"}, "configmaps", []string{
			object("v1", "ConfigMap", "empty", ``),
			object("v1", "ConfigMap", "both", `,"data":{"a":"1","b":"2"},"binaryData":{"c":"AAE="}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "secrets", []string{
			object("v1", "Secret", "opaque", `,"data":{"a":"MQ=="}`),
			object("v1", "Secret", "tls", `,"type":"kubernetes.io/tls","data":{"tls.crt":"eA==","tls.key":"eQ=="}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "serviceaccounts", []string{
			object("v1", "ServiceAccount", "default", `,"secrets":[{"name":"token"}]`),
		}},
		{schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}, "leases", []string{
			object("coordination.k8s.io/v1", "Lease", "held", `,"spec":{"holderIdentity":"node-1","leaseDurationSeconds":40}`),
			object("coordination.k8s.io/v1", "Lease", "free", `,"spec":{}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "persistentvolumes", []string{
			cluster("v1", "PersistentVolume", "bound", `,"spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteMany","ReadWriteOnce"],"hostPath":{"path":"/d"},
			  "claimRef":{"namespace":"default","name":"data"},"storageClassName":"fast","volumeMode":"Block","volumeAttributesClassName":"gold"},"status":{"phase":"Bound"}`),
			cluster("v1", "PersistentVolume", "plain", `,"spec":{"hostPath":{"path":"/d"}},"status":{"phase":"Failed","reason":"Recycle failed"}`),
			deleting(annotated(cluster("v1", "PersistentVolume", "going", `,"spec":{"capacity":{"storage":"1Gi"},"hostPath":{"path":"/d"},"persistentVolumeReclaimPolicy":"Retain","storageClassName":"fast"},"status":{"phase":"Released"}`),
				`{"volume.beta.kubernetes.io/storage-class":"slow"}`)),
		}},
		{schema.GroupVersion{Version: "v1"}, "podtemplates", []string{
			object("v1", "PodTemplate", "t", `,"template":{"metadata":{"labels":{"b":"2","a":"1"}},"spec":{"containers":[{"name":"web","image":"nginx"},{"name":"log","image":"fluentd"}]}}`),
			object("v1", "PodTemplate", "bare", `,"template":{"spec":{"containers":[{"name":"web","image":"nginx"}]}}`),
		}},
		{schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "ingresses", []string{
			object("networking.k8s.io/v1", "Ingress", "default-backend", `,"spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}`),
			object("networking.k8s.io/v1", "Ingress", "hosts", `,"spec":{"ingressClassName":"nginx","tls":[{"hosts":["a.example.com"]}],"rules":[{"http":{"paths":[]}},{"host":"a.example.com"},{"host":"b.example.com"},{"host":"c.example.com"}]},
			  "status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.9"},{"hostname":"lb.example.com"},{"ip":"203.0.113.1"},{"ip":"203.0.113.1"}]}}`),
			object("networking.k8s.io/v1", "Ingress", "many", `,"spec":{"rules":[{"host":"a.example.com"},{"host":"b.example.com"},{"host":"c.example.com"},{"host":"d.example.com"},{}]}`),
		}},
		{schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "ingressclasses", []string{
			annotated(cluster("networking.k8s.io/v1", "IngressClass", "nginx", `,"spec":{"controller":"k8s.io/ingress-nginx","parameters":{"apiGroup":"k8s.example.com","kind":"IngressParameters","name":"external-lb"}}`),
				`{"ingressclass.kubernetes.io/is-default-class":"true"}`),
			annotated(cluster("networking.k8s.io/v1", "IngressClass", "other", `,"spec":{"controller":"example.com/c","parameters":{"kind":"ConfigMap","name":"p","scope":"Namespace","namespace":"ns"}}`),
				`{"ingressclass.kubernetes.io/is-default-class":"True"}`),
			cluster("networking.k8s.io/v1", "IngressClass", "bare", `,"spec":{}`),
		}},
		{schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}, "endpointslices", []string{
			object("discovery.k8s.io/v1", "EndpointSlice", "empty", `,"addressType":"IPv4","endpoints":[]`),
			object("discovery.k8s.io/v1", "EndpointSlice", "web", `,"addressType":"IPv4","ports":[{"name":"http","port":80,"protocol":"TCP"},{"name":"named"},{}],
			  "endpoints":[{"addresses":["10.0.0.1"]},{"addresses":["10.0.0.2","10.0.0.3"],"conditions":{"ready":false}}]`),
			object("discovery.k8s.io/v1", "EndpointSlice", "more", `,"addressType":"IPv6","ports":[{"port":1},{"port":2},{"port":3},{"port":4},{"port":5}],
			  "endpoints":[{"addresses":["fd00::1"]},{"addresses":["fd00::2"]},{"addresses":["fd00::3"]},{"addresses":["fd00::4"]}]`),
		}},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "controllerrevisions", []string{
			strings.Replace(object("apps/v1", "ControllerRevision", "web-1", `,"revision":3`), created,
				created+`,"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"1"},{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"2","controller":true}]`, 1),
			strings.Replace(object("apps/v1", "ControllerRevision", "core-owner", `,"revision":1`), created,
				created+`,"ownerReferences":[{"apiVersion":"v1","kind":"ReplicationController","name":"rc","uid":"1","controller":true}]`, 1),
			object("apps/v1", "ControllerRevision", "orphan", `,"revision":0`),
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "volumeattributesclasses", []string{
			cluster("storage.k8s.io/v1", "VolumeAttributesClass", "gold", `,"driverName":"ebs.csi.aws.com","parameters":{"iops":"5000"}`),
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "csinodes", []string{
			cluster("storage.k8s.io/v1", "CSINode", "node-1", `,"spec":{"drivers":[{"name":"a.csi","nodeID":"n1"},{"name":"b.csi","nodeID":"n1"}]}`),
			cluster("storage.k8s.io/v1", "CSINode", "node-2", `,"spec":{"drivers":[]}`),
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "volumeattachments", []string{
			cluster("storage.k8s.io/v1", "VolumeAttachment", "va-1", `,"spec":{"attacher":"ebs.csi.aws.com","nodeName":"node-1","source":{"persistentVolumeName":"pv-1"}},"status":{"attached":true}`),
			cluster("storage.k8s.io/v1", "VolumeAttachment", "va-2", `,"spec":{"attacher":"x.csi","nodeName":"node-2","source":{"inlineVolumeSpec":{"csi":{"driver":"x.csi","volumeHandle":"h"}}}}`),
		}},
		{schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "servicecidrs", []string{
			cluster("networking.k8s.io/v1", "ServiceCIDR", "kubernetes", `,"spec":{"cidrs":["10.96.0.0/12","fd00:10:96::/112"]}`),
			cluster("networking.k8s.io/v1", "ServiceCIDR", "none", `,"spec":{}`),
		}},
		{schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "ipaddresses", []string{
			cluster("networking.k8s.io/v1", "IPAddress", "10.96.0.10", `,"spec":{"parentRef":{"group":"","resource":"Services","namespace":"kube-system","name":"kube-dns"}}`),
			cluster("networking.k8s.io/v1", "IPAddress", "10.96.0.11", `,"spec":{"parentRef":{"group":"Gateway.Networking.k8s.io","resource":"gateways","name":"gw"}}`),
		}},
		{schema.GroupVersion{Group: "policy", Version: "v1"}, "poddisruptionbudgets", []string{
			`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget",` + meta("min") + `,"spec":{"minAvailable":2},"status":{"disruptionsAllowed":1,"currentHealthy":3,"desiredHealthy":2,"expectedPods":3}}`,
			`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget",` + meta("max") + `,"spec":{"maxUnavailable":"25%"},"status":{"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}}`,
		}},
		{schema.GroupVersion{Group: "node.k8s.io", Version: "v1"}, "runtimeclasses", []string{
			cluster("node.k8s.io/v1", "RuntimeClass", "gvisor", `,"handler":"runsc"`),
		}},
		{schema.GroupVersion{Group: "networking.k8s.io", Version: "v1"}, "networkpolicies", []string{
			`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",` + meta("all") + `,"spec":{"podSelector":{}}}`,
			`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy",` + meta("some") + `,"spec":{"podSelector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"x","operator":"Exists"}]},"policyTypes":["Ingress"]}}`,
		}},
		{schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, "storageclasses", []string{
			cluster("storage.k8s.io/v1", "StorageClass", "standard", `,"provisioner":"rancher.io/local-path"`),
			cluster("storage.k8s.io/v1", "StorageClass", "fast", `,"provisioner":"ebs.csi.aws.com","reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer","allowVolumeExpansion":true`),
		}},
		{schema.GroupVersion{Group: "scheduling.k8s.io", Version: "v1"}, "priorityclasses", []string{
			cluster("scheduling.k8s.io/v1", "PriorityClass", "high", `,"value":1000000,"globalDefault":true,"description":"x"`),
			cluster("scheduling.k8s.io/v1", "PriorityClass", "low", `,"value":-5,"preemptionPolicy":"Never"`),
		}},
		{schema.GroupVersion{Version: "v1"}, "persistentvolumeclaims", []string{
			pvc("pending", `{`+claim+`}`, `{"phase":"Pending"}`),
			pvc("bound", `{`+claim+`,"volumeName":"pv-1","storageClassName":"fast","volumeMode":"Block","volumeAttributesClassName":"gold"}`,
				`{"phase":"Bound","capacity":{"storage":"2Gi"},"accessModes":["ReadWriteMany","ReadWriteOnce","ReadWriteMany","ReadWriteOncePod","ReadOnlyMany"]}`),
			pvc("no-capacity", `{`+claim+`,"volumeName":"pv-2","storageClassName":""}`, `{"phase":"Bound"}`),
			strings.Replace(pvc("annotated", `{`+claim+`,"storageClassName":"fast"}`, `{"phase":"Lost"}`), created,
				created+`,"annotations":{"volume.beta.kubernetes.io/storage-class":"slow"},"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1),
		}},
		{schema.GroupVersion{Version: "v1"}, "endpoints", []string{
			ep("none", `[]`),
			ep("headless", `[{"addresses":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]}]`),
			ep("two", `[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"name":"a","port":80,"protocol":"TCP"},{"name":"b","port":443,"protocol":"TCP"}]}]`),
			ep("many", `[{"addresses":[{"ip":"fd00::1"},{"ip":"fd00::2"}],"ports":[{"name":"a","port":80,"protocol":"TCP"},{"name":"b","port":443,"protocol":"TCP"}]},
			  {"addresses":[{"ip":"10.0.0.9"}],"notReadyAddresses":[{"ip":"10.0.0.8"}]}]`),
			ep("three", `[{"addresses":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"},{"ip":"10.0.0.3"}],"ports":[{"port":80,"protocol":"TCP"}]}]`),
		}},
		{schema.GroupVersion{Group: "batch", Version: "v1"}, "jobs", []string{
			job("running", `{`+jobTemplate+`}`, `{"startTime":"`+started+`","active":1}`),
			job("complete", `{"completions":3,"parallelism":2,`+jobTemplate+`}`, `{"startTime":"`+started+`","completionTime":"`+finished+`","succeeded":3,"conditions":[`+cond("SuccessCriteriaMet", "True")+`,`+cond("Complete", "True")+`]}`),
			job("parallel", `{"parallelism":4,"completions":null,`+jobTemplate+`}`, `{"conditions":[`+cond("Complete", "False")+`,`+cond("FailureTarget", "True")+`]}`),
			job("failed", `{`+jobTemplate+`}`, `{"conditions":[`+cond("Failed", "True")+`]}`),
			job("suspended", `{"suspend":true,`+jobTemplate+`}`, `{"conditions":[`+cond("Suspended", "True")+`]}`),
			strings.Replace(job("terminating", `{`+jobTemplate+`}`, `{"conditions":[`+cond("Suspended", "True")+`]}`), created, created+`,"deletionTimestamp":"2030-01-01T00:00:00Z","finalizers":["x"]`, 1),
			job("selector", `{"manualSelector":true,`+sel+`,`+jobTemplate+`}`, `{"conditions":[`+cond("SuccessCriteriaMet", "True")+`]}`),
		}},
		{schema.GroupVersion{Group: "batch", Version: "v1"}, "cronjobs", []string{
			`{"apiVersion":"batch/v1","kind":"CronJob",` + meta("hourly") + `,"spec":{"schedule":"0 * * * *","jobTemplate":{"spec":{` + jobTemplate + `}}},"status":{}}`,
			`{"apiVersion":"batch/v1","kind":"CronJob",` + meta("zoned") + `,"spec":{"schedule":"@daily","timeZone":"Europe/Paris","suspend":true,"jobTemplate":{"spec":{` + sel + `,` + jobTemplate + `}}},
			  "status":{"active":[{"name":"a"},{"name":"b"}],"lastScheduleTime":"` + finished + `"}}`,
		}},
		{schema.GroupVersion{Version: "v1"}, "nodes", []string{
			node("ready", `{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/":"x","kubernetes.io/role":"master"}`, `{}`,
				`{"conditions":[`+cond("MemoryPressure", "False")+`,`+cond("Ready", "True")+`],"addresses":[{"type":"Hostname","address":"n1"},{"type":"InternalIP","address":"10.0.0.1"},{"type":"InternalIP","address":"10.0.0.2"}],
				  "nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"6.8.0","osImage":"Ubuntu 24.04","containerRuntimeVersion":"containerd://2.0","kubeletVersion":"v1.37.2","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}`),
			node("cordoned", `{"kubernetes.io/role":"worker"}`, `{"unschedulable":true}`, `{"conditions":[`+cond("Ready", "True")+`,`+cond("Ready", "Unknown")+`],"addresses":[{"type":"ExternalIP","address":"203.0.113.7"}]}`),
			node("new", `{}`, `{"unschedulable":true}`, `{}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "pods", pods},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "deployments", []string{
			apps("Deployment", "d1", `{"replicas":3,`+sel+`,`+template+`}`, `{"readyReplicas":2,"updatedReplicas":3,"availableReplicas":1}`),
			apps("Deployment", "d2", `{"selector":{"matchLabels":{"app":"web"}},`+template+`}`, `{}`),
			apps("Deployment", "bad", `{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]},`+template+`}`, `{}`),
		}},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "replicasets", []string{
			apps("ReplicaSet", "r1", `{"replicas":3,`+sel+`,`+template+`}`, `{"replicas":2,"readyReplicas":1}`),
			apps("ReplicaSet", "r2", `{"selector":{},`+template+`}`, `{"replicas":0}`),
			apps("ReplicaSet", "bad", `{"selector":{"matchLabels":{"a":"!"}},`+template+`}`, `{"replicas":0}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "replicationcontrollers", []string{
			`{"apiVersion":"v1","kind":"ReplicationController",` + meta("rc") + `,"spec":{"replicas":2,"selector":{"b":"2","a":"1"},` + template + `},"status":{"replicas":1,"readyReplicas":1}}`,
			`{"apiVersion":"v1","kind":"ReplicationController",` + meta("no-template") + `,"spec":{"selector":{"a":"1"}},"status":{"replicas":0}}`,
		}},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "statefulsets", []string{
			apps("StatefulSet", "s1", `{"replicas":5,"serviceName":"s",`+sel+`,`+template+`}`, `{"replicas":5,"readyReplicas":4}`),
			apps("StatefulSet", "s2", `{"serviceName":"s","selector":{"matchLabels":{"app":"web"}},`+template+`}`, `{"replicas":0}`),
		}},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "daemonsets", []string{
			apps("DaemonSet", "ds", `{`+sel+`,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"nodeSelector":{"zone":"b","os":"linux"},"containers":[{"name":"c","image":"agent"}]}}}`,
				`{"desiredNumberScheduled":3,"currentNumberScheduled":3,"numberReady":2,"updatedNumberScheduled":1,"numberAvailable":2,"numberMisscheduled":0}`),
			apps("DaemonSet", "plain", `{"selector":{"matchLabels":{"app":"web"}},`+template+`}`, `{"desiredNumberScheduled":0,"currentNumberScheduled":0,"numberReady":0,"numberMisscheduled":0}`),
		}},
		{schema.GroupVersion{Version: "v1"}, "services", []string{
			svc("cluster", `{"clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10","fd00::10"],"selector":{"k8s-app":"dns","a":"b"},"ports":[{"name":"dns","port":53,"protocol":"UDP"},{"name":"tcp","port":53,"protocol":"TCP"}]}`, `{}`),
			svc("headless", `{"clusterIP":"None","clusterIPs":["None"]}`, `{}`),
			svc("external-ips", `{"clusterIP":"10.96.0.11","clusterIPs":["10.96.0.11"],"externalIPs":["1.2.3.4","5.6.7.8"],"ports":[{"port":80}]}`, `{}`),
			svc("nodeport", `{"type":"NodePort","clusterIP":"10.96.0.12","clusterIPs":["10.96.0.12"],"ports":[{"port":80,"nodePort":30080,"protocol":"TCP"}]}`, `{}`),
			svc("lb-pending", `{"type":"LoadBalancer","clusterIP":"10.96.0.13","clusterIPs":["10.96.0.13"],"ports":[{"port":443,"nodePort":30443}]}`, `{}`),
			svc("lb", `{"type":"LoadBalancer","clusterIP":"10.96.0.14","clusterIPs":["10.96.0.14"],"externalIPs":["9.9.9.9"],"ports":[{"port":443,"nodePort":30443}]}`,
				`{"loadBalancer":{"ingress":[{"ip":"203.0.113.9"},{"hostname":"lb.example.com"},{"ip":"203.0.113.1"},{"ip":"203.0.113.1"}]}}`),
			svc("name", `{"type":"ExternalName","externalName":"db.example.com"}`, `{}`),
		}},
	}
}

// TestBuiltinPrintersAsKube computes the Tables of built-in kinds with
// the server's columns and with kube's own printers
// (pkg/printers/internalversion, as kube-apiserver fills every column) over
// the same defaulted objects, and wants the same columns and cells. Ages
// are recent and far from a unit's edge, so that the two readings of the
// clock print the same.
func TestBuiltinPrintersAsKube(t *testing.T) {
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	for _, c := range printerCases() {
		t.Run(c.plural, func(t *testing.T) {
			res := Builtin(t, c.gv.Group, c.gv.Version, c.plural)
			for i, doc := range c.objects {
				var table *metav1.Table
				var ours api.Object
				var err error
				if c.gv.Group == "apiregistration.k8s.io" { // kube-aggregator's
					var internal runtime.Object
					internal, ours = kubeDecode(t, aggregatorscheme.Codecs, c.gv, doc)
					table, err = (&apiserviceetcd.REST{}).ConvertToTable(context.Background(), internal, nil)
				} else {
					var internal runtime.Object
					internal, ours = kubeInternal(t, c.gv, doc)
					table, err = gen.GenerateTable(internal, printers.GenerateOptions{Wide: true})
				}
				if err != nil {
					t.Fatal(err)
				}
				kubeDefs, cells := table.ColumnDefinitions[1:], []any{ours.Name()}
				if res.NameColumn {
					kubeDefs, cells = table.ColumnDefinitions, nil
				}
				if i == 0 {
					var defs []metav1.TableColumnDefinition
					for _, col := range res.Columns {
						d := col.TableColumnDefinition
						defs = append(defs, metav1.TableColumnDefinition{Name: d.Name, Type: d.Type, Format: d.Format, Description: d.Description, Priority: d.Priority})
					}
					if diff := cmp.Diff(kubeDefs, defs); diff != "" {
						t.Errorf("columns (-kube +ours):\n%s", diff)
					}
				}
				for _, col := range res.Columns {
					cells = append(cells, col.Cell(ours))
				}
				// kube's IPAddress rows carry an age its columns do not define:
				// clients show only the defined ones.
				if want, got := mustJSON(t, table.Rows[0].Cells[:len(table.ColumnDefinitions)]), mustJSON(t, cells); want != got {
					t.Errorf("%s:\nkube %s\nours %s", ours.Name(), want, got)
				}
			}
		})
	}
}

// builtinManifest are objects of kinds whose printers compute their cells
// beyond a field's value.
const builtinManifest = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints: [{addresses: [10.0.0.1]}, {addresses: [10.0.0.2]}]
`

// TestBuiltinPrintersFromKubectl reads built-in kinds' Tables from the
// binary with each kubectl: the server fills the cells kube's printers
// compute.
func TestBuiltinPrintersFromKubectl(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		k.must(t, "apply", "-f", writeFile(t, t.TempDir(), "builtins.yaml", builtinManifest))
		contains(t, k.must(t, "get", "ingressclasses"), `NAME +CONTROLLER +PARAMETERS +AGE`, `(?m)^nginx \(default\) +k8s.io/ingress-nginx +<none> +\d+s$`)
		contains(t, k.must(t, "get", "horizontalpodautoscalers.v2.autoscaling"), `NAME +REFERENCE +TARGETS +MINPODS +MAXPODS +REPLICAS +AGE`,
			`(?m)^web +Deployment/web +cpu: <unknown>/70% +1 +5 +0 +\d+s$`)
		contains(t, k.must(t, "get", "endpointslices"), `NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE`, `(?m)^web-abc +IPv4 +80 +10.0.0.1,10.0.0.2 +\d+s$`)
	})
}
