package interop

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fielderr "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/testwait"
)

// suiteProjects are the projects whose definitions testdata/crds holds
// in full, gzipped, one directory each (README.md says where from).
var suiteProjects = []string{"argo-cd", "cert-manager", "crossplane", "flux", "gateway-api", "kyverno", "prometheus-operator"}

// suiteDefinition is one real-world definition: as its project ships it,
// and as kube's apiextensions server holds it.
type suiteDefinition struct {
	file string
	raw  json.RawMessage
	kube kubeCRD
}

func suiteDefinitions(t *testing.T) []suiteDefinition {
	t.Helper()
	var defs []suiteDefinition
	for _, p := range suiteProjects {
		files, err := filepath.Glob(filepath.Join("testdata/crds", p, "*.yaml.gz"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no definitions: %v", p, err)
		}
		for _, f := range files {
			for _, doc := range yamlDocs(t, gunzipToTemp(t, f)) {
				defs = append(defs, suiteDefinition{file: strings.TrimSuffix(strings.TrimPrefix(f, "testdata/crds/"), ".yaml.gz"), raw: doc, kube: parseCRD(t, doc)})
			}
		}
	}
	return defs
}

// gunzipToTemp writes the content of the gzipped file to a temporary file.
func gunzipToTemp(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(file), ".gz"))
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRealWorldCRDsAsKube installs the definitions of seven projects in one
// binary: each is accepted by kube's definition validation and ours, becomes
// Established and is stored with kube's defaults. Then, for every served
// version, custom resources generated from the schema (a valid one, and
// mutations of it that break one constraint each) are created: the answer,
// accepted or 422 with its message and causes, the unknown-field warnings
// and the object read back are those kube's own decoder, strategy and
// validators compute (as far as listwatch's documented bounds on a 422
// let it). Each failure says what it is: "MISMATCH"; "KUBE CEL LIBRARY"
// for a difference that goes away once the rules calling kube's CEL
// library functions are dropped; "CEL COST ESTIMATE" for a definition
// refused only for its rules' estimated cost.
func TestRealWorldCRDsAsKube(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary")
	}
	defs := suiteDefinitions(t)
	lw := StartListwatch(t, listwatchBin(t), "--unsafe-no-fsync")
	crds := lw.URL + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	installed := defs[:0:0]
	for _, d := range defs {
		if causes := d.kube.createCauses(t); len(causes) > 0 {
			t.Fatalf("kube refuses %s: %v", d.file, causes)
		}
		if code, body := fetch(t, "POST", crds, http.Header{"Content-Type": {"application/json"}}, d.raw); code != http.StatusCreated {
			t.Errorf("%skube accepts %s; listwatch answers %d %.2000s", suiteCostLabel(body), d.file, code, body)
			continue
		}
		installed = append(installed, d)
	}
	for _, d := range installed {
		stored := suiteEstablished(t, crds+"/"+d.kube.v1.Name)
		if diff := cmp.Diff(normalize(t, d.kube.v1.Spec), stored["spec"]); diff != "" {
			t.Errorf("%s: stored spec (-kube +listwatch):\n%s", d.file, diff)
		}
	}
	var cases, rejected int
	for _, d := range installed {
		for _, v := range d.kube.v1.Spec.Versions {
			if !v.Served {
				continue
			}
			kv := newSuiteVersion(t, d, v.Name)
			ns := ""
			if kv.namespaced {
				ns = "namespaces/default/"
			}
			url := fmt.Sprintf("%s/apis/%s/%s/%s%s", lw.URL, d.kube.v1.Spec.Group, v.Name, ns, d.kube.v1.Spec.Names.Plural)
			waitServed(t, url)
			cs := kv.cases()
			var rich map[string]any // as stored, when kube and the binary accept it
			for i, c := range cs {
				t.Run(d.file+"/"+v.Name+"/"+c.name, func(t *testing.T) {
					obj := suiteDeepCopy(c.obj)
					obj["metadata"] = map[string]any{"name": fmt.Sprintf("%s-%d-%s", v.Name, i, strings.ReplaceAll(c.name, " ", "-"))}
					no, stored := kv.check(t, url, obj, nil)
					if c.name == "rich" && !no {
						rich = stored
					}
					cases++
					if no {
						rejected++
					}
				})
			}
			// The first of each mutation again, as an update of the rich one.
			for _, c := range cs {
				if rich == nil || !strings.HasSuffix(c.name, " 0") {
					continue
				}
				t.Run(d.file+"/"+v.Name+"/update "+c.name, func(t *testing.T) {
					obj := suiteDeepCopy(c.obj)
					obj["metadata"] = map[string]any{"name": rich["metadata"].(map[string]any)["name"]}
					no, stored := kv.check(t, url, obj, rich)
					if stored != nil {
						rich = stored
					}
					cases++
					if no {
						rejected++
					}
				})
			}
		}
	}
	t.Logf("%d definitions, %d writes of custom resources, %d rejected by kube", len(defs), cases, rejected)
	if rejected == 0 || rejected == cases {
		t.Errorf("kube rejected %d of %d objects: the cases test nothing", rejected, cases)
	}
}

// suiteCostLabel marks a refusal whose every cause is a CEL rule's
// estimated cost: kube's cost estimator for its library and extension
// functions (k8s.io/apiserver/pkg/cel/library/cost.go) decides those.
func suiteCostLabel(body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Details == nil || len(st.Details.Causes) == 0 {
		return ""
	}
	for _, c := range st.Details.Causes {
		if !strings.Contains(c.Message, "estimated rule cost") {
			return ""
		}
	}
	return "CEL COST ESTIMATE: "
}

// suiteEstablished waits until the definition at url is Established and
// returns it as stored.
func suiteEstablished(t *testing.T, url string) map[string]any {
	t.Helper()
	var spec any
	testwait.UntilNil(t, binStartTimeout, url+" to be Established", func() error {
		code, body := fetch(t, "GET", url, nil, nil)
		var got struct {
			Spec   any `json:"spec"`
			Status struct {
				Conditions []struct{ Type, Status string }
			}
		}
		if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %d %.300s", url, code, body)
		}
		spec = got.Spec
		for _, c := range got.Status.Conditions {
			if c.Type == "Established" && c.Status == "True" {
				return nil
			}
		}
		return fmt.Errorf("status %+v", got.Status)
	})
	return map[string]any{"spec": spec}
}

// suiteVersion is one served version as kube serves it: its strategy, and
// another one without the rules that call kube's CEL library functions.
type suiteVersion struct {
	def        suiteDefinition
	version    string
	namespaced bool
	kube       kubeStrategy
	noLibrary  *kubeStrategy // nil when no rule calls a library function
	libraryUse []string      // the library functions the rules call
}

func newSuiteVersion(t *testing.T, d suiteDefinition, version string) *suiteVersion {
	t.Helper()
	v := &suiteVersion{def: d, version: version, namespaced: d.kube.v1.Spec.Scope == apiextensionsv1.NamespaceScoped}
	v.kube = newKubeStrategy(t, d.kube.internal, version)
	stripped := d.kube.internal.DeepCopy()
	for i := range stripped.Spec.Versions {
		if s := stripped.Spec.Versions[i].Schema; s != nil {
			v.libraryUse = append(v.libraryUse, suiteDropLibraryRules(s.OpenAPIV3Schema)...)
		}
	}
	if stripped.Spec.Validation != nil {
		v.libraryUse = append(v.libraryUse, suiteDropLibraryRules(stripped.Spec.Validation.OpenAPIV3Schema)...)
	}
	if len(v.libraryUse) > 0 {
		slices.Sort(v.libraryUse)
		v.libraryUse = slices.Compact(v.libraryUse)
		s := newKubeStrategy(t, stripped, version)
		v.noLibrary = &s
	}
	return v
}

// suiteLibraryCall matches a call of one of kube's CEL library functions
// (k8s.io/apiserver/pkg/cel/library: lists, regex, urls, quantity, ip,
// cidr, format, semver), which cel-go alone does not provide.
var suiteLibraryCall = regexp.MustCompile(`\b(url|getScheme|getHost|getHostname|getPort|getEscapedPath|getQuery|isURL|find|findAll|isSorted|sum|min|max|indexOf|lastIndexOf|quantity|isQuantity|sign|isGreaterThan|isLessThan|compareTo|asApproximateFloat|asInteger|isInteger|add|sub|ip|isIP|cidr|isCIDR|family|isUnspecified|isLoopback|isLinkLocalMulticast|isLinkLocalUnicast|isGlobalUnicast|isCanonical|containsIP|containsCIDR|prefixLength|masked|format\.[A-Za-z0-9]+|validate|semver|isSemver|major|minor|patch)\s*\(`)

// suiteDropLibraryRules removes from s the rules that call a library
// function and returns the functions they call.
func suiteDropLibraryRules(s *apiextensions.JSONSchemaProps) []string {
	if s == nil {
		return nil
	}
	var calls []string
	s.XValidations = slices.DeleteFunc(s.XValidations, func(r apiextensions.ValidationRule) bool {
		m := suiteLibraryCall.FindAllStringSubmatch(r.Rule+" "+r.MessageExpression, -1)
		for _, c := range m {
			calls = append(calls, c[1])
		}
		return len(m) > 0
	})
	for k, p := range s.Properties {
		calls = append(calls, suiteDropLibraryRules(&p)...)
		s.Properties[k] = p
	}
	if s.Items != nil {
		calls = append(calls, suiteDropLibraryRules(s.Items.Schema)...)
	}
	if s.AdditionalProperties != nil {
		calls = append(calls, suiteDropLibraryRules(s.AdditionalProperties.Schema)...)
	}
	return calls
}

// kubeAnswer is kube's answer to creating a custom resource.
type kubeAnswer struct {
	errs     fielderr.ErrorList
	warnings []string       // unknown fields, in Warn mode
	read     map[string]any // the object a GET returns, set its metadata aside
}

// create is what kube-apiserver does with a new custom resource: its
// decoder prunes (reporting unknown fields), drops nulls and defaults; the
// strategy prepares and validates; a read prunes and defaults again.
func (k kubeStrategy) create(t *testing.T, obj map[string]any, namespaced bool) kubeAnswer {
	t.Helper()
	var a kubeAnswer
	u := k.decode(t, obj, &a)
	if namespaced {
		u.SetNamespace("default")
	}
	k.strategy.PrepareForCreate(t.Context(), u)
	a.errs = k.strategy.Validate(t.Context(), u)
	k.read(u, &a)
	return a
}

// update is create's counterpart for obj replacing old, the stored
// object: the strategy prepares (status kept) and validates with
// ratcheting, transition rules and old's list types. Both carry old's
// metadata, which is not what the suite tests.
func (k kubeStrategy) update(t *testing.T, obj, old map[string]any) kubeAnswer {
	t.Helper()
	var a kubeAnswer
	u := k.decode(t, obj, &a)
	prev := &unstructured.Unstructured{Object: runtimeCopy(t, old)}
	meta := map[string]any{}
	for _, f := range []string{"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp"} {
		if v, ok := prev.Object["metadata"].(map[string]any)[f]; ok {
			meta[f] = v
		}
	}
	prev.Object["metadata"], u.Object["metadata"] = meta, runtime.DeepCopyJSONValue(meta)
	k.strategy.PrepareForUpdate(t.Context(), u, prev)
	a.errs = k.strategy.ValidateUpdate(t.Context(), u, prev)
	k.read(u, &a)
	return a
}

// decode is kube's decoder of a custom resource: pruning, reporting the
// unknown fields as warnings, nulls dropped and defaults applied.
func (k kubeStrategy) decode(t *testing.T, obj map[string]any, a *kubeAnswer) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: runtimeCopy(t, obj)}
	for _, p := range structuralpruning.PruneWithOptions(u.Object, k.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		a.warnings = append(a.warnings, fmt.Sprintf(`unknown field "%s"`, p))
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, k.structural)
	structuraldefaulting.Default(u.Object, k.structural)
	return u
}

// read sets what a GET of the written u returns, when it was written:
// the storage decoder prunes and defaults again.
func (k kubeStrategy) read(u *unstructured.Unstructured, a *kubeAnswer) {
	if len(a.errs) > 0 {
		return
	}
	structuralpruning.Prune(u.Object, k.structural, true)
	structuraldefaulting.Default(u.Object, k.structural)
	delete(u.Object, "metadata")
	a.read = u.Object
}

// check writes obj at url, created (old nil) or updating old, the object
// stored under its name, and compares the binary's answer with kube's. It
// reports whether kube rejects obj and returns the object then stored.
func (v *suiteVersion) check(t *testing.T, url string, obj, old map[string]any) (rejected bool, stored map[string]any) {
	t.Helper()
	name := obj["metadata"].(map[string]any)["name"].(string)
	method, target := "POST", url
	want := func(k kubeStrategy) kubeAnswer { return k.create(t, obj, v.namespaced) }
	if old != nil {
		obj["metadata"].(map[string]any)["resourceVersion"] = old["metadata"].(map[string]any)["resourceVersion"]
		method, target = "PUT", url+"/"+name
		want = func(k kubeStrategy) kubeAnswer { return k.update(t, obj, old) }
	}
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	code, answer, header := fetchHeader(t, method, target, http.Header{"Content-Type": {"application/json"}}, body)
	got := suiteAnswer{code: code, warnings: suiteWarnings(header)}
	if got.code < 300 {
		code, b := fetch(t, "GET", url+"/"+name, nil, nil)
		if err := json.Unmarshal(b, &stored); code != http.StatusOK || err != nil {
			t.Fatalf("reading back: %d %.300s", code, b)
		}
		got.read = maps.Clone(stored)
		delete(got.read, "metadata")
	} else if err := json.Unmarshal(answer, &got.status); err != nil {
		t.Fatalf("%d %.300s", got.code, answer)
	}
	kube := want(v.kube)
	diff := got.diff(t, v.kube, name, kube)
	if diff == "" && len(kube.warnings) > 0 && old == nil {
		diff = v.strict(t, url, obj, kube.warnings)
	}
	switch {
	case diff == "":
	case v.noLibrary != nil && got.diff(t, *v.noLibrary, name, want(*v.noLibrary)) == "":
		t.Errorf("KUBE CEL LIBRARY: differs only by rules calling kube's CEL library functions %v:\n%s\n%s %s", v.libraryUse, diff, method, body)
	default:
		t.Errorf("MISMATCH:\n%s\n%s %s", diff, method, body)
	}
	return len(kube.errs) > 0, stored
}

// strict creates obj, whose unknown fields kube reports as warnings, with
// fieldValidation=Strict under another name: kube refuses it with a 400
// naming the same fields before any validation. It returns the difference.
func (v *suiteVersion) strict(t *testing.T, url string, obj map[string]any, unknown []string) string {
	t.Helper()
	obj = suiteDeepCopy(obj)
	obj["metadata"].(map[string]any)["name"] = obj["metadata"].(map[string]any)["name"].(string) + "-strict"
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	code, answer := fetch(t, "POST", url+"?fieldValidation=Strict", http.Header{"Content-Type": {"application/json"}}, body)
	var st metav1.Status
	if err := json.Unmarshal(answer, &st); err != nil || code != http.StatusBadRequest {
		return fmt.Sprintf("fieldValidation=Strict: kube answers 400; listwatch %d %.300s", code, answer)
	}
	if d := cmp.Diff("strict decoding error: "+strings.Join(unknown, ", "), st.Message); d != "" {
		return "fieldValidation=Strict: message (-kube +listwatch):\n" + d
	}
	return ""
}

// suiteAnswer is the binary's answer to a create.
type suiteAnswer struct {
	code     int
	status   metav1.Status
	warnings []string
	read     map[string]any
}

// diff describes how the answer differs from kube's, or is empty.
func (a suiteAnswer) diff(t *testing.T, k kubeStrategy, name string, want kubeAnswer) string {
	var out []string
	if d := cmp.Diff(want.warnings, a.warnings, cmpopts.EquateEmpty(), cmpopts.SortSlices(func(x, y string) bool { return x < y })); d != "" {
		out = append(out, "warnings (-kube +listwatch):\n"+d)
	}
	if len(want.errs) == 0 {
		if a.code >= 300 {
			return strings.Join(append(out, fmt.Sprintf("kube accepts; listwatch answers %d %s", a.code, a.status.Message)), "\n")
		}
		if d := cmp.Diff(normalize(t, want.read), normalize(t, a.read)); d != "" {
			out = append(out, "read back (-kube +listwatch):\n"+d)
		}
		return strings.Join(out, "\n")
	}
	var causes []metav1.StatusCause
	if a.status.Details != nil {
		causes = a.status.Details.Causes
	}
	// listwatch bounds a 422 (apierror's MaxCauses and rune limits), kube
	// does not: past a bound, kube's causes are cut as ours are and the
	// message, which then cannot be rebuilt from them, is not compared.
	ordered := orderLike(slices.Clone(want.errs), causes)
	bounded := len(ordered) > apierror.MaxCauses
	ordered = ordered[:min(len(ordered), apierror.MaxCauses)]
	wantErr := apierrors.NewInvalid(k.gvk.GroupKind(), name, ordered)
	for i, c := range wantErr.ErrStatus.Details.Causes {
		c.Field, c.Message = apierror.Truncate(c.Field, apierror.MaxItemRunes), apierror.Truncate(c.Message, apierror.MaxCauseRunes)
		bounded = bounded || c != wantErr.ErrStatus.Details.Causes[i]
		wantErr.ErrStatus.Details.Causes[i] = c
	}
	wantMsg := apierror.Truncate(wantErr.ErrStatus.Message, apierror.MaxWarningRunes)
	if a.code != http.StatusUnprocessableEntity || a.status.Details == nil {
		return strings.Join(append(out, fmt.Sprintf("kube answers 422 %s; listwatch %d %s", wantMsg, a.code, a.status.Message)), "\n")
	}
	if d := cmp.Diff(wantMsg, a.status.Message); d != "" && !bounded {
		out = append(out, "message (-kube +listwatch):\n"+d)
	}
	byAll := cmpopts.SortSlices(func(x, y metav1.StatusCause) bool {
		return x.Field+"\x00"+string(x.Type)+"\x00"+x.Message < y.Field+"\x00"+string(y.Type)+"\x00"+y.Message
	})
	if d := cmp.Diff(wantErr.ErrStatus.Details.Causes, causes, cmpopts.EquateEmpty(), byAll); d != "" {
		out = append(out, "causes (-kube +listwatch):\n"+d)
	}
	return strings.Join(out, "\n")
}

// suiteWarnings are the unknown-field warnings of an answer's Warning
// headers (`299 - "text"`).
func suiteWarnings(h http.Header) []string {
	var out []string
	for _, w := range h.Values("Warning") {
		_, quoted, ok := strings.Cut(w, " - ")
		if text, err := strconv.Unquote(quoted); ok && err == nil && strings.HasPrefix(text, "unknown field") {
			out = append(out, text)
		}
	}
	return out
}

// suiteCase is a custom resource to create and what it is for.
type suiteCase struct {
	name string
	obj  map[string]any
}

// cases are a valid object of the version, minimal and rich, and
// mutations of the rich one, each breaking one constraint of the schema:
// deterministic, from a seed of the definition's name and version.
func (v *suiteVersion) cases() []suiteCase {
	seed := uint64(0)
	for _, c := range v.def.kube.v1.Name + "/" + v.version {
		seed = seed*31 + uint64(c)
	}
	g := &suiteGen{rng: rand.New(rand.NewPCG(seed, 1))}
	root := v.kube.structural
	withType := func(o any) map[string]any {
		m, _ := o.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m["apiVersion"] = v.def.kube.v1.Spec.Group + "/" + v.version
		m["kind"] = v.def.kube.v1.Spec.Names.Kind
		return m
	}
	cases := []suiteCase{{"minimal", withType(g.value(root, 0, false))}}
	rich := withType(g.value(root, 0, true))
	cases = append(cases, suiteCase{"rich", rich})
	var nodes []suiteNode
	suiteWalk(root, nil, rich, &nodes)
	for _, m := range suiteMutations {
		var fit []suiteNode
		for _, n := range nodes {
			if m.applies(n) {
				fit = append(fit, n)
			}
		}
		g.rng.Shuffle(len(fit), func(i, j int) { fit[i], fit[j] = fit[j], fit[i] })
		for i, n := range fit[:min(len(fit), suitePerMutation)] {
			obj := suiteDeepCopy(rich)
			suiteSet(obj, n.path, m.mutate(n))
			cases = append(cases, suiteCase{fmt.Sprintf("%s %d", m.name, i), obj})
		}
	}
	return cases
}

// suiteDeepCopy is a deep copy of a JSON object.
func suiteDeepCopy(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// suiteNode is a value in a generated object and its schema.
type suiteNode struct {
	path   []any // string keys and int indices from the root
	schema *structuralschema.Structural
	value  any
}

// suiteWalk lists the nodes of x below the root's metadata-free fields.
func suiteWalk(s *structuralschema.Structural, path []any, x any, out *[]suiteNode) {
	if s == nil {
		return
	}
	if len(path) > 0 {
		*out = append(*out, suiteNode{path: path, schema: s, value: x})
	}
	switch x := x.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if len(path) == 0 && (k == "metadata" || k == "apiVersion" || k == "kind") {
				continue
			}
			p := append(slices.Clone(path), k)
			if ps, ok := s.Properties[k]; ok {
				suiteWalk(&ps, p, x[k], out)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				suiteWalk(s.AdditionalProperties.Structural, p, x[k], out)
			}
		}
	case []any:
		for i, e := range x {
			suiteWalk(s.Items, append(slices.Clone(path), i), e, out)
		}
	}
}

// suiteNull stands for a JSON null in suiteSet, whose nil deletes.
type suiteNull struct{}

// suiteSet replaces the value at path in obj: nil deletes a key,
// suiteNull{} sets null.
func suiteSet(obj any, path []any, v any) {
	_, null := v.(suiteNull)
	for i, p := range path {
		last := i == len(path)-1
		switch p := p.(type) {
		case string:
			m := obj.(map[string]any)
			switch {
			case !last:
				obj = m[p]
			case null:
				m[p] = nil
			case v == nil:
				delete(m, p)
			default:
				m[p] = v
			}
		case int:
			l := obj.([]any)
			switch {
			case !last:
				obj = l[p]
			case null:
				l[p] = nil
			default:
				l[p] = v
			}
		}
	}
}

// suiteMutation breaks one kind of constraint at a node it applies to.
type suiteMutation struct {
	name    string
	applies func(n suiteNode) bool
	mutate  func(n suiteNode) any // the node's new value; nil removes it
}

var suiteMutations = []suiteMutation{
	{"wrong type", func(n suiteNode) bool {
		return n.schema.Type != "" && !n.schema.XIntOrString
	}, func(n suiteNode) any {
		if n.schema.Type == "string" {
			return int64(7)
		}
		return "wrong-type"
	}},
	{"enum miss", func(n suiteNode) bool {
		return n.schema.ValueValidation != nil && len(n.schema.ValueValidation.Enum) > 0 && n.schema.Type == "string"
	}, func(suiteNode) any { return "NotInTheEnum" }},
	{"other enum value", func(n suiteNode) bool {
		return n.schema.ValueValidation != nil && len(n.schema.ValueValidation.Enum) > 1
	}, func(n suiteNode) any {
		for _, e := range n.schema.ValueValidation.Enum {
			if fmt.Sprint(e.Object) != fmt.Sprint(n.value) {
				return e.Object
			}
		}
		return n.value
	}},
	{"optional removed", func(n suiteNode) bool { return suiteOptional(n) != "" }, func(n suiteNode) any {
		m := maps.Clone(n.value.(map[string]any))
		delete(m, suiteOptional(n))
		return m
	}},
	{"pattern miss", func(n suiteNode) bool {
		return suitePattern(n.schema) != nil && suiteMismatch(n.schema) != ""
	}, func(n suiteNode) any { return suiteMismatch(n.schema) }},
	{"too long", func(n suiteNode) bool {
		vv := n.schema.ValueValidation
		return vv != nil && (vv.MaxLength != nil && *vv.MaxLength < 4096 && n.schema.Type == "string" ||
			vv.MaxItems != nil && *vv.MaxItems < 256 && len(asList(n.value)) > 0)
	}, func(n suiteNode) any {
		vv := n.schema.ValueValidation
		if vv.MaxLength != nil && n.schema.Type == "string" {
			return strings.Repeat("a", int(*vv.MaxLength)+1)
		}
		l := asList(n.value)
		for len(l) <= int(*vv.MaxItems) {
			l = append(l, l[0])
		}
		return l
	}},
	{"below minimum", func(n suiteNode) bool {
		vv := n.schema.ValueValidation
		return vv != nil && vv.Minimum != nil && (n.schema.Type == "integer" || n.schema.Type == "number")
	}, func(n suiteNode) any { return int64(math.Floor(*n.schema.ValueValidation.Minimum)) - 1 }},
	{"above maximum", func(n suiteNode) bool {
		vv := n.schema.ValueValidation
		return vv != nil && vv.Maximum != nil && (n.schema.Type == "integer" || n.schema.Type == "number")
	}, func(n suiteNode) any { return int64(math.Ceil(*n.schema.ValueValidation.Maximum)) + 1 }},
	{"too short", func(n suiteNode) bool {
		vv := n.schema.ValueValidation
		return vv != nil && (vv.MinLength != nil && *vv.MinLength > 0 && n.schema.Type == "string" ||
			vv.MinItems != nil && *vv.MinItems > 0 && n.schema.Type == "array")
	}, func(n suiteNode) any {
		if n.schema.Type == "string" {
			return ""
		}
		return []any{}
	}},
	{"too many properties", func(n suiteNode) bool {
		m, _ := n.value.(map[string]any)
		vv := n.schema.ValueValidation
		return len(m) > 0 && vv != nil && vv.MaxProperties != nil && *vv.MaxProperties < 64 && n.schema.AdditionalProperties != nil
	}, func(n suiteNode) any {
		m := maps.Clone(n.value.(map[string]any))
		v := m[slices.Sorted(maps.Keys(m))[0]]
		for i := 0; int64(len(m)) <= *n.schema.ValueValidation.MaxProperties; i++ {
			m[fmt.Sprintf("extra%d", i)] = v
		}
		return m
	}},
	{"null", func(n suiteNode) bool { return n.value != nil }, func(suiteNode) any { return suiteNull{} }},
	{"duplicate", func(n suiteNode) bool {
		return n.schema.XListType != nil && (*n.schema.XListType == "map" || *n.schema.XListType == "set") && len(asList(n.value)) > 0
	}, func(n suiteNode) any {
		l := asList(n.value)
		return append(slices.Clone(l), l[0])
	}},
	{"missing required", func(n suiteNode) bool { return suiteRequired(n) != "" }, func(n suiteNode) any {
		m := maps.Clone(n.value.(map[string]any))
		delete(m, suiteRequired(n))
		return m
	}},
	{"unknown field", func(n suiteNode) bool {
		_, ok := n.value.(map[string]any)
		return ok && len(n.schema.Properties) > 0 && !n.schema.XPreserveUnknownFields && !n.schema.XEmbeddedResource
	}, func(n suiteNode) any {
		m := maps.Clone(n.value.(map[string]any))
		m["suiteUnknownField"] = "x"
		return m
	}},
	{"format", func(n suiteNode) bool {
		return n.schema.Type == "string" && n.schema.ValueValidation != nil && suiteBadFormats[n.schema.ValueValidation.Format] != ""
	}, func(n suiteNode) any { return suiteBadFormats[n.schema.ValueValidation.Format] }},
}

func asList(x any) []any { l, _ := x.([]any); return l }

// suiteRequired is a required field of the node that has no default.
func suiteRequired(n suiteNode) string {
	m, ok := n.value.(map[string]any)
	if !ok || n.schema.ValueValidation == nil {
		return ""
	}
	for _, r := range n.schema.ValueValidation.Required {
		if _, present := m[r]; present && n.schema.Properties[r].Default.Object == nil {
			return r
		}
	}
	return ""
}

// suiteOptional is a field of the node that its schema does not require,
// whose absence CEL rules may notice.
func suiteOptional(n suiteNode) string {
	m, ok := n.value.(map[string]any)
	if !ok || len(n.schema.Properties) == 0 {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if n.schema.ValueValidation == nil || !slices.Contains(n.schema.ValueValidation.Required, k) {
			return k
		}
	}
	return ""
}

// suiteBadFormats are values each format rejects.
var suiteBadFormats = map[string]string{
	"date-time": "yesterday", "date": "2026-13-45", "duration": "forever", "byte": "!!", "uri": "%zz",
	"email": "nobody", "hostname": "-bad-", "ipv4": "1.2.3", "ipv6": "1.2.3.4", "cidr": "10.0.0.0/33",
	"mac": "nope", "uuid": "nope", "int-or-string": "", "quantity": "q",
}

// suiteGoodFormats are values each format accepts.
var suiteGoodFormats = map[string]string{
	"date-time": "2026-01-02T03:04:05Z", "date": "2026-01-02", "duration": "1h", "byte": "aGk=",
	"uri": "https://example.com/a", "email": "a@example.com", "hostname": "example.com", "ipv4": "10.0.0.1",
	"ipv6": "fe80::1", "cidr": "10.0.0.0/8", "mac": "00:00:5e:00:53:01", "uuid": "a987fbc9-4bed-3078-cf07-9141ba07c9f3",
}

// suitePattern is the schema's pattern, when Go can compile it as kube does.
func suitePattern(s *structuralschema.Structural) *regexp.Regexp {
	if s.ValueValidation == nil || s.ValueValidation.Pattern == "" || s.Type != "string" {
		return nil
	}
	re, err := regexp.Compile(s.ValueValidation.Pattern)
	if err != nil {
		return nil
	}
	return re
}

// suiteMismatch is a short value the schema's pattern rejects.
func suiteMismatch(s *structuralschema.Structural) string {
	re := suitePattern(s)
	for _, c := range []string{"#", "a b", "_x_", "A", "-", "0", "a"} {
		if !re.MatchString(c) {
			return c
		}
	}
	return ""
}

// suiteGen generates values from a structural schema.
type suiteGen struct {
	rng   *rand.Rand
	nodes int // generated so far in this object, to bound big schemas
}

const (
	suiteMaxDepth    = 6
	suiteMaxNodes    = 400
	suitePerMutation = 2 // objects per kind of mutation and version, at most
)

// value is a value s accepts when it can make one: required fields, and
// in a rich object some optional ones too, constrained ones first.
func (g *suiteGen) value(s *structuralschema.Structural, depth int, rich bool) any {
	if depth == 0 {
		g.nodes = 0
	}
	g.nodes++
	vv := s.ValueValidation
	if vv == nil {
		vv = &structuralschema.ValueValidation{}
	}
	if len(vv.Enum) > 0 {
		return vv.Enum[g.rng.IntN(len(vv.Enum))].Object
	}
	switch {
	case s.XIntOrString:
		return int64(1)
	case s.XEmbeddedResource:
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}
	}
	switch s.Type {
	case "string":
		return g.text(s, vv)
	case "integer", "number":
		n := 1.0
		if vv.Minimum != nil {
			n = math.Ceil(*vv.Minimum)
			if vv.ExclusiveMinimum && n == *vv.Minimum {
				n++
			}
		} else if vv.Maximum != nil && *vv.Maximum < n {
			n = math.Floor(*vv.Maximum)
			if vv.ExclusiveMaximum && n == *vv.Maximum {
				n--
			}
		}
		if vv.MultipleOf != nil && *vv.MultipleOf > 0 {
			n = math.Ceil(n / *vv.MultipleOf) * *vv.MultipleOf
		}
		return int64(n)
	case "boolean":
		return true
	case "array":
		if s.Items == nil || depth >= suiteMaxDepth {
			return []any{}
		}
		n := 0
		if vv.MinItems != nil {
			n = int(*vv.MinItems)
		}
		if rich && n == 0 && g.nodes < suiteMaxNodes {
			n = 1
		}
		out := []any{}
		for i := range n {
			item := g.value(s.Items, depth+1, rich)
			if m, ok := item.(map[string]any); ok && s.XListType != nil && *s.XListType == "map" {
				for _, k := range s.XListMapKeys { // distinct keys
					if str, ok := m[k].(string); ok && i > 0 {
						m[k] = str + strconv.Itoa(i)
					}
				}
			}
			out = append(out, item)
		}
		return out
	case "object":
		out := map[string]any{}
		if depth >= suiteMaxDepth {
			return out
		}
		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			p := s.Properties[k]
			if depth == 0 && (k == "metadata" || k == "apiVersion" || k == "kind" || k == "status") {
				continue
			}
			required := slices.Contains(vv.Required, k) && p.Default.Object == nil
			if !required && !(rich && g.nodes < suiteMaxNodes && g.rng.Float64() < suiteChance(&p)) {
				continue
			}
			out[k] = g.value(&p, depth+1, rich)
		}
		if len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil && rich {
			out["key"] = g.value(s.AdditionalProperties.Structural, depth+1, rich)
		}
		return out
	}
	return "x" // no type: preserve-unknown-fields
}

// suiteChance is how likely a rich object is to hold an optional field:
// more for the constrained ones, which mutations break.
func suiteChance(s *structuralschema.Structural) float64 {
	vv := s.ValueValidation
	if s.XListType != nil || vv != nil && (len(vv.Enum) > 0 || vv.Pattern != "" || vv.Format != "" || vv.MaxLength != nil || len(vv.Required) > 0) {
		return 0.6
	}
	return 0.25
}

// text is a string the schema accepts, when one is found.
func (g *suiteGen) text(s *structuralschema.Structural, vv *structuralschema.ValueValidation) string {
	fit := func(x string) bool {
		n := int64(len([]rune(x)))
		return (vv.MinLength == nil || n >= *vv.MinLength) && (vv.MaxLength == nil || n <= *vv.MaxLength)
	}
	if re := suitePattern(s); re != nil {
		parsed, err := syntax.Parse(vv.Pattern, syntax.Perl)
		if err == nil {
			var b strings.Builder
			suiteMatching(parsed.Simplify(), &b)
			if x := b.String(); re.MatchString(x) && fit(x) {
				return x
			}
		}
		for _, x := range []string{"a", "example", "example.com", "1", "10", "1m", "v1", "a-b", "/", "/a", "https://example.com", "10.0.0.1", "1.0.0", "A", "Abc", "1Gi"} {
			if re.MatchString(x) && fit(x) {
				return x
			}
		}
	}
	if x, ok := suiteGoodFormats[vv.Format]; ok && fit(x) {
		return x
	}
	x := "a"
	if vv.MinLength != nil && *vv.MinLength > 1 {
		x = strings.Repeat("a", int(*vv.MinLength))
	}
	return x
}

// suiteMatching writes a string the regular expression re matches: the
// first alternative, one repetition, a letter of a class where it has one.
func suiteMatching(re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		r := re.Rune[0]
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= 'a' && 'a' <= re.Rune[i+1] {
				r = 'a'
				break
			}
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture, syntax.OpPlus, syntax.OpStar:
		suiteMatching(re.Sub[0], b)
	case syntax.OpRepeat:
		for range max(re.Min, min(re.Max, 1)) {
			suiteMatching(re.Sub[0], b)
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			suiteMatching(s, b)
		}
	case syntax.OpAlternate:
		suiteMatching(re.Sub[0], b)
	}
}
