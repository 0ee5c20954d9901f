package server

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pets = "/apis/example.com/v1/namespaces/default/pets"

// petCRD defines pets, whose color, legs and tame are selectable fields.
const petCRD = `{"metadata":{"name":"pets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"pets","kind":"Pet"},
	"versions":[{"name":"v1","served":true,"storage":true,
		"selectableFields":[{"jsonPath":".spec.color"},{"jsonPath":".spec.legs"},{"jsonPath":".spec.tame"}],
		"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
			"color":{"type":"string"},"legs":{"type":"integer"},"tame":{"type":"boolean"}}}}}}}]}}`

func pet(name, spec string) string {
	return `{"apiVersion":"example.com/v1","kind":"Pet","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

// names lists the names of a list's items.
func names(list any) []string {
	var out []string
	items, _ := at(list, "items").([]any)
	for _, it := range items {
		out = append(out, at(it, "metadata.name").(string))
	}
	return out
}

// TestSelectableFields checks that a version's selectableFields are field
// selector keys on list, with values printed as kube prints them, and that
// other keys are refused with kube's message.
func TestSelectableFields(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", crdsPath, "", petCRD); r.code != 201 {
		t.Fatalf("definition: %d %v", r.code, r.obj)
	}
	for _, p := range []string{pet("rex", `{"color":"brown","legs":4,"tame":true}`), pet("tweety", `{"color":"yellow","legs":2,"tame":false}`), pet("blob", `{}`)} {
		if r := do(t, ts, "POST", pets, "", p); r.code != 201 {
			t.Fatalf("create: %d %v", r.code, r.obj)
		}
	}
	for sel, want := range map[string][]string{
		"spec.color=brown":            {"rex"},
		"spec.legs=2":                 {"tweety"},
		"spec.tame=true":              {"rex"},
		"spec.tame!=true":             {"blob", "tweety"},
		"spec.color=":                 {"blob"},
		"spec.legs=4,spec.tame=false": nil,
		"metadata.name=blob":          {"blob"},
	} {
		for _, rv := range []string{"", "&resourceVersion=0"} { // storage and watch cache
			r := do(t, ts, "GET", pets+"?fieldSelector="+sel+rv, "", "")
			if r.code != 200 {
				t.Fatalf("%s: %d %v", sel, r.code, r.obj)
			}
			if diff := cmp.Diff(want, names(r.obj)); diff != "" {
				t.Errorf("%s%s (-want +got):\n%s", sel, rv, diff)
			}
		}
	}
	r := do(t, ts, "GET", pets+"?fieldSelector=spec.size=M", "", "")
	if r.code != 400 || at(r.obj, "message") != "field label not supported: spec.size" {
		t.Errorf("unsupported field: %d %v", r.code, r.obj)
	}
}

// TestSelectableFieldWatch checks a watch with a selectable field selector:
// an object leaving the selection is DELETED for the watcher and one
// entering it ADDED, as kube's watch cache sends them.
func TestSelectableFieldWatch(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", crdsPath, "", petCRD); r.code != 201 {
		t.Fatalf("definition: %d %v", r.code, r.obj)
	}
	list := do(t, ts, "GET", pets, "", "")
	rv := at(list.obj, "metadata.resourceVersion").(string)
	for _, st := range []struct{ method, path, body string }{
		{"POST", pets, pet("rex", `{"color":"brown"}`)},
		{"POST", pets, pet("tom", `{"color":"black"}`)},
		{"PATCH", pets + "/rex", `{"spec":{"color":"grey"}}`},
		{"PATCH", pets + "/tom", `{"spec":{"color":"brown"}}`},
		{"PATCH", pets + "/tom", `{"spec":{"legs":4}}`},
		{"DELETE", pets + "/tom", ""},
	} {
		if r := do(t, ts, st.method, st.path, "", st.body); r.code >= 300 {
			t.Fatalf("%s %s: %d %v", st.method, st.path, r.code, r.obj)
		}
	}
	resp, err := ts.Client().Get(ts.URL + pets + "?watch=true&timeoutSeconds=1&fieldSelector=spec.color%3Dbrown&resourceVersion=" + rv)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	var got []string
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+ev.Object.Metadata.Name)
	}
	want := []string{"ADDED rex", "DELETED rex", "ADDED tom", "MODIFIED tom", "DELETED tom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
