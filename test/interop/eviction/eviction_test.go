// Package eviction proves pods/eviction against kube's own EvictionREST
// (k8s.io/kubernetes pkg/registry/core/pod/storage), run over an etcd of
// its own with a fake client for its PodDisruptionBudgets.
package eviction

import (
	stdcmp "cmp"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"
	"k8s.io/kubernetes/pkg/registry/registrytest"

	"github.com/listwatch/listwatch/test/interop"
)

// kubePods is kube's pod storage on an etcd of its own, its evictions
// reading and writing budgets through pdbs.
func kubePods(t *testing.T, pdbs *fake.Clientset) podstorage.PodStorage {
	config, server := registrytest.NewEtcdStorage(t, "")
	t.Cleanup(func() { server.Terminate(t) })
	opts := generic.RESTOptions{StorageConfig: config, Decorator: generic.UndecoratedStorage, DeleteCollectionWorkers: 1, ResourcePrefix: "pods"}
	storage, err := podstorage.NewStorage(opts, nil, nil, pdbs.PolicyV1(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(storage.Pod.Store.DestroyFunc)
	return storage
}

// pod is one pod of a case: its labels, phase and readiness, as its
// kubelet would have reported them.
type pod struct {
	name, app string
	phase     corev1.PodPhase
	ready     bool
}

func (p pod) v1() *corev1.Pod {
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default", Labels: map[string]string{"app": p.app}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status:     corev1.PodStatus{Phase: p.phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
}

// internal is the pod as kube-apiserver decodes it: defaulted, converted.
func internal(t *testing.T, v1 *corev1.Pod) *api.Pod {
	t.Helper()
	v1 = v1.DeepCopy()
	legacyscheme.Scheme.Default(v1)
	var out api.Pod
	if err := legacyscheme.Scheme.Convert(v1, &out, nil); err != nil {
		t.Fatal(err)
	}
	return &out
}

// budget selects app, with the status a disruption controller wrote.
func budget(name, app string, status policyv1.PodDisruptionBudgetStatus, spec func(*policyv1.PodDisruptionBudgetSpec)) *policyv1.PodDisruptionBudget {
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
		Status: status,
	}
	if spec != nil {
		spec(&b.Spec)
	}
	return b
}

// evictionCase is one eviction, made on kube's EvictionREST and on the
// server.
type evictionCase struct {
	name string
	pod  pod
	// evicted is the pod named (pod.name when empty); body the Eviction's
	// name (evicted when empty) and deleteOptions.
	evicted, body string
	options       *metav1.DeleteOptions
	dryRun        bool // in the request's query
	beta          bool // sent as policy/v1beta1
	protobuf      bool // sent as protobuf
	// retryAfter is an eviction answered with a Retry-After, posted once:
	// client-go's Evict would wait it out ten times.
	retryAfter bool
}

// answer is what client-go's eviction returned: nil, or its Status
// error's code, reason, message and causes.
type answer struct {
	Code       int32
	Reason     metav1.StatusReason
	Message    string
	Causes     []metav1.StatusCause
	RetryAfter int32
}

// answerOf is the answer of err, its messages with the names of the
// objects of one side (uid, resourceVersion) replaced by placeholders.
func answerOf(err error, names *strings.Replacer) *answer {
	var se apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		// kube's handler answers an error that is no Status with a 500
		// of no reason.
		return &answer{Code: 500, Message: names.Replace(err.Error())}
	}
	st := se.Status()
	a := &answer{Code: st.Code, Reason: st.Reason, Message: names.Replace(st.Message)}
	if st.Details != nil {
		a.Causes, a.RetryAfter = st.Details.Causes, st.Details.RetryAfterSeconds
	}
	return a
}

// TestEvictionAsKube makes the same evictions on kube's EvictionREST and,
// with client-go's Evict, EvictV1beta1 or a raw POST, on the binary, and
// compares the answers, whether each pod is left, and each budget's
// disruptionsAllowed and disruptedPods after them.
func TestEvictionAsKube(t *testing.T) {
	healthy := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	budgets := []*policyv1.PodDisruptionBudget{
		budget("allows", "allows", healthy, nil),
		budget("full", "full", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}, nil),
		budget("over", "over", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 1, ExpectedPods: 3}, nil),
		budget("failed", "failed", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 1, ExpectedPods: 3,
			Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: "False", Reason: "SyncFailed", Message: "no pods", LastTransitionTime: metav1.Now()}}}, nil),
		budget("reason", "reason", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 3, DesiredHealthy: 1, ExpectedPods: 3,
			Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: "False", Reason: "Paused", Message: "on hold", LastTransitionTime: metav1.Now()}}}, nil),
		budget("stale", "stale", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 3, CurrentHealthy: 3, DesiredHealthy: 0, ExpectedPods: 3}, nil),
		budget("twice-a", "twice", healthy, nil),
		budget("twice-b", "twice", healthy, nil),
		budget("healthy", "healthy", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 2}, nil),
		budget("unhealthy", "unhealthy", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 0, DesiredHealthy: 1, ExpectedPods: 2}, nil),
		budget("always", "always", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, CurrentHealthy: 0, DesiredHealthy: 1, ExpectedPods: 2},
			func(s *policyv1.PodDisruptionBudgetSpec) { s.UnhealthyPodEvictionPolicy = new(policyv1.AlwaysAllow) }),
		budget("dry", "dry", healthy, nil),
		budget("everything", "", healthy, func(s *policyv1.PodDisruptionBudgetSpec) { s.Selector = nil }),
	}
	pdbs := fake.NewSimpleClientset()
	kube := kubePods(t, pdbs)
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&clientrest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := kubernetes.NewForConfig(&clientrest.Config{Host: lw.URL, QPS: -1, ContentConfig: clientrest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), "default")
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default"})
	for _, b := range budgets {
		if _, err := pdbs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(t.Context(), b, metav1.CreateOptions{})
		if err == nil {
			created.Status = b.Status
			_, err = cs.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("budget %s: %v", b.Name, err)
		}
	}

	running := func(name, app string) pod { return pod{name: name, app: app, phase: corev1.PodRunning, ready: true} }
	cases := []evictionCase{
		{name: "pending", pod: pod{name: "pending", app: "full", phase: corev1.PodPending}},
		{name: "succeeded", pod: pod{name: "succeeded", app: "full", phase: corev1.PodSucceeded}, beta: true, protobuf: true},
		{name: "failed phase", pod: pod{name: "failedphase", app: "full", phase: corev1.PodFailed}},
		{name: "no budget", pod: running("free", "none")},
		{name: "budget allows", pod: running("allowed", "allows"), protobuf: true},
		{name: "budget allows no more", pod: running("allowed-2", "allows"), beta: true, protobuf: true},
		{name: "budget full", pod: running("full", "full"), protobuf: true},
		{name: "over but none allowed", pod: running("over", "over")},
		{name: "sync failed", pod: running("failed", "failed")},
		{name: "condition reason", pod: running("reason", "reason")},
		{name: "stale budget", pod: running("stale", "stale"), retryAfter: true},
		{name: "two budgets", pod: running("twice", "twice")},
		{name: "unready, healthy budget", pod: pod{name: "unready", app: "healthy", phase: corev1.PodRunning}},
		{name: "unready, unhealthy budget", pod: pod{name: "unready-2", app: "unhealthy", phase: corev1.PodRunning}},
		{name: "unready, always allow", pod: pod{name: "unready-3", app: "always", phase: corev1.PodRunning}},
		{name: "dry run in query", pod: running("dry", "dry"), dryRun: true},
		{name: "dry run in options", pod: running("dry-2", "dry"), options: &metav1.DeleteOptions{DryRun: []string{"All"}}, beta: true},
		{name: "dry runs differ", pod: running("dry-3", "dry"), options: &metav1.DeleteOptions{DryRun: []string{"Other"}}, dryRun: true},
		{name: "other name", pod: running("named", "none"), body: "other"},
		{name: "missing pod", pod: running("present", "none"), evicted: "absent"},
		{name: "store read errors", pod: running("unsafe", "none"), options: &metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: new(true)}},
		{name: "other uid", pod: running("uid", "none"), options: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: new(types.UID("u"))}}},
		{name: "stale resourceVersion", pod: running("rv", "none"), options: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: new("1")}}},
		{name: "orphan", pod: running("orphan", "none"), options: &metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationOrphan)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evicted, named := stdcmp.Or(c.evicted, c.pod.name), stdcmp.Or(c.body, c.evicted, c.pod.name)
			created, err := kube.Pod.Create(ctx, internal(t, c.pod.v1()), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if err == nil && c.pod.phase != corev1.PodPending {
				kubePod := created.(*api.Pod)
				kubePod.Status = internal(t, c.pod.v1()).Status
				created, _, err = kube.Status.Update(ctx, c.pod.name, rest.DefaultUpdatedObjectInfo(kubePod), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("kube's pod: %v", err)
			}
			kubePod := created.(*api.Pod)
			ours, err := cs.CoreV1().Pods("default").Create(t.Context(), c.pod.v1(), metav1.CreateOptions{})
			if err == nil && c.pod.phase != corev1.PodPending {
				ours.Status = c.pod.v1().Status
				ours, err = cs.CoreV1().Pods("default").UpdateStatus(t.Context(), ours, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("our pod: %v", err)
			}

			opts := &metav1.CreateOptions{}
			if c.dryRun {
				opts.DryRun = []string{"All"}
			}
			kubeObj, kubeErr := kube.Eviction.Create(ctx, evicted, &policy.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: named, Namespace: "default"}, DeleteOptions: c.options.DeepCopy()}, rest.ValidateAllObjectFunc, opts)
			client := cs
			if c.protobuf {
				client = pb
			}
			ourErr := evict(t, client, c, evicted, named)
			kubeNames := strings.NewReplacer("("+string(kubePod.UID)+")", "(<uid>)", "("+kubePod.ResourceVersion+")", "(<rv>)")
			ourNames := strings.NewReplacer("("+string(ours.UID)+")", "(<uid>)", "("+ours.ResourceVersion+")", "(<rv>)")
			if diff := cmp.Diff(answerOf(kubeErr, kubeNames), answerOf(ourErr, ourNames)); diff != "" {
				t.Errorf("answer (-kube +ours):\n%s", diff)
			}
			// A Status kube's EvictionREST returns is written with 201,
			// which client-go's Evict takes for success whatever it says:
			// the bytes are compared.
			if st, ok := kubeObj.(*metav1.Status); ok && st.Status == metav1.StatusFailure {
				code, got := evictRaw(t, cs, evicted, named)
				if want := (metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: st.Status, Message: st.Message, Code: st.Code}); code != 201 || !cmp.Equal(got, want) {
					t.Errorf("the Status written: %d %+v, want 201 %+v", code, got, want)
				}
			}
			// Deleted, or marked for deletion: kube deletes a pod bound to
			// a node gracefully, leaving it marked until its kubelet is
			// done, where ours is deleted at once; both keep a pod the
			// orphan finalizer holds.
			kubeLeft, kubeGetErr := kube.Pod.Get(ctx, c.pod.name, &metav1.GetOptions{})
			ourLeft, ourGetErr := cs.CoreV1().Pods("default").Get(t.Context(), c.pod.name, metav1.GetOptions{})
			kubeGone := apierrors.IsNotFound(kubeGetErr) || kubeGetErr == nil && kubeLeft.(*api.Pod).DeletionTimestamp != nil
			ourGone := apierrors.IsNotFound(ourGetErr) || ourGetErr == nil && ourLeft.DeletionTimestamp != nil
			if kubeGone != ourGone {
				t.Errorf("pod deleted: kube %v, ours %v", kubeGone, ourGone)
			}
		})
	}
	for _, b := range budgets {
		kubeB, err := pdbs.PolicyV1().PodDisruptionBudgets("default").Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ourB, err := cs.PolicyV1().PodDisruptionBudgets("default").Get(t.Context(), b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		keys := func(b *policyv1.PodDisruptionBudget) []string {
			return slices.Sorted(maps.Keys(b.Status.DisruptedPods))
		}
		if kubeB.Status.DisruptionsAllowed != ourB.Status.DisruptionsAllowed || !slices.Equal(keys(kubeB), keys(ourB)) {
			t.Errorf("budget %s: kube allows %d, disrupted %v; ours %d, %v", b.Name,
				kubeB.Status.DisruptionsAllowed, keys(kubeB), ourB.Status.DisruptionsAllowed, keys(ourB))
		}
	}
}

// evict makes c's eviction on the server: with client-go's Evict or
// EvictV1beta1, or a raw POST when they cannot say it (another name in the
// body, a dry run in the query) or would retry.
func evict(t *testing.T, cs *kubernetes.Clientset, c evictionCase, evicted, named string) error {
	t.Helper()
	meta := metav1.ObjectMeta{Name: named, Namespace: "default"}
	switch {
	case c.beta:
		return cs.PolicyV1beta1().Evictions("default").Evict(t.Context(), &policyv1beta1.Eviction{ObjectMeta: meta, DeleteOptions: c.options})
	case evicted == named && !c.dryRun && !c.retryAfter:
		return cs.PolicyV1().Evictions("default").Evict(t.Context(), &policyv1.Eviction{ObjectMeta: meta, DeleteOptions: c.options})
	}
	body, err := json.Marshal(&policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: meta, DeleteOptions: c.options})
	if err != nil {
		t.Fatal(err)
	}
	req := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name(evicted).SubResource("eviction").Body(body).MaxRetries(0)
	if c.dryRun {
		req = req.Param("dryRun", "All")
	}
	return req.Do(t.Context()).Error()
}

// evictRaw posts an Eviction of pod evicted, named as named, and returns
// the HTTP status and the Status answered.
func evictRaw(t *testing.T, cs *kubernetes.Clientset, evicted, named string) (int, metav1.Status) {
	t.Helper()
	body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + named + `"}}`
	var code int
	raw, err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name(evicted).SubResource("eviction").
		Body([]byte(body)).Do(t.Context()).StatusCode(&code).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return code, st
}
