package watchcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
)

// attrs are what filters test of an object.
type attrs struct {
	ns     string
	labels map[string]string
	fields map[string]string
}

// fieldReader reads an object's attrs. fromJSON reads them from its JSON,
// skipping every value it does not need, so that an event is not decoded
// for its filters; fromObject reads them from the decoded object, and the
// two agree (FuzzFieldReader checks).
type fieldReader struct {
	paths map[string][]string
	root  *node // nil when fromJSON cannot read the paths
}

// node is a member of the JSON objects fromJSON descends into.
type node struct {
	members map[string]*node
	fields  []string // the selectable fields whose path ends here
	ns      bool     // metadata.namespace
	labels  bool     // metadata.labels
}

func (n *node) child(k string) *node {
	if n.members == nil {
		n.members = map[string]*node{}
	}
	c := n.members[k]
	if c == nil {
		c = &node{}
		n.members[k] = c
	}
	return c
}

// newFieldReader reads the selectable fields at paths, each the path of a
// scalar in the object, read as selector.FieldValue does (a missing or
// mistyped one reads as "").
func newFieldReader(paths map[string][]string) *fieldReader {
	r := &fieldReader{paths: paths, root: &node{}}
	md := r.root.child("metadata")
	md.child("namespace").ns = true
	md.child("labels").labels = true
	for f, p := range paths {
		n := r.root
		for _, k := range p {
			if n.labels {
				r.root = nil // a label as a field: left to fromObject
				return r
			}
			n = n.child(k)
		}
		n.fields = append(n.fields, f)
	}
	return r
}

// fromObject reads obj's attrs.
func (r *fieldReader) fromObject(obj api.Object) attrs {
	a := attrs{ns: obj.Namespace(), labels: obj.Labels(), fields: make(map[string]string, len(r.paths))}
	for f, p := range r.paths {
		var v any = map[string]any(obj)
		for _, k := range p {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		a.fields[f] = selector.FieldValue(v)
	}
	return a
}

// decoders are reused: a Decoder is a few hundred bytes to allocate.
var decoders = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// Duplicate names are checked only where fromJSON reads: elsewhere they
// cost a set per object and change nothing it reads.
var decoderOptions = jsontext.AllowDuplicateNames(true)

// errDuplicate is a member fromJSON reads given twice: encoding/json keeps
// the last one, and fromJSON leaves such rare input to fromObject.
var errDuplicate = errors.New("duplicate member")

// fromJSON reads the attrs of the object whose JSON is b; ok is false when
// it cannot (b is not one valid JSON object, repeats a member it reads, or
// has invalid UTF-8, which encoding/json replaces) and fromObject must.
func (r *fieldReader) fromJSON(b []byte) (a attrs, ok bool) {
	if r.root == nil {
		return attrs{}, false
	}
	d := decoders.Get().(*jsontext.Decoder)
	defer decoders.Put(d)
	d.Reset(bytes.NewBuffer(b), decoderOptions)
	a.fields = make(map[string]string, len(r.paths))
	for f := range r.paths {
		a.fields[f] = ""
	}
	if d.PeekKind() != '{' || readObject(d, r.root, &a) != nil {
		return attrs{}, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return attrs{}, false
	}
	if len(a.labels) == 0 {
		a.labels = nil // as api.Object.Labels gives
	}
	return a, true
}

// readObject reads the object that comes next in d, descending into the
// members n has and skipping the others.
func readObject(d *jsontext.Decoder, n *node, a *attrs) error {
	if _, err := d.ReadToken(); err != nil { // '{'
		return err
	}
	var seen []*node
	for d.PeekKind() != '}' {
		k, err := readString(d)
		if err != nil {
			return err
		}
		c := n.members[string(k)]
		if c == nil {
			if _, err := d.ReadValue(); err != nil {
				return err
			}
			continue
		}
		if slices.Contains(seen, c) {
			return errDuplicate
		}
		seen = append(seen, c)
		if err := readMember(d, c, a); err != nil {
			return err
		}
	}
	_, err := d.ReadToken() // '}'
	return err
}

// readMember reads the value of member n that comes next in d.
func readMember(d *jsontext.Decoder, n *node, a *attrs) error {
	switch d.PeekKind() {
	case '"':
		if !n.ns && len(n.fields) == 0 {
			break
		}
		s, err := readString(d)
		if err != nil {
			return err
		}
		str := string(s)
		if n.ns {
			a.ns = str
		}
		for _, f := range n.fields {
			a.fields[f] = str
		}
		return nil
	case '0', 't', 'f':
		if len(n.fields) == 0 {
			break
		}
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		v := string(raw) // true or false
		if raw[0] != 't' && raw[0] != 'f' {
			v = selector.FieldValue(json.Number(raw))
		}
		for _, f := range n.fields {
			a.fields[f] = v
		}
		return nil
	case '{':
		if n.labels {
			return readLabels(d, a)
		}
		if n.members != nil {
			return readObject(d, n, a)
		}
	}
	_, err := d.ReadValue()
	return err
}

// readLabels reads the labels object that comes next in d: its string
// values, the last of a repeated key as encoding/json keeps it.
func readLabels(d *jsontext.Decoder, a *attrs) error {
	if _, err := d.ReadToken(); err != nil { // '{'
		return err
	}
	a.labels = map[string]string{}
	for d.PeekKind() != '}' {
		k, err := readString(d)
		if err != nil {
			return err
		}
		key := string(k)
		if d.PeekKind() != '"' {
			delete(a.labels, key)
			if _, err := d.ReadValue(); err != nil {
				return err
			}
			continue
		}
		v, err := readString(d)
		if err != nil {
			return err
		}
		a.labels[key] = string(v)
	}
	_, err := d.ReadToken() // '}'
	return err
}

// readString reads the string (a name or a value) that comes next in d:
// its bytes in d's buffer, valid until d's next read, unless it has escapes.
func readString(d *jsontext.Decoder) ([]byte, error) {
	raw, err := d.ReadValue()
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	return jsontext.AppendUnquote(nil, raw)
}
