package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Lists and watch streams are read by jsonReader, a streaming tokenizer of
// the few shapes they have (an envelope object, an items array, one event
// after another) that hands out each item or event as its raw JSON; the
// decoders then unmarshal those with encoding/json on several goroutines,
// and encoding/json validates them. jsonReader only finds where a value
// ends (strings, escapes, nesting), which is several times cheaper than
// decoding it, so the one goroutine that reads the stream keeps ahead of
// the decoders. The envelope's own syntax (commas, colons, names) is
// checked here, and a value skipped is validated, so that a list decodes
// where json.Unmarshal decodes it and fails where it fails.

// unmarshal decodes one JSON value, raw, which the caller has read whole,
// into v.
func unmarshal[T any](raw []byte, v *T) error { return json.Unmarshal(raw, v) }

// jsonReader reads JSON tokens and whole values from r. A stream cut
// inside a value fails with io.ErrUnexpectedEOF, a broken one with r's
// error; a stream that ends between top-level values returns io.EOF.
// Errors are sticky.
type jsonReader struct {
	r     io.Reader // nil: buf is everything
	buf   []byte    // buf[pos:] is read and not yet consumed
	pos   int
	err   error    // the error every call returns from now on
	limit int      // the most bytes one value read from r may have
	rerr  error    // r's error, returned once buf is consumed
	stack []jsonIn // the open objects and arrays, innermost last
}

// jsonIn is where a reader is inside an object or array.
type jsonIn struct {
	object bool
	state  jsonState
}

type jsonState uint8

const (
	jsonFirst jsonState = iota // just opened: a value, a name or the end
	jsonComma                  // after a comma: a value or a name
	jsonColon                  // after a name and its colon: its value
	jsonAfter                  // after a value: a comma or the end
)

// minJSONRead is the least room a read into buf is given.
const minJSONRead = 16 << 10

// maxJSONValue bounds one value (a list's item, a watch event) read from a
// stream, so that a hostile server or proxy cannot grow the client's memory
// without end. client-go's watch decoder refuses an event over 16 MiB
// (apimachinery's streaming.NewDecoder, ErrObjectTooLarge) and its lists
// have no bound (rest.Request reads the body whole); kube stores no object
// over a few MiB (the apiserver's 3 MiB request bound), so this is loose.
const maxJSONValue = 64 << 20

func newJSONReader(r io.Reader) *jsonReader { return &jsonReader{r: r, limit: maxJSONValue} }

func (d *jsonReader) tooLarge() error {
	d.err = fmt.Errorf("a JSON value over %d bytes, the client's bound on one list item or watch event", d.limit)
	return d.err
}

// reset makes d read data, which it does not copy, and nothing else.
func (d *jsonReader) reset(data []byte) {
	*d = jsonReader{buf: data, stack: d.stack[:0]}
}

// fill reads more of r into buf, keeping buf[keep:] (moved to the front).
// It returns false when r has nothing more.
func (d *jsonReader) fill(keep int) bool {
	if d.r == nil || d.rerr != nil {
		if d.rerr == nil {
			d.rerr = io.EOF
		}
		return false
	}
	n := len(d.buf) - keep
	if keep > 0 {
		copy(d.buf, d.buf[keep:])
		d.pos -= keep
		d.buf = d.buf[:n]
	}
	if cap(d.buf)-n < minJSONRead {
		// scan keeps at most limit bytes: room for that and one read is enough.
		c := min(2*cap(d.buf)+minJSONRead, d.limit+minJSONRead)
		d.buf = append(make([]byte, 0, c), d.buf[:n]...)
	}
	m, err := d.r.Read(d.buf[n:cap(d.buf)])
	d.buf = d.buf[:n+m]
	if err != nil {
		d.rerr = err
	}
	return m > 0 || err == nil
}

// eofErr is the error of a stream that ended here.
func (d *jsonReader) eofErr() error {
	if d.rerr != io.EOF {
		return d.rerr
	}
	if len(d.stack) > 0 {
		return io.ErrUnexpectedEOF
	}
	return io.EOF
}

func (d *jsonReader) syntax(format string, args ...any) error {
	d.err = fmt.Errorf("invalid JSON: "+format, args...)
	return d.err
}

// peekKind returns the first byte of the next token ('{', '}', '[', ']',
// '"', 'n', 't', 'f', or a number's first byte), consuming the comma
// before it; 0 when there is none (the next call returns why).
func (d *jsonReader) peekKind() byte {
	c := d.skipSpace()
	if c == ',' && len(d.stack) > 0 && d.stack[len(d.stack)-1].state == jsonAfter {
		d.stack[len(d.stack)-1].state = jsonComma
		d.pos++
		c = d.skipSpace()
	}
	return c
}

// skipSpace skips whitespace and returns the next byte, 0 at an error.
func (d *jsonReader) skipSpace() byte {
	for d.err == nil {
		for ; d.pos < len(d.buf); d.pos++ {
			switch c := d.buf[d.pos]; c {
			case ' ', '\t', '\n', '\r':
			default:
				return c
			}
		}
		if !d.fill(d.pos) {
			d.err = d.eofErr()
		}
	}
	return 0
}

// beginValue checks that a value may start here.
func (d *jsonReader) beginValue(c byte) error {
	if d.err != nil {
		return d.err
	}
	if len(d.stack) == 0 {
		return nil
	}
	in := d.stack[len(d.stack)-1]
	switch {
	case in.object && in.state != jsonColon:
		return d.syntax("%q where a member's name belongs", c)
	case !in.object && in.state == jsonAfter:
		return d.syntax("%q after an array element, want ',' or ']'", c)
	}
	return nil
}

// endValue notes that a value ended.
func (d *jsonReader) endValue() {
	if len(d.stack) > 0 {
		d.stack[len(d.stack)-1].state = jsonAfter
	}
}

// readDelim reads the next token, which must be the delimiter want.
func (d *jsonReader) readDelim(want byte) error {
	c := d.peekKind()
	if d.err != nil {
		return d.err
	}
	if c != want {
		return d.syntax("want %q, got %q", want, c)
	}
	switch want {
	case '{', '[':
		if err := d.beginValue(c); err != nil {
			return err
		}
		d.stack = append(d.stack, jsonIn{object: want == '{'})
	default: // '}', ']'
		n := len(d.stack)
		if n == 0 || d.stack[n-1].object != (want == '}') {
			return d.syntax("unexpected %q", want)
		}
		if s := d.stack[n-1].state; s == jsonComma || s == jsonColon {
			return d.syntax("%q after ',' or ':'", want)
		}
		d.stack = d.stack[:n-1]
		d.endValue()
	}
	d.pos++
	return nil
}

// readName reads the name of an object's next member and its colon.
func (d *jsonReader) readName() (string, error) {
	c := d.peekKind()
	if d.err != nil {
		return "", d.err
	}
	n := len(d.stack)
	if n == 0 || !d.stack[n-1].object || d.stack[n-1].state == jsonColon || d.stack[n-1].state == jsonAfter {
		return "", d.syntax("%q where no member's name belongs", c)
	}
	if c != '"' {
		return "", d.syntax("%q where a member's name belongs", c)
	}
	raw, err := d.scan()
	if err != nil {
		return "", err
	}
	name := string(raw[1 : len(raw)-1])
	if needsUnquote(raw) {
		if err := json.Unmarshal(raw, &name); err != nil {
			return "", d.syntax("%v", err)
		}
	}
	if d.skipSpace() != ':' {
		if d.err != nil {
			return "", d.err
		}
		return "", d.syntax("want ':' after the name %q", name)
	}
	d.pos++
	d.stack[n-1].state = jsonColon
	return name, nil
}

// needsUnquote: a quoted string holds an escape or a control character
// (which json.Unmarshal refuses).
func needsUnquote(quoted []byte) bool {
	for _, c := range quoted {
		if c == '\\' || c < 0x20 {
			return true
		}
	}
	return false
}

// readValue reads the next value whole. It is not validated (decoding it
// does that); the slice is valid until the next call.
func (d *jsonReader) readValue() ([]byte, error) {
	c := d.peekKind()
	if err := d.beginValue(c); err != nil {
		return nil, err
	}
	switch c {
	case ',', ':', '}', ']':
		return nil, d.syntax("unexpected %q", c)
	}
	raw, err := d.scan()
	if err != nil {
		return nil, err
	}
	d.endValue()
	return raw, nil
}

// skipValue reads the next value, which must be valid JSON.
func (d *jsonReader) skipValue() error {
	raw, err := d.readValue()
	if err == nil && !json.Valid(raw) {
		return d.syntax("%.40q", raw)
	}
	return err
}

// scan reads the value that starts at pos and returns it.
func (d *jsonReader) scan() ([]byte, error) {
	var s scanState
	i := d.pos
	for {
		end := d.scanFrom(i, &s)
		read := end // the value's bytes so far
		if end < 0 {
			read = len(d.buf)
		}
		if d.r != nil && read-d.pos > d.limit {
			return nil, d.tooLarge()
		}
		if end >= 0 {
			raw := d.buf[d.pos:end]
			d.pos = end
			return raw, nil
		}
		// buf ends inside the value: read more, keeping the value, and go
		// on where the scan stopped (s holds its state).
		scanned := len(d.buf) - d.pos
		if !d.fill(d.pos) {
			if s.depth == 0 && !s.inString && len(d.stack) == 0 {
				raw := d.buf[d.pos:] // a scalar at the end of the stream ends there
				d.pos = len(d.buf)
				return raw, nil
			}
			if d.err = d.eofErr(); d.err == io.EOF {
				d.err = io.ErrUnexpectedEOF
			}
			return nil, d.err
		}
		i = d.pos + scanned
	}
}

// scanState is where a scan cut by the end of buf stopped.
type scanState struct {
	depth    int  // open objects and arrays
	inString bool // inside a string
	escaped  bool // inside a string, after an odd run of backslashes
}

// scanFrom scans buf from i, inside a value whose first byte is at pos
// and where *s says. It returns where the value ends, or -1 when buf ends
// first (s then says where it stopped).
func (d *jsonReader) scanFrom(i int, s *scanState) int {
	b := d.buf
	if s.inString {
		if i = stringEnd(b, i, &s.escaped); i < 0 {
			return -1
		}
		s.inString = false
		if s.depth == 0 {
			return i
		}
	}
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			if i = stringEnd(b, i+1, &s.escaped); i < 0 {
				s.inString = true
				return -1
			}
			if s.depth == 0 {
				return i
			}
			continue
		case '{', '[':
			s.depth++
		case '}', ']':
			if s.depth == 0 { // ends a scalar
				return i
			}
			if s.depth--; s.depth == 0 {
				return i + 1
			}
		case ' ', '\t', '\n', '\r', ',', ':':
			if s.depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}

// stringEnd returns the index after the string whose bytes continue at
// b[i], b[i] being escaped if *escaped; or -1 if b ends inside it, with
// *escaped telling whether b's last byte starts an escape. A backslash is
// only counted after i, so that a string cut again and again is scanned
// once.
func stringEnd(b []byte, i int, escaped *bool) int {
	if *escaped {
		if i == len(b) {
			return -1
		}
		i++
		*escaped = false
	}
	for j := i; ; j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			*escaped = backslashesBefore(b, len(b), i)%2 == 1
			return -1
		}
		j += k
		if backslashesBefore(b, j, i)%2 == 0 {
			return j + 1
		}
	}
}

// backslashesBefore counts the backslashes right before b[j], from b[i] on.
func backslashesBefore(b []byte, j, i int) int {
	n := 0
	for p := j - 1; p >= i && b[p] == '\\'; p-- {
		n++
	}
	return n
}

// decodeValue decodes d's next value into v.
func decodeValue[T any](d *jsonReader, v *T) error {
	raw, err := d.readValue()
	if err != nil {
		return err
	}
	return unmarshal(raw, v)
}

// errTrailing: more than whitespace follows what was read.
var errTrailing = errors.New("invalid JSON: data after the top-level value")

// end checks that nothing but whitespace is left.
func (d *jsonReader) end() error {
	if c := d.skipSpace(); c != 0 {
		return errTrailing
	}
	if d.err == io.EOF {
		return nil
	}
	return d.err
}
