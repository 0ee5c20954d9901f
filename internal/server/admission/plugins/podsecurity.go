package plugins

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/client/api"
	psa "github.com/listwatch/listwatch/internal/server/admission/podsecurity"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Namespaces and Pods are read by PodSecurity.
var (
	Namespaces = Ref{Version: "v1", Plural: "namespaces"}
	Pods       = Ref{Version: "v1", Plural: "pods"}
)

// The bounds of the check of a namespace's pods when its enforce level
// tightens (k8s.io/pod-security-admission/admission): at most this many
// pods, for at most this long (or half the request's time left).
const (
	namespaceMaxPodsToCheck  = 3000
	namespacePodCheckTimeout = time.Second
)

// privilegedLatest is the policy enforced on pods of a namespace that
// asks for none, as kube's audit annotation names it.
var privilegedLatest = psa.LevelVersion{Level: psa.LevelPrivileged, Version: psa.LatestVersion}.String()

// The audit annotations PodSecurity writes, after psa.LabelPrefix.
const (
	exemptAnnotation          = psa.LabelPrefix + "exempt"
	enforcePolicyAnnotation   = psa.LabelPrefix + "enforce-policy"
	auditViolationsAnnotation = psa.LabelPrefix + "audit-violations"
	errorAnnotation           = psa.LabelPrefix + "error"
)

// podSecurity is kube's PodSecurity plugin (k8s.io/pod-security-admission
// admission.Admission, as plugin/pkg/admission/security/podsecurity wires
// it): the levels a namespace's pod-security.kubernetes.io labels name
// (else the defaults) are enforced on pods, audited and warned of on pods
// and on the pod templates of workload kinds; a namespace's labels must
// parse, and tightening its enforce level warns of the pods it holds that
// violate it. The checks are package podsecurity's.
type podSecurity struct {
	src      Source
	defaults psa.Policy
	exempt   psa.Exemptions
}

// newPodSecurity returns the plugin with cfg, or kube-apiserver's default
// configuration if nil.
func newPodSecurity(src Source, cfg *psa.Config) *podSecurity {
	if cfg == nil {
		cfg = psa.DefaultConfig()
	}
	return &podSecurity{src: src, defaults: cfg.Defaults, exempt: cfg.Exemptions}
}

// podTemplatePaths are where the workload kinds hold their pod template
// (kube's DefaultPodSpecExtractor).
var podTemplatePaths = map[[2]string][]string{
	{"", "replicationcontrollers"}: {"spec", "template"},
	{"", "podtemplates"}:           {"template"},
	{"apps", "replicasets"}:        {"spec", "template"},
	{"apps", "deployments"}:        {"spec", "template"},
	{"apps", "statefulsets"}:       {"spec", "template"},
	{"apps", "daemonsets"}:         {"spec", "template"},
	{"batch", "jobs"}:              {"spec", "template"},
	{"batch", "cronjobs"}:          {"spec", "jobTemplate", "spec", "template"},
}

func (*podSecurity) admit(context.Context, *webhook.Attributes) error { return nil }

// podSubresourcesChecked are the pod subresources served whose writes
// PodSecurity evaluates: kube's ignores only those that cannot change the
// spec (status, binding, exec, ...).
var podSubresourcesChecked = []string{"ephemeralcontainers", "resize"}

func init() {
	for _, sub := range podSubresourcesChecked {
		handledSubresources[[3]string{"", "pods", sub}] = true
	}
}

func (p *podSecurity) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Create && a.Operation != webhook.Update {
		return nil
	}
	gr := [2]string{a.Resource.Group, a.Resource.Resource}
	if a.Subresource != "" && (gr != [2]string{"", "pods"} || !slices.Contains(podSubresourcesChecked, a.Subresource)) {
		return nil
	}
	switch {
	case gr == [2]string{"", "namespaces"}:
		return p.validateNamespace(ctx, a)
	case gr == [2]string{"", "pods"}:
		return p.validatePod(ctx, a)
	case podTemplatePaths[gr] != nil:
		p.validateTemplate(ctx, a, podTemplatePaths[gr])
	}
	return nil
}

// policyOf is the policy of a namespace with these labels.
func (p *podSecurity) policyOf(labels map[string]string) (psa.Policy, field.ErrorList) {
	return psa.PolicyOf(labels, p.defaults)
}

func (p *podSecurity) validateNamespace(ctx context.Context, a *webhook.Attributes) error {
	labels := a.Object.Labels()
	pol, errs := p.policyOf(labels)
	if a.Operation == webhook.Create {
		if len(errs) > 0 {
			return invalid(a, errs)
		}
		if slices.Contains(p.exempt.Namespaces, a.Namespace) {
			a.Warn(p.exemptNamespaceWarning(a.Object.Name(), pol, labels)...)
		}
		return nil
	}
	old, oldErrs := p.policyOf(a.OldObject.Labels())
	if len(errs) > 0 && (len(oldErrs) == 0 || !equalErrors(errs, oldErrs)) {
		return invalid(a, errs)
	}
	// Pods are checked only when enforcement tightens.
	if pol.Enforce == old.Enforce || pol.Enforce.Level == psa.LevelPrivileged ||
		pol.Enforce.Version == old.Enforce.Version && psa.CompareLevels(pol.Enforce.Level, old.Enforce.Level) < 1 {
		return nil
	}
	if slices.Contains(p.exempt.Namespaces, a.Namespace) {
		a.Warn(p.exemptNamespaceWarning(a.Object.Name(), pol, labels)...)
		return nil
	}
	a.Warn(p.checkNamespacePods(ctx, a.Object.Name(), pol.Enforce)...)
	return nil
}

// equalErrors says whether two label errors lists are the same.
func equalErrors(a, b field.ErrorList) bool {
	return slices.EqualFunc(a, b, func(x, y *field.Error) bool { return x.Error() == y.Error() })
}

// invalid is kube's 422 for a namespace's labels.
func invalid(a *webhook.Attributes, errs field.ErrorList) error {
	causes := make([]api.StatusCause, len(errs))
	for i, e := range errs {
		causes[i] = apierror.Field(api.CauseType(e.Type), e.Field, e.ErrorBody())
	}
	return apierror.Invalid(a.Kind.Group, a.Kind.Kind, a.Name, causes)
}

// exemptNamespaceWarning is kube's warning that an exempt namespace's
// labels ask for a policy that is not applied (the modes its labels set
// that are not privileged), if they do.
func (p *podSecurity) exemptNamespaceWarning(ns string, pol psa.Policy, labels map[string]string) []string {
	if pol.FullyPrivileged() || pol.Equivalent(p.defaults) {
		return nil
	}
	var modes []string
	for _, m := range []struct {
		name, level, version string
		lv                   psa.LevelVersion
	}{
		{"enforce", psa.EnforceLevelLabel, psa.EnforceVersionLabel, pol.Enforce},
		{"audit", psa.AuditLevelLabel, psa.AuditVersionLabel, pol.Audit},
		{"warn", psa.WarnLevelLabel, psa.WarnVersionLabel, pol.Warn},
	} {
		_, hasLevel := labels[m.level]
		_, hasVersion := labels[m.version]
		if m.lv.Level != psa.LevelPrivileged && (hasLevel || hasVersion) {
			modes = append(modes, m.name+"="+m.lv.String())
		}
	}
	return []string{fmt.Sprintf("namespace %q is exempt from Pod Security, and the policy (%s) will be ignored", ns, strings.Join(modes, ", "))}
}

// exempted says whether a namespace or a user is exempt, recording why.
func (p *podSecurity) exempted(a *webhook.Attributes) bool {
	why := ""
	switch {
	case a.Namespace != "" && slices.Contains(p.exempt.Namespaces, a.Namespace):
		why = "namespace"
	case a.User != nil && a.User.Name != "" && slices.Contains(p.exempt.Usernames, a.User.Name):
		why = "user"
	default:
		return false
	}
	a.Annotate(exemptAnnotation, why)
	return true
}

func (p *podSecurity) validatePod(ctx context.Context, a *webhook.Attributes) error {
	if p.exempted(a) {
		return nil
	}
	labels, err := p.src.NamespaceLabels(ctx, a.Namespace)
	if err != nil {
		msg := fmt.Sprintf("failed to lookup namespace %q", a.Namespace)
		a.Annotate(errorAnnotation, fmt.Sprintf("Internal error occurred: %s: %v", msg, err))
		return apierror.Internal(fmt.Errorf("%s", msg))
	}
	pol, errs := p.policyOf(labels)
	if len(errs) == 0 && pol.FullyPrivileged() {
		a.Annotate(enforcePolicyAnnotation, privilegedLatest)
		return nil
	}
	pod, err := psa.Decode(a.Object)
	if err != nil {
		return apierror.BadRequest("failed to decode object")
	}
	if a.Operation == webhook.Update {
		old, err := psa.Decode(a.OldObject)
		if err != nil {
			return apierror.BadRequest("failed to decode old object")
		}
		if !significantPodUpdate(pod, old) {
			return nil
		}
	}
	return p.evaluate(a, pol, errs, pod, true)
}

// validateTemplate audits and warns of a workload's pod template; it
// never refuses one.
func (p *podSecurity) validateTemplate(ctx context.Context, a *webhook.Attributes, path []string) {
	if p.exempted(a) {
		return
	}
	fail := func(msg string) { a.Annotate(errorAnnotation, msg) }
	labels, err := p.src.NamespaceLabels(ctx, a.Namespace)
	if err != nil {
		fail(fmt.Sprintf("failed to lookup namespace %q: %v", a.Namespace, err))
		return
	}
	pol, errs := p.policyOf(labels)
	if len(errs) == 0 && pol.Warn.Level == psa.LevelPrivileged && pol.Audit.Level == psa.LevelPrivileged {
		return
	}
	tmpl, present := lookup(a.Object, path)
	if !present && a.Resource.Resource == "replicationcontrollers" {
		return // its template is optional
	}
	pod, err := psa.Decode(tmpl)
	if err != nil {
		fail(fmt.Sprintf("failed to decode object: %v", err))
		return
	}
	_ = p.evaluate(a, pol, errs, pod, false)
}

// lookup is the value at path in obj, and whether every step is there.
func lookup(obj map[string]any, path []string) (any, bool) {
	var v any = obj
	for _, k := range path {
		m, _ := v.(map[string]any)
		if v, m = m[k], nil; v == nil {
			return nil, false
		}
	}
	return v, true
}

// evaluate is kube's EvaluatePod: the enforce level refuses (for pods),
// the audit level annotates, the warn level warns (unless refused).
func (p *podSecurity) evaluate(a *webhook.Attributes, pol psa.Policy, polErrs field.ErrorList, pod *psa.Pod, enforce bool) error {
	if p.exemptRuntimeClass(pod) {
		a.Annotate(exemptAnnotation, "runtimeClass")
		return nil
	}
	if len(polErrs) > 0 {
		a.Annotate(errorAnnotation, fmt.Sprintf("Failed to parse policy: %v", polErrs.ToAggregate()))
	}
	results := map[psa.LevelVersion]psa.Result{}
	check := func(lv psa.LevelVersion) psa.Result {
		r, ok := results[lv]
		if !ok {
			r = psa.Evaluate(lv, pod)
			results[lv] = r
		}
		return r
	}
	var refused error
	if enforce {
		a.Annotate(enforcePolicyAnnotation, pol.Enforce.String())
		if r := check(pol.Enforce); !r.Allowed() {
			refused = apierror.ForbiddenTo(apierror.Target{Group: a.Resource.Group, Resource: a.Resource.Resource, Name: a.Name},
				fmt.Sprintf("violates PodSecurity %q: %s", pol.Enforce.String(), r.Detail()))
		}
	}
	if r := check(pol.Audit); !r.Allowed() {
		a.Annotate(auditViolationsAnnotation, fmt.Sprintf("would violate PodSecurity %q: %s", pol.Audit.String(), r.Detail()))
	}
	if refused != nil {
		return refused
	}
	if r := check(pol.Warn); !r.Allowed() {
		a.Warn(fmt.Sprintf("would violate PodSecurity %q: %s", pol.Warn.String(), r.Detail()))
	}
	return nil
}

// significantPodUpdate says whether a pod update can change what the
// checks see: kube checks an update only if it changes the containers'
// count or images, or adds or changes an ephemeral container.
func significantPodUpdate(pod, old *psa.Pod) bool {
	images := func(cs []psa.Container) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Image
		}
		return out
	}
	if !slices.Equal(images(pod.Spec.Containers), images(old.Spec.Containers)) ||
		!slices.Equal(images(pod.Spec.InitContainers), images(old.Spec.InitContainers)) {
		return true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		i := slices.IndexFunc(old.Spec.EphemeralContainers, func(o psa.Container) bool { return o.Name == c.Name })
		if i < 0 || old.Spec.EphemeralContainers[i].Image != c.Image {
			return true
		}
	}
	return false
}

// checkNamespacePods are kube's warnings of the pods of a namespace that
// violate its new enforce level: pods of distinct controllers first, at
// most namespaceMaxPodsToCheck, within namespacePodCheckTimeout (or half
// the request's time left); pods with the same violations are counted in
// one warning under the first name.
func (p *podSecurity) checkNamespacePods(ctx context.Context, ns string, enforce psa.LevelVersion) []string {
	timeout := namespacePodCheckTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline)/2)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	objs, err := p.src.List(ctx, Pods, ns)
	if err != nil {
		return []string{"failed to list pods while checking new PodSecurity enforce level"}
	}
	pods := p.prioritize(objs)
	total := len(pods)
	pods = pods[:min(len(pods), namespaceMaxPodsToCheck)]
	type count struct {
		name string
		n    int
	}
	var reasons []string
	counts := map[string]count{}
	checked := len(pods)
	for i, pod := range pods {
		if r := psa.Evaluate(enforce, pod); !r.Allowed() {
			why := r.Reason()
			c, seen := counts[why]
			if !seen {
				reasons = append(reasons, why)
			}
			if !seen || pod.Metadata.Name < c.name {
				c.name = pod.Metadata.Name
			}
			c.n++
			counts[why] = c
		}
		if ctx.Err() != nil {
			checked = i + 1
			break
		}
	}
	var warnings []string
	if checked < total {
		warnings = append(warnings, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", checked, total))
	}
	if len(reasons) > 0 {
		warnings = append(warnings, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", ns, enforce.String()))
	}
	for i, why := range reasons {
		switch c := counts[why]; c.n {
		case 1:
			reasons[i] = fmt.Sprintf("%s: %s", c.name, why)
		case 2:
			reasons[i] = fmt.Sprintf("%s (and 1 other pod): %s", c.name, why)
		default:
			reasons[i] = fmt.Sprintf("%s (and %d other pods): %s", c.name, c.n-1, why)
		}
	}
	slices.Sort(reasons)
	return append(warnings, reasons...)
}

// prioritize converts the pods to check: exempt runtime classes left out,
// one pod per controller first, the other pods of controllers last.
func (p *podSecurity) prioritize(objs []api.Object) []*psa.Pod {
	slices.SortFunc(objs, func(x, y api.Object) int { return cmp.Compare(x.Name(), y.Name()) })
	var first, rest []*psa.Pod
	seen := map[string]bool{}
	for _, o := range objs {
		pod, err := psa.Decode(o)
		if err != nil || p.exemptRuntimeClass(pod) {
			continue
		}
		var controller string
		for _, r := range pod.Metadata.OwnerReferences {
			if r.Controller != nil && *r.Controller {
				controller = r.UID
				break
			}
		}
		if controller != "" && seen[controller] {
			rest = append(rest, pod)
			continue
		}
		seen[controller] = controller != ""
		first = append(first, pod)
	}
	return append(first, rest...)
}

// exemptRuntimeClass says whether the pod's runtime class is exempt.
func (p *podSecurity) exemptRuntimeClass(pod *psa.Pod) bool {
	rc := pod.Spec.RuntimeClassName
	return rc != "" && slices.Contains(p.exempt.RuntimeClasses, rc)
}
