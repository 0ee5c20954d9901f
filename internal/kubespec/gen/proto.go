package main

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/openapi"
)

// The modules whose generated.proto files and Go types describe the served
// kinds' protobuf form. Kube's staging modules are versioned v0.X.Y for
// kube v1.X.Y.
var protoModules = []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/kube-aggregator"}

// protoSkipped are the group-versions whose Go types have JSON encodings of
// their own throughout (apiextensions' JSONSchemaProps unions and raw
// JSON): internal/protobuf describes them by hand.
var protoSkipped = map[string]bool{"apiextensions.k8s.io/v1": true}

// customMessages are the messages whose Go types marshal themselves, to
// protobuf and to JSON (metav1.Time's RFC 3339 string, a Quantity's
// canonical string, an IntOrString's number or string, a RawExtension's
// raw JSON): internal/protobuf knows each by name.
var customMessages = map[string]bool{
	"k8s.io.apimachinery.pkg.apis.meta.v1.Time":       true,
	"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime":  true,
	"k8s.io.apimachinery.pkg.apis.meta.v1.Duration":   true,
	"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1":   true,
	"k8s.io.apimachinery.pkg.api.resource.Quantity":   true,
	"k8s.io.apimachinery.pkg.util.intstr.IntOrString": true,
	"k8s.io.apimachinery.pkg.runtime.RawExtension":    true,
}

// metaKinds are kinds kube registers beyond the served group-versions'
// own: Status and DeleteOptions in every group-version (recorded under
// meta.k8s.io/v1, their Go package's), and the metadata-only views clients
// ask for with as=PartialObjectMetadata(List).
var metaKinds = map[string]string{
	"meta.k8s.io/v1/Status":                         "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
	"meta.k8s.io/v1/DeleteOptions":                  "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
	"meta.k8s.io/v1/PartialObjectMetadata":          "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
	"meta.k8s.io/v1/PartialObjectMetadataList":      "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
	"meta.k8s.io/v1beta1/PartialObjectMetadataList": "k8s.io/apimachinery/pkg/apis/meta/v1beta1/generated.proto",
	"meta.k8s.io/v1beta1/PartialObjectMetadata":     "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto", // an alias of v1's
}

// protoFile is what a generated.proto says.
type protoFile struct {
	pkg      string // the protobuf package, "k8s.io.api.core.v1"
	goDir    string // the Go package's directory
	messages map[string]*protoMessage
	imports  []string
}

type protoMessage struct {
	fields   []protoField
	nullable bool // +protobuf.nullable=true: a Go named slice
}

type protoField struct {
	label, typ, name string
	num              int
}

var (
	protoMessageLine = regexp.MustCompile(`^message (\w+) \{$`)
	protoFieldLine   = regexp.MustCompile(`^  (optional|repeated) ([\w.]+) (\w+) = (\d+);$`)
	protoMapLine     = regexp.MustCompile(`^  map<string, ([\w.]+)> (\w+) = (\d+);$`)
	protoImportLine  = regexp.MustCompile(`^import "(.+)";$`)
	protoPackageLine = regexp.MustCompile(`^package ([\w.]+);$`)
	groupNameLine    = regexp.MustCompile(`(?m)^const GroupName = "([^"]*)"$`)
	protoScalars     = []string{"string", "int32", "int64", "bool", "double", "bytes"}
)

// protoReader reads generated.proto files and their Go packages from the
// modules' directories.
type protoReader struct {
	dirs    map[string]string // module path -> directory
	files   map[string]*protoFile
	byPkg   map[string]*protoFile
	sources []kubespec.Source
}

// protobufData returns the protobuf form of the kinds of the served
// group-versions: for each, its Go package's generated.proto (field
// numbers and protobuf types) and Go types (JSON names, omitempty, pointers,
// inline fields), and those of every message they use.
func protobufData(gvs []api.APIResourceList, kinds map[string]string) (kubespec.Protobuf, error) {
	version := "v0." + strings.TrimPrefix(openapi.KubeVersion, "v1.")
	r := &protoReader{dirs: map[string]string{}, files: map[string]*protoFile{}, byPkg: map[string]*protoFile{}}
	for _, mod := range protoModules {
		dir, sum, err := download(mod + "@" + version)
		if err != nil {
			return kubespec.Protobuf{}, err
		}
		r.dirs[mod] = dir
		r.sources = append(r.sources, kubespec.Source{Module: mod, Version: version, Sum: sum})
	}
	served := map[string]bool{}
	for _, gv := range gvs {
		served[gv.GroupVersion] = true
	}
	out := kubespec.Protobuf{Kinds: map[string]string{}, Messages: map[string]kubespec.Message{}}
	for _, mod := range protoModules {
		registers, err := filepath.Glob(filepath.Join(r.dirs[mod], "*/*/register.go"))
		if err != nil {
			return out, err
		}
		more, _ := filepath.Glob(filepath.Join(r.dirs[mod], "pkg/apis/*/*/register.go"))
		for _, reg := range append(registers, more...) {
			b, err := os.ReadFile(reg)
			if err != nil {
				return out, err
			}
			m := groupNameLine.FindSubmatch(b)
			if m == nil {
				continue
			}
			gv := filepath.Base(filepath.Dir(reg))
			if len(m[1]) > 0 {
				gv = string(m[1]) + "/" + gv
			}
			if !served[gv] || protoSkipped[gv] {
				continue
			}
			rel, _ := filepath.Rel(r.dirs[mod], filepath.Join(filepath.Dir(reg), "generated.proto"))
			f, err := r.read(mod + "/" + filepath.ToSlash(rel))
			if err != nil {
				return out, err
			}
			group, version, _ := strings.Cut(gv, "/")
			if version == "" {
				group, version = "", group
			}
			for name := range f.messages {
				if kinds[group+"/"+version+"/"+name] == "" {
					continue
				}
				full := f.pkg + "." + name
				out.Kinds[group+"/"+version+"/"+name] = full
				if err := r.add(out.Messages, full); err != nil {
					return out, err
				}
			}
		}
	}
	for _, gvk := range slices.Sorted(maps.Keys(metaKinds)) {
		f, err := r.read(metaKinds[gvk])
		if err != nil {
			return out, err
		}
		full := f.pkg + "." + gvk[strings.LastIndex(gvk, "/")+1:]
		out.Kinds[gvk] = full
		if err := r.add(out.Messages, full); err != nil {
			return out, err
		}
	}
	out.Sources = r.sources
	return out, nil
}

// add records the message called full and every message it uses.
func (r *protoReader) add(msgs map[string]kubespec.Message, full string) error {
	if _, ok := msgs[full]; ok {
		return nil
	}
	if customMessages[full] {
		msgs[full] = kubespec.Message{Custom: true}
		return nil
	}
	pkg, name := full[:strings.LastIndex(full, ".")], full[strings.LastIndex(full, ".")+1:]
	f := r.byPkg[pkg]
	if f == nil || f.messages[name] == nil {
		return fmt.Errorf("message %s: not found", full)
	}
	m, err := r.joinGo(f, name)
	if err != nil {
		return fmt.Errorf("message %s: %w", full, err)
	}
	msgs[full] = m
	for _, fd := range m.Fields {
		if !slices.Contains(protoScalars, fd.Type) {
			if err := r.add(msgs, fd.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// read parses the generated.proto at path (module path and file) and,
// recursively, those it imports.
func (r *protoReader) read(path string) (*protoFile, error) {
	if f, ok := r.files[path]; ok {
		return f, nil
	}
	var mod string
	for m := range r.dirs {
		if strings.HasPrefix(path, m+"/") && len(m) > len(mod) {
			mod = m
		}
	}
	if mod == "" {
		return nil, fmt.Errorf("%s: in none of the modules read", path)
	}
	file := filepath.Join(r.dirs[mod], strings.TrimPrefix(path, mod+"/"))
	f, err := parseProto(file)
	if err != nil {
		return nil, err
	}
	f.goDir = filepath.Dir(file)
	r.files[path] = f
	r.byPkg[f.pkg] = f
	for i := range r.sources {
		if r.sources[i].Module == mod {
			r.sources[i].Files = append(r.sources[i].Files, strings.TrimPrefix(path, mod+"/"))
		}
	}
	for _, imp := range f.imports {
		if _, err := r.read(imp); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// parseProto reads the messages of a file go-to-protobuf wrote: one
// message per block, one field per line, types qualified with a leading
// dot or local to the file's package.
func parseProto(file string) (*protoFile, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f := &protoFile{messages: map[string]*protoMessage{}}
	var cur *protoMessage
	nullable := false
	qualify := func(t string) string {
		switch {
		case slices.Contains(protoScalars, t):
			return t
		case strings.HasPrefix(t, "."):
			return t[1:]
		}
		return f.pkg + "." + t
	}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if m := protoPackageLine.FindStringSubmatch(line); m != nil {
			f.pkg = m[1]
		} else if m := protoImportLine.FindStringSubmatch(line); m != nil {
			f.imports = append(f.imports, m[1])
		} else if line == "// +protobuf.nullable=true" {
			nullable = true
		} else if m := protoMessageLine.FindStringSubmatch(line); m != nil {
			cur = &protoMessage{nullable: nullable}
			f.messages[m[1]] = cur
			nullable = false
		} else if line == "}" {
			cur = nil
		} else if m := protoFieldLine.FindStringSubmatch(line); m != nil && cur != nil {
			n, _ := strconv.Atoi(m[4])
			cur.fields = append(cur.fields, protoField{label: m[1], typ: qualify(m[2]), name: m[3], num: n})
		} else if m := protoMapLine.FindStringSubmatch(line); m != nil && cur != nil {
			n, _ := strconv.Atoi(m[3])
			cur.fields = append(cur.fields, protoField{label: "map", typ: qualify(m[1]), name: m[2], num: n})
		} else if cur != nil && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "  //") && strings.TrimSpace(line) != "" {
			return nil, fmt.Errorf("%s: a line not understood: %q", file, line)
		}
	}
	if f.pkg == "" {
		return nil, fmt.Errorf("%s: no package", file)
	}
	return f, sc.Err()
}

// goStructs caches the parsed Go packages, by directory.
var goStructs = map[string]map[string]ast.Expr{}

// goTypes returns the type declarations of the Go package in dir, and
// fails if a type other than the custom ones marshals itself to JSON.
func goTypes(dir string) (map[string]ast.Expr, error) {
	if t, ok := goStructs[dir]; ok {
		return t, nil
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, err
	}
	types := map[string]ast.Expr{}
	for _, p := range pkgs {
		for _, file := range p.Files {
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok {
							types[ts.Name.Name] = ts.Type
						}
					}
				case *ast.FuncDecl:
					if d.Recv != nil && (d.Name.Name == "MarshalJSON" || d.Name.Name == "UnmarshalJSON") {
						types["json:"+receiverName(d.Recv.List[0].Type)] = nil
					}
				}
			}
		}
	}
	goStructs[dir] = types
	return types, nil
}

// receiverName is the type name of a method's receiver.
func receiverName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	return typeName(e)
}

// typeName is the name of a named type, without its package.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// joinGo returns message name of f with what its Go type's fields say.
func (r *protoReader) joinGo(f *protoFile, name string) (kubespec.Message, error) {
	pm := f.messages[name]
	types, err := goTypes(f.goDir)
	if err != nil {
		return kubespec.Message{}, err
	}
	if _, ok := types["json:"+name]; ok {
		return kubespec.Message{}, fmt.Errorf("the Go type marshals itself to JSON")
	}
	if pm.nullable {
		if _, ok := types[name].(*ast.ArrayType); !ok || len(pm.fields) != 1 || pm.fields[0].label != "repeated" {
			return kubespec.Message{}, fmt.Errorf("nullable, but not a Go slice of one repeated field")
		}
		fd := pm.fields[0]
		return kubespec.Message{Slice: true, Fields: []kubespec.Field{{Name: fd.name, Number: fd.num, Type: fd.typ, Label: fd.label}}}, nil
	}
	st, ok := types[name].(*ast.StructType)
	if !ok {
		return kubespec.Message{}, fmt.Errorf("the Go type is not a struct")
	}
	var m kubespec.Message
	byNum := map[int]*ast.Field{}
	for _, gf := range st.Fields.List {
		if len(gf.Names) == 0 && typeName(gf.Type) == "TypeMeta" {
			m.TypeMeta = true
		}
		if gf.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(gf.Tag.Value)
		pb := strings.Split(reflect.StructTag(tag).Get("protobuf"), ",")
		if len(pb) < 2 {
			continue
		}
		n, err := strconv.Atoi(pb[1])
		if err != nil {
			return kubespec.Message{}, fmt.Errorf("protobuf tag %q", tag)
		}
		byNum[n] = gf
	}
	for _, fd := range pm.fields {
		gf := byNum[fd.num]
		if gf == nil {
			return m, fmt.Errorf("field %s (%d): no Go field", fd.name, fd.num)
		}
		tag, _ := strconv.Unquote(gf.Tag.Value)
		jsonName, opts, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if jsonName == "-" {
			continue // not in the JSON form: never written, dropped when read
		}
		_, ptr := gf.Type.(*ast.StarExpr)
		if arr, ok := gf.Type.(*ast.ArrayType); ok {
			if id, ok := arr.Elt.(*ast.Ident); ok && id.Name == "byte" {
				ptr = true // a []byte is nil when unset, as a pointer
			}
		}
		out := kubespec.Field{Name: jsonName, Number: fd.num, Type: fd.typ, Label: fd.label, Pointer: ptr,
			Inline: jsonName == "" && (len(gf.Names) == 0 || slices.Contains(strings.Split(opts, ","), "inline"))}
		for _, o := range strings.Split(opts, ",") {
			out.OmitEmpty = out.OmitEmpty || o == "omitempty"
			out.OmitZero = out.OmitZero || o == "omitzero"
		}
		if out.Inline {
			out.Name = fd.name
		} else if jsonName == "" {
			return m, fmt.Errorf("field %s (%d): no JSON name", fd.name, fd.num)
		}
		m.Fields = append(m.Fields, out)
	}
	return m, nil
}
