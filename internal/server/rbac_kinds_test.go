package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	rbacV1       = "/apis/rbac.authorization.k8s.io/v1"
	roles        = rbacV1 + "/namespaces/default/roles"
	clusterRoles = rbacV1 + "/clusterroles"
	roleBindings = rbacV1 + "/namespaces/default/rolebindings"
	crBindings   = rbacV1 + "/clusterrolebindings"
)

// TestRBACKinds writes each RBAC kind under the names kube's own roles
// use ("system:..."), and reads back kube's defaults, Table columns and
// discovery.
func TestRBACKinds(t *testing.T) {
	ts := newTestServer(t)
	code, role := call(t, ts, "POST", clusterRoles, mediaJSON, `{"metadata":{"name":"system:team-reader"},
		"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"]},{"verbs":["get"],"nonResourceURLs":["/healthz","/metrics/*"]}]}`)
	if code != http.StatusCreated || at(role, "rules.1.nonResourceURLs.1") != "/metrics/*" {
		t.Fatalf("create clusterrole: %d %v", code, role)
	}
	code, podReader := call(t, ts, "POST", roles, mediaJSON, `{"metadata":{"name":"pod-reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":["a"]}]}`)
	if code != http.StatusCreated {
		t.Fatalf("create role: %d %v", code, podReader)
	}
	code, rb := call(t, ts, "POST", roleBindings, mediaJSON, `{"metadata":{"name":"read-pods"},"roleRef":{"kind":"Role","name":"pod-reader"},
		"subjects":[{"kind":"User","name":"jane"},{"kind":"ServiceAccount","name":"default","namespace":"kube-system"},{"kind":"Group","name":"devs"},{"kind":"User","name":"joe"}]}`)
	if code != http.StatusCreated || at(rb, "roleRef.apiGroup") != "rbac.authorization.k8s.io" ||
		at(rb, "subjects.0.apiGroup") != "rbac.authorization.k8s.io" || at(rb, "subjects.1.apiGroup") != nil {
		t.Fatalf("create rolebinding (roleRef and User/Group subjects get kube's apiGroup): %d %v", code, rb)
	}
	code, crb := call(t, ts, "POST", crBindings, mediaJSON, `{"metadata":{"name":"system:team-viewers"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create clusterrolebinding to a role that does not exist (allowed, as kube): %d %v", code, crb)
	}

	tests := []struct {
		path  string
		cols  []string
		wide  []int32
		cells []any
	}{
		{roles, []string{"Name", "Created At"}, []int32{0, 0}, []any{"pod-reader", at(podReader, "metadata.creationTimestamp")}},
		{roleBindings, []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}, []int32{0, 0, 0, 1, 1, 1},
			[]any{"read-pods", "Role/pod-reader", "0s", "jane, joe", "devs", "kube-system/default"}},
		{crBindings + "?fieldSelector=metadata.name=system:team-viewers", []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}, []int32{0, 0, 0, 1, 1, 1},
			[]any{"system:team-viewers", "ClusterRole/view", "0s", "", "", ""}},
	}
	for _, tt := range tests {
		r := exchange(t, ts, "GET", tt.path, http.Header{"Accept": {tableAccept}}, "")
		var cols []string
		var prio []int32
		for _, c := range r.obj["columnDefinitions"].([]any) {
			cols = append(cols, at(c, "name").(string))
			n, _ := at(c, "priority").(string)
			prio = append(prio, map[string]int32{"0": 0, "1": 1}[n])
		}
		if diff := cmp.Diff(tt.cols, cols); diff != "" {
			t.Errorf("%s: Table columns (-want +got):\n%s", tt.path, diff)
		}
		if diff := cmp.Diff(tt.wide, prio); diff != "" {
			t.Errorf("%s: priorities, 1 for -o wide (-want +got):\n%s", tt.path, diff)
		}
		cells, _ := at(r.obj, "rows.0.cells").([]any)
		if len(cells) > 2 && cells[2] == "1s" {
			cells[2] = "0s" // a second turned between create and get
		}
		if diff := cmp.Diff(tt.cells, cells); diff != "" {
			t.Errorf("%s: Table row (-want +got):\n%s", tt.path, diff)
		}
	}

	_, disc := call(t, ts, "GET", rbacV1, "", "")
	b, _ := json.Marshal(disc)
	for _, want := range []string{`"kind":"Role","name":"roles","namespaced":true`, `"kind":"ClusterRoleBinding","name":"clusterrolebindings","namespaced":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("discovery lacks %s: %s", want, b)
		}
	}
}

// TestRBACPutCreates checks kube's AllowCreateOnUpdate of the RBAC kinds:
// a PUT of a role that does not exist creates it; other kinds answer 404.
func TestRBACPutCreates(t *testing.T) {
	ts := newTestServer(t)
	body := `{"metadata":{"name":"new"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`
	if code, obj := call(t, ts, "PUT", roles+"/new", mediaJSON, body); code != http.StatusCreated || obj.UID() == "" {
		t.Fatalf("PUT of a new role: %d %v, want 201", code, obj)
	}
	if code, obj := call(t, ts, "PUT", roles+"/new", mediaJSON, body); code != http.StatusOK {
		t.Errorf("PUT of the role again: %d %v, want 200", code, obj)
	}
	if code, obj := call(t, ts, "PUT", roles+"/other", mediaJSON, body); code != http.StatusBadRequest ||
		obj["message"] != "the name of the object (new) does not match the name on the URL (other)" {
		t.Errorf("PUT under another name: %d %v, want 400", code, obj)
	}
	if code, _ := call(t, ts, "PUT", roles+"/bad", mediaJSON, `{"metadata":{"name":"bad"},"rules":[{}]}`); code != http.StatusUnprocessableEntity {
		t.Errorf("PUT of a new invalid role: %d, want 422", code)
	}
	if code, _ := call(t, ts, "GET", roles+"/bad", "", ""); code != http.StatusNotFound {
		t.Errorf("the invalid role was stored: %d", code)
	}
	if code, _ := call(t, ts, "PUT", "/api/v1/namespaces/default/configmaps/new", mediaJSON, `{"metadata":{"name":"new"}}`); code != http.StatusNotFound {
		t.Errorf("PUT of a new configmap: %d, want 404 as kube", code)
	}
}

// TestRBACPatch checks that the lists of RBAC objects are atomic, as
// k8s.io/api marks them: a strategic merge patch or an apply replaces
// rules and subjects whole, never merges them item by item.
func TestRBACPatch(t *testing.T) {
	ts := newTestServer(t)
	if code, r := call(t, ts, "POST", roles, mediaJSON, `{"metadata":{"name":"r"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]},{"verbs":["list"],"apiGroups":[""],"resources":["secrets"]}]}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, r)
	}
	code, patched := call(t, ts, "PATCH", roles+"/r", mediaSMP, `{"rules":[{"verbs":["watch"],"apiGroups":["apps"],"resources":["deployments"]}]}`)
	if want := []any{map[string]any{"verbs": []any{"watch"}, "apiGroups": []any{"apps"}, "resources": []any{"deployments"}}}; code != http.StatusOK || !cmp.Equal(want, patched["rules"]) {
		t.Errorf("strategic merge patch of rules: %d %v, want %v", code, patched["rules"], want)
	}
	code, applied := call(t, ts, "PATCH", roleBindings+"/b?fieldManager=m", mediaApplyYML,
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: b\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n- kind: User\n  name: a\n- kind: User\n  name: b\n")
	if code != http.StatusCreated || at(applied, "subjects.1.name") != "b" {
		t.Fatalf("apply: %d %v", code, applied)
	}
	code, applied = call(t, ts, "PATCH", roleBindings+"/b?fieldManager=m", mediaApplyYML,
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: b\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n- kind: Group\n  name: c\n")
	if subjects, _ := applied["subjects"].([]any); code != http.StatusOK || len(subjects) != 1 || at(applied, "subjects.0.name") != "c" {
		t.Errorf("apply of one subject over two: %d %v", code, applied["subjects"])
	}
	code, st := call(t, ts, "PATCH", roleBindings+"/b", mediaSMP, `{"roleRef":{"name":"other"}}`)
	if want := `RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: field is immutable`; code != http.StatusUnprocessableEntity || st["message"] != want {
		t.Errorf("a patch of roleRef: %d %v, want 422 %q", code, st["message"], want)
	}
	if _, got := call(t, ts, "GET", roleBindings+"/b", "", ""); at(got, "roleRef.name") != "r" {
		t.Errorf("a rejected patch changed roleRef: %v", got["roleRef"])
	}
}

// TestRBACValidation checks kube's messages for RBAC objects: those of
// pkg/apis/rbac/validation/validation.go (ValidateRole, ValidateClusterRole,
// ValidateRoleBinding, ValidateClusterRoleBinding) as apimachinery's
// field.Error words them, and the type checks kube's decoder makes.
func TestRBACValidation(t *testing.T) {
	ts := newTestServer(t)
	const (
		subdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
		labelValMsg  = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	)
	tests := []struct {
		name, path, body string
		want             string // the Status message; "" for 201
	}{
		{"role of system name", roles, `{"metadata":{"name":"system:x"},"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`, ""},
		{"unknown verb stored as kube does", roles, `{"metadata":{"name":"v"},"rules":[{"verbs":["frobnicate"],"apiGroups":["nope"],"resources":["nothing"]}]}`, ""},
		{"role of no rules", roles, `{"metadata":{"name":"none"}}`, ""},
		{"name with a percent sign", roles, `{"metadata":{"name":"a%2Fb"}}`,
			`Role.rbac.authorization.k8s.io "a%2Fb" is invalid: metadata.name: Invalid value: "a%2Fb": may not contain '%'`},
		{"name dot dot", clusterRoles, `{"metadata":{"name":".."}}`,
			`ClusterRole.rbac.authorization.k8s.io ".." is invalid: metadata.name: Invalid value: "..": may not be '..'`},
		{"rule without verbs", roles, `{"metadata":{"name":"r1"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`,
			`Role.rbac.authorization.k8s.io "r1" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`},
		{"resource rule without groups and resources", clusterRoles, `{"metadata":{"name":"r2"},"rules":[{"verbs":["get"]}]}`,
			`ClusterRole.rbac.authorization.k8s.io "r2" is invalid: [rules[0].apiGroups: Required value: resource rules must supply at least one api group, rules[0].resources: Required value: resource rules must supply at least one resource]`},
		{"non-resource URLs in a role", roles, `{"metadata":{"name":"r3"},"rules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}`,
			`Role.rbac.authorization.k8s.io "r3" is invalid: rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`},
		{"non-resource URLs mixed with resources", clusterRoles, `{"metadata":{"name":"r4"},"rules":[{"verbs":["get"],"resources":["pods"],"nonResourceURLs":["/a","/b"]}]}`,
			`ClusterRole.rbac.authorization.k8s.io "r4" is invalid: rules[0].nonResourceURLs: Invalid value: ["/a","/b"]: rules cannot apply to both regular resources and non-resource URLs`},
		{"aggregation without selectors", clusterRoles, `{"metadata":{"name":"r5"},"aggregationRule":{}}`,
			`ClusterRole.rbac.authorization.k8s.io "r5" is invalid: aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`},
		{"aggregation selectors", clusterRoles, `{"metadata":{"name":"r6"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.example.com/aggregate-to-view":"true"}},{}]}}`, ""},
		{"aggregation selector of a bad value", clusterRoles, `{"metadata":{"name":"r7"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b c"}}]}}`,
			`ClusterRole.rbac.authorization.k8s.io "r7" is invalid: [aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "b c": ` + labelValMsg + `, aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.]`},
		{"aggregation expression", clusterRoles, `{"metadata":{"name":"r8"},"aggregationRule":{"clusterRoleSelectors":[{"matchExpressions":[{"key":"k","operator":"In"},{"key":"k","operator":"Exists","values":["x"]},{"key":"k","operator":"Near"}]}]}}`,
			`ClusterRole.rbac.authorization.k8s.io "r8" is invalid: [aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn', ` +
				`aggregationRule.clusterRoleSelectors[0].matchExpressions[1].values: Forbidden: may not be specified when ` + "`operator`" + ` is 'Exists' or 'DoesNotExist', ` +
				`aggregationRule.clusterRoleSelectors[0].matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator, ` +
				`aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.]`},
		{"binding of no roleRef", roleBindings, `{"metadata":{"name":"b1"}}`,
			`RoleBinding.rbac.authorization.k8s.io "b1" is invalid: [roleRef.kind: Unsupported value: "": supported values: "Role", "ClusterRole", roleRef.name: Required value]`},
		{"cluster binding to a Role", crBindings, `{"metadata":{"name":"b2"},"roleRef":{"apiGroup":"example.com","kind":"Role","name":"a/b"}}`,
			`ClusterRoleBinding.rbac.authorization.k8s.io "b2" is invalid: [roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io", roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole", roleRef.name: Invalid value: "a/b": may not contain '/']`},
		{"subjects", crBindings, `{"metadata":{"name":"b3"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"Bad_Name","apiGroup":"x"},{"kind":"User","apiGroup":"other"},{"kind":"Robot","name":"r"}]}`,
			`ClusterRoleBinding.rbac.authorization.k8s.io "b3" is invalid: [subjects[0].name: Invalid value: "Bad_Name": ` + subdomainMsg + `, subjects[0].apiGroup: Unsupported value: "x": supported values: "", subjects[0].namespace: Required value, ` +
				`subjects[1].name: Required value, subjects[1].apiGroup: Unsupported value: "other": supported values: "rbac.authorization.k8s.io", ` +
				`subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"]`},
		{"service account subject in a role binding takes its namespace", roleBindings, `{"metadata":{"name":"b4"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"default"}]}`, ""},
		{"verbs not a list", roles, `{"metadata":{"name":"t1"},"rules":[{"verbs":"get","apiGroups":[""],"resources":[1]}]}`,
			`Role.rbac.authorization.k8s.io "t1" is invalid: [rules[0].verbs: Invalid value: must be a list, rules[0].resources[0]: Invalid value: must be a string]`},
		{"rules not a list", clusterRoles, `{"metadata":{"name":"t2"},"rules":{},"aggregationRule":[]}`,
			`ClusterRole.rbac.authorization.k8s.io "t2" is invalid: [rules: Invalid value: must be a list, aggregationRule: Invalid value: must be an object]`},
		{"roleRef not an object", roleBindings, `{"metadata":{"name":"t3"},"roleRef":"view","subjects":[{"kind":"User","name":7}]}`,
			`RoleBinding.rbac.authorization.k8s.io "t3" is invalid: [roleRef: Invalid value: must be an object, subjects[0].name: Invalid value: must be a string]`},
		{"selector labels not strings", clusterRoles, `{"metadata":{"name":"t4"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":true},"matchExpressions":[{"key":"k","operator":"In","values":"v"}]}]}}`,
			`ClusterRole.rbac.authorization.k8s.io "t4" is invalid: [aggregationRule.clusterRoleSelectors[0].matchLabels[a]: Invalid value: must be a string, aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Invalid value: must be a list]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, obj := call(t, ts, "POST", tt.path, mediaJSON, tt.body)
			if tt.want == "" {
				if code != http.StatusCreated {
					t.Errorf("got %d %v, want 201", code, obj)
				}
				return
			}
			if code != http.StatusUnprocessableEntity || obj["message"] != tt.want {
				t.Errorf("got %d\n%v\nwant 422\n%s", code, obj["message"], tt.want)
			}
		})
	}
	if code, obj := call(t, ts, "POST", roles, mediaJSON, `{"metadata":{"name":"`+strings.Repeat("n", 5000)+`"}}`); code != http.StatusBadRequest {
		t.Errorf("a name too long for a storage key: %d %v, want 400", code, obj["message"])
	}
}

// TestRBACProtobuf speaks protobuf as client-go's typed RbacV1 client does.
func TestRBACProtobuf(t *testing.T) {
	ts := newTestServer(t)
	binding := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "p"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
		"subjects": []any{map[string]any{"kind": "Group", "name": "g"}}}
	resp := protobufRequest(t, "POST", ts.URL+crBindings, binding)
	if created := decodeResponse(t, resp); resp.StatusCode != http.StatusCreated || at(created, "subjects.0.apiGroup") != "rbac.authorization.k8s.io" {
		t.Fatalf("create over protobuf: %d %v", resp.StatusCode, created)
	}
	list := decodeResponse(t, protobufRequest(t, "GET", ts.URL+crBindings+"?fieldSelector=metadata.name=p", nil))
	if list.Kind() != "ClusterRoleBindingList" || at(list, "items.0.roleRef.name") != "view" {
		t.Errorf("list over protobuf: %v", list)
	}
	bad := protobufRequest(t, "POST", ts.URL+clusterRoles, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "q"}, "rules": []any{map[string]any{"apiGroups": []any{""}}}})
	if bad.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a protobuf ClusterRole with a rule of no verbs: %d, want 422", bad.StatusCode)
	}
	bad.Body.Close()
}
