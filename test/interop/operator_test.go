package interop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crrecorder "sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/listwatch/listwatch/internal/testwait"
)

// This file is a controller-runtime operator as kubebuilder scaffolds one,
// for a Widget kind: its types, its definition, its reconciler, and
// runOperator, which runs it against any server given a *rest.Config, so
// that the same operator can be driven against one binary or against
// several servers on one etcd cluster.

const (
	widgetGroup        = "example.listwatch.io"
	widgetFinalizer    = widgetGroup + "/cleanup"
	revisionAnnotation = widgetGroup + "/revision"
	// secretNameField is the field index of Widgets by spec.secretName.
	secretNameField = "spec.secretName"
	operatorName    = "widget-operator"
	operatorTimeout = 90 * time.Second
	// pollInterval is how often a test reads what it waits for: often
	// enough for a prompt test, within the fixture's client rate limit.
	pollInterval = 100 * time.Millisecond
)

var (
	widgetGV  = schema.GroupVersion{Group: widgetGroup, Version: "v1"}
	secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")
	// watchedCollections are the path suffixes of what the operator's
	// informers list and watch.
	watchedCollections = []string{"/widgets", "/configmaps", "/secrets"}
)

// Widget is the operator's custom resource: each gets a ConfigMap of the
// same name holding its color and its secret's revision.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Color string `json:"color"`
	// SecretName names a Secret whose revision annotation the ConfigMap
	// copies; the operator watches Secrets' metadata only.
	SecretName string `json:"secretName,omitempty"`
}

type WidgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(w.Status.Conditions) // a Condition holds no pointers
	return &out
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &out
}

// operatorScheme knows the built-in kinds and Widgets.
func operatorScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	s.AddKnownTypes(widgetGV, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

// widgetDefinition is the Widget CustomResourceDefinition as controller-gen
// writes one: a structural schema, the status subresource and printer
// columns.
func widgetDefinition() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	int64Prop := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	condition := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"type", "status", "lastTransitionTime", "reason", "message"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"type": str, "status": str, "reason": str, "message": str,
			"observedGeneration": int64Prop, "lastTransitionTime": {Type: "string", Format: "date-time"}}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Color", Type: "string", JSONPath: ".spec.color"},
					{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"color"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"color": str, "secretName": str}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"observedGeneration": int64Prop,
							"conditions": {Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"type"},
								Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition}},
						}},
					},
				}},
			}},
		},
	}
}

// operatorOptions says how runOperator runs one manager.
type operatorOptions struct {
	id              string          // written into each ConfigMap it reconciles
	namespace       string          // where it caches, reconciles and holds its Lease
	releaseOnCancel bool            // LeaderElectionReleaseOnCancel
	election        electionTimings // zero: shortElection
	// log, if set, records in order when the manager was elected and
	// when it reconciled, shared by the managers of one test.
	log *electionLog
}

// electionTimings are a manager's leader election timings.
type electionTimings struct{ lease, renew, retry time.Duration }

var (
	// shortElection hands the Lease over in a moment (leaderelection_test.go).
	shortElection = electionTimings{electionLeaseDuration, electionRenewDeadline, electionRetryPeriod}
	// kubeElection are controller-runtime's defaults (manager/internal.go),
	// kube-controller-manager's too. A leader that cannot renew within the
	// renew deadline stops and its manager exits: 1 s is shorter than an
	// etcd election plus a server's failover, 10 s is not.
	kubeElection = electionTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}
)

// operator is one running controller-runtime manager with the widget
// controller.
type operator struct {
	operatorOptions
	mgr ctrl.Manager
	// requests counts the manager's GETs of each watched collection (by
	// path suffix): its informers' loads and watches.
	requests map[string]*countingProxy
	logs     *syncBuffer
	cancel   context.CancelFunc
	done     chan struct{} // closed when the manager's Start returns
	startErr error         // Start's result, set before done closes

	mu            sync.Mutex
	finalized     []string       // widgets whose finalizer ran, guarded by mu
	secretObjects map[string]int // %T of the objects the Secret watch handed over, guarded by mu
	// acked holds, by type and key, the newest object the server
	// acknowledged writing for the reconciler; guarded by mu.
	acked map[string]client.Object
}

// runOperator runs the widget operator's manager with cfg, with leader
// election on a Lease in o.namespace (as kubebuilder scaffolds it, with
// the short timings of leaderelection_test.go). It stops when t ends.
func runOperator(t testing.TB, cfg *rest.Config, o operatorOptions) *operator {
	t.Helper()
	// controller-runtime prints a stack trace if the global logger was
	// never set; each manager logs to its own buffer instead.
	ctrllog.SetLogger(logr.Discard())
	op := &operator{operatorOptions: o, logs: &syncBuffer{}, done: make(chan struct{}),
		requests: map[string]*countingProxy{}, secretObjects: map[string]int{}, acked: map[string]client.Object{}}
	for _, c := range watchedCollections {
		op.requests[c] = &countingProxy{collection: c}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = transport.Wrappers(cfg.WrapTransport, op.countRequests)
	scheme := operatorScheme()
	election := cmp.Or(o.election, shortElection)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		Logger: funcr.New(func(prefix, args string) { op.logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 1}),
		Cache:  cache.Options{DefaultNamespaces: map[string]cache.Config{o.namespace: {}}},
		// Several managers share this process; the names are per manager.
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                true,
		LeaderElectionID:              operatorName,
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: o.releaseOnCancel,
		LeaseDuration:                 ptr.To(election.lease),
		RenewDeadline:                 ptr.To(election.renew),
		RetryPeriod:                   ptr.To(election.retry),
	})
	if err != nil {
		t.Fatalf("manager %s: %v", o.id, err)
	}
	op.mgr = mgr
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	err = mgr.GetFieldIndexer().IndexField(ctx, &Widget{}, secretNameField, func(obj client.Object) []string {
		if name := obj.(*Widget).Spec.SecretName; name != "" {
			return []string{name}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("field index: %v", err)
	}
	r := &widgetReconciler{Client: ackingClient{mgr.GetClient(), op}, reader: mgr.GetAPIReader(), op: op,
		legacy: mgr.GetEventRecorderFor(operatorName), events: mgr.GetEventRecorder(operatorName)}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&Widget{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.widgetsForSecret), builder.OnlyMetadata).
		Complete(r)
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	go func() {
		defer close(op.done)
		op.startErr = mgr.Start(ctx)
	}()
	if o.log != nil {
		go func() {
			select {
			case <-mgr.Elected():
				o.log.add(o.id + " elected")
			case <-op.done:
			}
		}()
	}
	t.Cleanup(func() {
		if err := op.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("operator %s log:\n%s", o.id, op.logs.String())
		}
	})
	return op
}

// stop cancels the manager's context and waits for Start to return.
func (op *operator) stop() error {
	op.cancel()
	select {
	case <-op.done:
	case <-time.After(binStopTimeout):
		return fmt.Errorf("operator %s did not stop within %v", op.id, binStopTimeout)
	}
	if op.startErr != nil {
		return fmt.Errorf("operator %s: %w", op.id, op.startErr)
	}
	return nil
}

func (op *operator) countRequests(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		for _, p := range op.requests {
			p.countRequest(req)
		}
		resp, err := rt.RoundTrip(req)
		if err == nil {
			for _, p := range op.requests {
				p.countResponse(resp)
			}
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// ackingClient is the manager's client, noting in op.acked the writes
// the server acknowledged.
type ackingClient struct {
	client.Client
	op *operator
}

func (c ackingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.op.noteWrite(obj, c.Client.Create(ctx, obj, opts...))
}

func (c ackingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.op.noteWrite(obj, c.Client.Update(ctx, obj, opts...))
}

func (c ackingClient) Status() client.SubResourceWriter { return ackingStatus{c.Client.Status(), c.op} }

type ackingStatus struct {
	client.SubResourceWriter
	op *operator
}

func (s ackingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.op.noteWrite(obj, s.SubResourceWriter.Update(ctx, obj, opts...))
}

func (op *operator) noteWrite(obj client.Object, err error) error {
	if err == nil {
		op.mu.Lock()
		op.acked[fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))] = obj.DeepCopyObject().(client.Object)
		op.mu.Unlock()
	}
	return err
}

// ackedWrites returns the newest object of each that the server
// acknowledged writing for the reconciler.
func (op *operator) ackedWrites() []client.Object {
	op.mu.Lock()
	defer op.mu.Unlock()
	return slices.Collect(maps.Values(op.acked))
}

// checkWatches checks that each of the manager's informers loaded once
// (no relist), with protobuf the built-in kinds' requests answered in
// protobuf (not where servers die under the operator: an attempt cut off
// with its server has no such answer), and that the Secret watch handed
// the reconciler nothing but PartialObjectMetadata (if anything).
func (op *operator) checkWatches(t testing.TB, protobuf bool) {
	t.Helper()
	for _, collection := range watchedCollections {
		c := op.requests[collection].Counts()
		loads := c.Lists + c.StreamingLists
		if loads != 1 || protobuf && collection != "/widgets" && c.Protobuf != loads+c.Watches {
			t.Errorf("operator %s's requests on %s: %+v, want one load, in protobuf for a built-in kind", op.id, collection, c)
		}
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if len(op.secretObjects) > 1 || len(op.secretObjects) == 1 && op.secretObjects["*v1.PartialObjectMetadata"] == 0 {
		t.Errorf("operator %s's Secret watch handed over %v, want *v1.PartialObjectMetadata only", op.id, op.secretObjects)
	}
}

// finalizedWidgets returns the widgets whose finalizer ran.
func (op *operator) finalizedWidgets() []string {
	op.mu.Lock()
	defer op.mu.Unlock()
	return slices.Clone(op.finalized)
}

// widgetReconciler gives each Widget its ConfigMap, finalizer and status.
type widgetReconciler struct {
	client.Client
	reader client.Reader // reads the server, not the cache
	op     *operator
	legacy record.EventRecorder     // core/v1 events
	events crrecorder.EventRecorder // events.k8s.io/v1 events
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.op.log != nil {
		r.op.log.add(r.op.id + " reconciled")
	}
	var w Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &w)
	}
	if controllerutil.AddFinalizer(&w, widgetFinalizer) {
		return ctrl.Result{}, r.Update(ctx, &w) // its event brings the next reconcile
	}
	revision, err := r.secretRevision(ctx, &w)
	if err != nil {
		return ctrl.Result{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	result, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if !cm.CreationTimestamp.IsZero() && metav1.GetControllerOf(cm) == nil {
			if err := r.canAdopt(ctx, &w); err != nil {
				return err
			}
		}
		cm.Data = map[string]string{"color": w.Spec.Color, "secretRevision": revision, "reconciler": r.op.id}
		return controllerutil.SetControllerReference(&w, cm, r.Scheme())
	})
	if errors.Is(err, errOwnerGone) {
		return ctrl.Result{}, nil // the Widget's deletion brings the next reconcile
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if result != controllerutil.OperationResultNone {
		r.legacy.Eventf(&w, corev1.EventTypeNormal, "ConfigMapSynced", "ConfigMap %s %s", cm.Name, result)
	}
	changed := meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: "ConfigMapSynced", Message: "the ConfigMap holds the spec", ObservedGeneration: w.Generation})
	if !changed && w.Status.ObservedGeneration == w.Generation {
		return ctrl.Result{}, nil
	}
	w.Status.ObservedGeneration = w.Generation
	if err := r.Status().Update(ctx, &w); err != nil {
		return ctrl.Result{}, err
	}
	r.events.Eventf(&w, cm, corev1.EventTypeNormal, "Reconciled", "Reconcile", "generation %d is ready", w.Generation)
	return ctrl.Result{}, nil
}

var errOwnerGone = errors.New("the owner is being deleted")

// canAdopt reads w from the server, not the cache, before the operator
// adopts an orphaned ConfigMap: the collector orphans dependents only
// after their owner's deletion, which a cache may not show yet, and
// adopting then would undo the orphaning (kube's controllers recheck the
// same way, RecheckDeletionTimestamp in controller_ref_manager.go).
func (r *widgetReconciler) canAdopt(ctx context.Context, w *Widget) error {
	var live Widget
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(w), &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if apierrors.IsNotFound(err) || live.UID != w.UID || live.DeletionTimestamp != nil {
		return errOwnerGone
	}
	return nil
}

// secretRevision reads the revision annotation of w's Secret from the
// metadata-only cache.
func (r *widgetReconciler) secretRevision(ctx context.Context, w *Widget) (string, error) {
	if w.Spec.SecretName == "" {
		return "", nil
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(secretGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Spec.SecretName}, secret)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	return secret.Annotations[revisionAnnotation], err
}

// finalize removes the operator's finalizer and notes the Widget as
// cleaned up (what a finalizer stands for) once that write succeeded, so
// that a retried write is noted once.
func (r *widgetReconciler) finalize(ctx context.Context, w *Widget) error {
	if !controllerutil.ContainsFinalizer(w, widgetFinalizer) {
		return nil
	}
	controllerutil.RemoveFinalizer(w, widgetFinalizer)
	if err := r.Update(ctx, w); err != nil {
		return err
	}
	r.op.mu.Lock()
	r.op.finalized = append(r.op.finalized, w.Name)
	r.op.mu.Unlock()
	r.legacy.Eventf(w, corev1.EventTypeNormal, "Finalized", "cleaned up after %s", w.Name)
	return nil
}

// widgetsForSecret maps a Secret's metadata to the Widgets that name it,
// found through the field index.
func (r *widgetReconciler) widgetsForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	r.op.mu.Lock()
	r.op.secretObjects[fmt.Sprintf("%T", secret)]++
	r.op.mu.Unlock()
	var widgets WidgetList
	if err := r.List(ctx, &widgets, client.InNamespace(secret.GetNamespace()), client.MatchingFields{secretNameField: secret.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the widgets of a secret")
		return nil
	}
	var reqs []reconcile.Request
	for _, w := range widgets.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
	}
	return reqs
}

// widgetFixture is what a test of the operator drives it with: the Widget
// definition installed, a namespace of its own and clients that read the
// server directly (not the operator's caches).
type widgetFixture struct {
	cfg *rest.Config
	ns  string
	cl  client.Client
	cs  *kubernetes.Clientset
}

// newWidgetFixture installs the Widget definition (see
// installWidgetDefinition) and creates a namespace for the test.
func newWidgetFixture(t testing.TB, cfg *rest.Config) *widgetFixture {
	t.Helper()
	ctx := t.Context()
	installWidgetDefinition(t, cfg)
	f := &widgetFixture{cfg: cfg}
	var err error
	if f.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if f.cl, err = client.New(cfg, client.Options{Scheme: operatorScheme()}); err != nil {
		t.Fatal(err)
	}
	ns, err := f.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "operator-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.ns = ns.Name
	return f
}

// installWidgetDefinition installs the Widget definition with the
// apiextensions clientset (protobuf, its default) unless it is there, and
// waits until it is established.
func installWidgetDefinition(t testing.TB, cfg *rest.Config) {
	t.Helper()
	ctx := t.Context()
	crds, err := apiextensionsclientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	def := widgetDefinition()
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, def, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("install the Widget definition: %v", err)
	}
	testwait.UntilNil(t, operatorTimeout, "the Widget definition to be established", func() error {
		got, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, def.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !established(got) {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})
}

func (f *widgetFixture) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: f.ns, Name: name}
}

func (f *widgetFixture) createWidget(t testing.TB, name, color, secret string) {
	t.Helper()
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: WidgetSpec{Color: color, SecretName: secret}}
	if err := f.cl.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget %s: %v", name, err)
	}
}

// setColor updates a Widget's spec, retrying on conflicts with the
// operator's writes.
func (f *widgetFixture) setColor(t testing.TB, name, color string) {
	t.Helper()
	f.modify(t, &Widget{}, name, func(o client.Object) { o.(*Widget).Spec.Color = color })
}

// modify gets obj by name, applies change and updates it, again on a
// conflict.
func (f *widgetFixture) modify(t testing.TB, obj client.Object, name string, change func(client.Object)) {
	t.Helper()
	ctx := t.Context()
	for {
		if err := f.cl.Get(ctx, f.key(name), obj); err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		change(obj)
		err := f.cl.Update(ctx, obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update %s: %v", name, err)
		}
	}
}

// setSecret creates or updates the Secret name with a revision annotation.
func (f *widgetFixture) setSecret(t testing.TB, name, revision string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	_, err := controllerutil.CreateOrUpdate(t.Context(), f.cl, secret, func() error {
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, revisionAnnotation, revision)
		return nil
	})
	if err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
}

// waitUntil polls cond until it holds; on timeout it fails with the last
// reason cond gave.
func waitUntil(t testing.TB, what string, cond func(ctx context.Context) (ok bool, why string, err error)) {
	t.Helper()
	testwait.UntilNil(t, operatorTimeout, what, func() error {
		ok, why, err := cond(t.Context())
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if !ok {
			return errors.New(why)
		}
		return nil
	})
}

// waitConverged waits until the Widget name carries the finalizer and a
// Ready status for its generation, and its ConfigMap, controlled by it,
// holds want. It returns the Widget.
func (f *widgetFixture) waitConverged(t testing.TB, name string, want map[string]string) *Widget {
	t.Helper()
	var w Widget
	waitUntil(t, "widget "+name+" to converge", func(ctx context.Context) (bool, string, error) {
		if err := f.cl.Get(ctx, f.key(name), &w); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(w.Status.Conditions, "Ready")
		if !controllerutil.ContainsFinalizer(&w, widgetFinalizer) || w.Status.ObservedGeneration != w.Generation ||
			ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != w.Generation {
			return false, fmt.Sprintf("widget finalizers %v, generation %d, status %+v", w.Finalizers, w.Generation, w.Status), nil
		}
		var cm corev1.ConfigMap
		if err := f.cl.Get(ctx, f.key(name), &cm); err != nil {
			return false, err.Error(), client.IgnoreNotFound(err)
		}
		owner := metav1.GetControllerOf(&cm)
		if !maps.Equal(cm.Data, want) || owner == nil || owner.UID != w.UID || owner.Kind != "Widget" || owner.APIVersion != widgetGV.String() ||
			!ptr.Deref(owner.BlockOwnerDeletion, false) || len(cm.OwnerReferences) != 1 {
			return false, fmt.Sprintf("ConfigMap data %v, owners %+v", cm.Data, cm.OwnerReferences), nil
		}
		return true, "", nil
	})
	return &w
}

// waitEvents waits until the events about the Widget name hold each of
// reasons, read through core/v1 and through events.k8s.io/v1 alike.
func (f *widgetFixture) waitEvents(t testing.TB, name string, reasons ...string) {
	t.Helper()
	waitUntil(t, "the events of widget "+name, func(ctx context.Context) (bool, string, error) {
		core, err := f.cs.CoreV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, "", err
		}
		events, err := f.cs.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		if err != nil {
			return false, "", err
		}
		var coreReasons, eventsReasons []string
		for _, e := range core.Items {
			if e.InvolvedObject.Kind == "Widget" && e.InvolvedObject.APIVersion == widgetGV.String() {
				coreReasons = append(coreReasons, e.Reason)
			}
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "Widget" && e.Regarding.APIVersion == widgetGV.String() {
				eventsReasons = append(eventsReasons, e.Reason)
			}
		}
		for _, r := range reasons {
			if !slices.Contains(coreReasons, r) || !slices.Contains(eventsReasons, r) {
				return false, fmt.Sprintf("core/v1 reasons %v, events.k8s.io/v1 reasons %v, want %v in both", coreReasons, eventsReasons, reasons), nil
			}
		}
		return true, "", nil
	})
}

func checkGeneration(t testing.TB, w *Widget, want int64) {
	t.Helper()
	if w.Generation != want {
		t.Errorf("widget %s at generation %d, want %d", w.Name, w.Generation, want)
	}
}

// deleteFinalized deletes the Widget name, which has the operator's
// finalizer: kube answers 200 with the Widget as it stays, marked for
// deletion, its generation moved on (its registry's markAsDeleting).
func (f *widgetFixture) deleteFinalized(t testing.TB, name string) {
	t.Helper()
	var before Widget
	if err := f.cl.Get(t.Context(), f.key(name), &before); err != nil {
		t.Fatal(err)
	}
	body, err := f.cs.Discovery().RESTClient().Delete().AbsPath("/apis", widgetGroup, "v1", "namespaces", f.ns, "widgets", name).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("delete widget %s: %v", name, err)
	}
	var got Widget
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode the answer to deleting widget %s: %v\n%s", name, err, body)
	}
	if got.Kind != "Widget" || got.UID != before.UID || got.DeletionTimestamp == nil || got.Generation != before.Generation+1 ||
		!controllerutil.ContainsFinalizer(&got, widgetFinalizer) || ptr.Deref(got.DeletionGracePeriodSeconds, -1) != 0 {
		t.Errorf("deleting widget %s at generation %d answered %s", name, before.Generation, body)
	}
}

// checkTable gets the Widgets as a Table, as kubectl get does, and checks
// the definition's printer columns.
func (f *widgetFixture) checkTable(t testing.TB, names []string) {
	t.Helper()
	body, err := f.cs.Discovery().RESTClient().Get().AbsPath("/apis", widgetGroup, "v1", "namespaces", f.ns, "widgets").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("get widgets as a Table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decode the Table: %v\n%s", err, body)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	var rows []string
	for _, r := range table.Rows {
		if len(r.Cells) != 4 {
			t.Fatalf("row %v, want 4 cells", r.Cells)
		}
		rows = append(rows, fmt.Sprintf("%v %v %v", r.Cells[:3]...))
	}
	var want []string
	for _, n := range slices.Sorted(slices.Values(names)) {
		want = append(want, n+" "+n+" True")
	}
	if !slices.Equal(columns, []string{"Name", "Color", "Ready", "Age"}) || !slices.Equal(rows, want) {
		t.Errorf("Table columns %v rows %q, want Name Color Ready Age and %q", columns, rows, want)
	}
}

// waitGone waits until obj's name is not found.
func (f *widgetFixture) waitGone(t testing.TB, obj client.Object, name string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%T %s to go", obj, name), func(ctx context.Context) (bool, string, error) {
		err := f.cl.Get(ctx, f.key(name), obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, fmt.Sprintf("still there: finalizers %v, deletion %v", obj.GetFinalizers(), obj.GetDeletionTimestamp()), err
	})
}

// exerciseOperator runs the operator in a namespace of its own against
// cfg's server and checks that it converges: each Widget gets its
// finalizer, ConfigMap, status and events of both APIs; a spec update and
// a Secret's metadata reach its ConfigMap; a deleted Widget runs its
// finalizer and goes. mid, if not nil, runs after the first convergence
// (to kill a server, say); the operator must converge after it as well.
func exerciseOperator(t *testing.T, cfg *rest.Config, mid func()) {
	f := newWidgetFixture(t, cfg)
	op := runOperator(t, cfg, operatorOptions{id: "a", namespace: f.ns, releaseOnCancel: true})
	names := []string{"red", "green", "blue"}
	for _, n := range names {
		f.createWidget(t, n, n, "secret-"+n)
	}
	// Only spec changes move the generation (kube's custom resource
	// strategy): not the finalizer, not the status.
	for _, n := range names {
		checkGeneration(t, f.waitConverged(t, n, map[string]string{"color": n, "secretRevision": "", "reconciler": "a"}), 1)
		f.waitEvents(t, n, "ConfigMapSynced", "Reconciled")
	}
	f.checkTable(t, names)
	if mid != nil {
		mid()
	}
	for _, n := range names {
		f.setColor(t, n, "dark"+n)
		f.setSecret(t, "secret-"+n, "1")
	}
	for _, n := range names {
		checkGeneration(t, f.waitConverged(t, n, map[string]string{"color": "dark" + n, "secretRevision": "1", "reconciler": "a"}), 2)
	}
	// The Secret's metadata alone reaches the reconciler.
	f.setSecret(t, "secret-red", "2")
	f.waitConverged(t, "red", map[string]string{"color": "darkred", "secretRevision": "2", "reconciler": "a"})

	for _, n := range names {
		f.deleteFinalized(t, n)
	}
	for _, n := range names {
		f.waitGone(t, &Widget{}, n)
	}
	if got := op.finalizedWidgets(); !sameElements(got, names) {
		t.Errorf("finalized %v, want %v", got, names)
	}
	op.checkWatches(t, true)
}

func sameElements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
