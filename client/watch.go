package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client/api"
)

// maxWatchErrorBody bounds how much of a refused watch's body is read.
const maxWatchErrorBody = 1 << 20

// openWatch sends a watch request and starts decoding its stream: JSON, or
// protobuf frames when protoDecode is set and the server answers so. A
// watch is neither retried nor bounded by the client's request timeout:
// its length is the server's (timeoutSeconds).
func openWatch[T any](ctx context.Context, c *Client, r *request, protoDecode func([]byte, *T, api.TypeMeta) error) (Watch[T], error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.send(ctx, r)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxWatchErrorBody))
		return nil, statusError(resp.StatusCode, resp.Header, body)
	}
	src := newDrainReader(resp.Body)
	codec := jsonEvents[T](src)
	if protoDecode != nil && isProtobuf(resp.Header.Get("Content-Type")) {
		codec = protoEvents(src, protoDecode)
	}
	return newStreamWatch(ctx, cancel, resp.Body, src, codec), nil
}

// streamWatch decodes a stream of watch events, as kube-apiserver writes
// them: JSON (one {"type","object"} object after another; newlines are not
// required, and an event may arrive in any number of pieces), or protobuf
// frames. One goroutine reads the stream; it ends at the end of the stream,
// on Stop, or when the context ends, and then closes the events channel.
//
// The reading goroutine only splits the stream into each event's encoding
// and decodes the events as a list's items are decoded (itemDecoder): in
// batches, on GOMAXPROCS decoders from the first full batch, delivered in
// order. Whenever it has split everything received so far (src is
// drained), it decodes the rest itself and delivers every event before it
// waits for more, so that an event is never held back for a batch to fill:
// a burst (a streaming list's initial events) is decoded in parallel, and a
// lone event is decoded and delivered at once, as it was read.
type streamWatch[T any] struct {
	events chan Event[T]
	src    *drainReader  // body, as codec reads it
	codec  eventCodec[T] // splits src into events and decodes them
	body   io.ReadCloser
	cancel context.CancelFunc // ends the request (and so the body)
	stop   chan struct{}      // closed by Stop
	once   sync.Once
	done   chan struct{} // closed when the reader has returned

	mu  sync.Mutex
	err error // guarded by mu; why the stream ended
}

var _ Watch[Unstructured] = (*streamWatch[Unstructured])(nil)

// NewStreamWatch decodes the watch events of body, a watch response's
// body, into a Watch: for a body from a transport this client does not
// make (a WebSocket, a test). Stop closes body.
func NewStreamWatch[T any](body io.ReadCloser) Watch[T] {
	ctx, cancel := context.WithCancel(context.Background())
	src := newDrainReader(body)
	return newStreamWatch(ctx, cancel, body, src, jsonEvents[T](src))
}

func newStreamWatch[T any](ctx context.Context, cancel context.CancelFunc, body io.ReadCloser, src *drainReader, codec eventCodec[T]) *streamWatch[T] {
	w := &streamWatch[T]{
		events: make(chan Event[T]), src: src, codec: codec, body: body, cancel: cancel,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go w.run(ctx)
	return w
}

// Events delivers the decoded events; it is closed when the stream ends.
func (w *streamWatch[T]) Events() <-chan Event[T] { return w.events }

// Err says why the stream ended once Events is closed: nil at the server's
// clean end of the stream and after Stop, the Status error of an ERROR
// event, the context's error, or a broken connection or stream.
func (w *streamWatch[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch, closes its connection and waits for its goroutine.
// It may be called more than once and from any goroutine.
func (w *streamWatch[T]) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.cancel()
		w.body.Close()
	})
	<-w.done
}

func (w *streamWatch[T]) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	defer w.body.Close()
	d := &itemDecoder[Event[T]]{
		batchBytes: eventBatchBytes,
		decodeItem: w.codec.decode,
		emit:       func(evs []Event[T]) error { return w.send(ctx, evs) },
		wrap:       func(_ int, err error) error { return err },
	}
	defer d.stop()
	w.src.drained = d.flush
	w.end(ctx, w.read(d))
}

// read splits the stream into events and gives them to d until the stream
// ends, d fails (an event that does not decode), or an event delivered
// ends the watch. The events read before the end are delivered first.
func (w *streamWatch[T]) read(d *itemDecoder[Event[T]]) error {
	for {
		raw, err := w.codec.split()
		if w.src.err != nil {
			return w.src.err // delivering the events before failed or ended the watch
		}
		if err != nil {
			if ferr := d.flush(); ferr != nil {
				return ferr
			}
			return err
		}
		if err := d.add(raw); err != nil {
			return err
		}
	}
}

// errStopped: Stop ended the watch while events were being delivered.
var errStopped = errors.New("watch stopped")

// send delivers events in order. An ERROR event ends the watch with its
// error.
func (w *streamWatch[T]) send(ctx context.Context, evs []Event[T]) error {
	for _, ev := range evs {
		select {
		case w.events <- ev:
		case <-w.stop:
			return errStopped
		case <-ctx.Done():
			return ctx.Err()
		}
		if ev.Type == Error {
			return ev.Err
		}
	}
	return nil
}

// end records why the stream ended: nothing at a clean EOF or after Stop.
func (w *streamWatch[T]) end(ctx context.Context, err error) {
	select {
	case <-w.stop:
		return
	default:
	}
	if errors.Is(err, io.EOF) {
		return
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// bookmarkMeta is what a bookmark's object says beyond its resourceVersion.
type bookmarkMeta struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// eventCodec reads the events of a watch stream: split returns the
// encoding of the next event (valid until the next call; io.EOF when the
// stream ended between events, io.ErrUnexpectedEOF inside one), which
// decode decodes, on any goroutine.
type eventCodec[T any] struct {
	split  func() ([]byte, error)
	decode func(raw []byte, ev *Event[T]) error
}

// jsonEvents returns the codec of the JSON watch events of body: each
// event is one JSON value, split by a syntactic scan.
func jsonEvents[T any](body io.Reader) eventCodec[T] {
	dec := newJSONReader(body)
	split := func() ([]byte, error) { return dec.readValue() }
	return eventCodec[T]{split: split, decode: decodeRawEvent[T]}
}

// rawEventReaders are pooled, as a reader keeps its stack.
var rawEventReaders = sync.Pool{New: func() any { return new(jsonReader) }}

// decodeRawEvent decodes the JSON event raw.
func decodeRawEvent[T any](raw []byte, ev *Event[T]) (err error) {
	r := rawEventReaders.Get().(*jsonReader)
	r.reset(raw)
	*ev, err = decodeEvent[T](r)
	r.reset(nil)
	rawEventReaders.Put(r)
	return err
}

// decodeEvent reads the next event from dec. A stream that ends between
// events returns io.EOF; one that ends inside an event, io.ErrUnexpectedEOF.
//
// It reads the event's members as tokens, so that the object of an ADDED,
// MODIFIED or DELETED event whose type comes first (as kube-apiserver
// writes it) is decoded straight into T, in one pass. An object that comes
// before the type, and the objects of BOOKMARK and ERROR events, are copied
// as raw JSON first and then decoded.
func decodeEvent[T any](dec *jsonReader) (Event[T], error) {
	if c := dec.peekKind(); c != '{' && c != 0 {
		return Event[T]{}, fmt.Errorf("watch event is not an object: %q", c)
	}
	if err := dec.readDelim('{'); err != nil {
		return Event[T]{}, err // io.EOF: the stream ended between events
	}
	return decodeEventMembers[T](dec)
}

// decodeEventMembers reads an event's members and its closing brace.
func decodeEventMembers[T any](dec *jsonReader) (Event[T], error) {
	var (
		typ     EventType
		obj     *T     // the object, decoded straight into T
		raw     []byte // or the object as sent
		haveObj bool
		direct  bool // the object is in obj, not raw
	)
	for dec.peekKind() != '}' {
		key, err := dec.readName()
		if err != nil {
			return Event[T]{}, err
		}
		switch {
		case strings.EqualFold(key, "type"):
			if err := decodeValue(dec, &typ); err != nil {
				return Event[T]{}, fmt.Errorf("decoding a watch event's type: %w", err)
			}
		case strings.EqualFold(key, "object"):
			haveObj, obj, raw = true, nil, nil
			direct = typ == Added || typ == Modified || typ == Deleted
			if direct {
				if err := decodeValue(dec, &obj); err != nil {
					var zero T
					return Event[T]{}, fmt.Errorf("decoding %T: %w", zero, err)
				}
			} else {
				v, err := dec.readValue()
				if err != nil {
					return Event[T]{}, err
				}
				raw = bytes.Clone(v)
			}
		default:
			if err := dec.skipValue(); err != nil {
				return Event[T]{}, err
			}
		}
	}
	if err := dec.readDelim('}'); err != nil {
		return Event[T]{}, err
	}
	if !haveObj || direct && obj == nil || !direct && (len(raw) == 0 || string(raw) == "null") {
		return Event[T]{}, fmt.Errorf("watch event %q has no object", typ)
	}
	switch typ {
	case Added, Modified, Deleted:
		if direct {
			return Event[T]{Type: typ, Object: *obj}, nil
		}
		o, err := decode[T](raw)
		return Event[T]{Type: typ, Object: o}, err
	case Bookmark:
		if !direct {
			return decodeBookmark[T](raw)
		}
	case Error:
		if !direct {
			return Event[T]{Type: Error, Err: decodeErrorEvent(raw)}, nil
		}
	}
	return Event[T]{}, fmt.Errorf("unknown watch event type %q", typ)
}

func decodeBookmark[T any](raw []byte) (Event[T], error) {
	obj, err := decode[T](raw)
	if err != nil {
		return Event[T]{}, err
	}
	var bm bookmarkMeta
	if err := json.Unmarshal(raw, &bm); err != nil {
		return Event[T]{}, fmt.Errorf("decoding a bookmark: %w", err)
	}
	end := bm.Metadata.Annotations[api.InitialEventsEndAnnotation] == "true"
	return Event[T]{Type: Bookmark, Object: obj, InitialEventsEnd: end}, nil
}

// decodeErrorEvent turns an ERROR event's Status into its error.
func decodeErrorEvent(raw []byte) error {
	var st api.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" {
		return fmt.Errorf("watch ERROR event with an object that is not a Status: %.200s", raw)
	}
	return &api.StatusError{Status: st}
}

// drainReader buffers a watch's body and calls drained whenever everything
// read from the body so far has been consumed, before it reads the body
// again (which may wait for the server). A drained that fails ends the
// reading with its error, kept in err.
type drainReader struct {
	r          io.Reader
	buf        []byte // small, or a large one from largeReads during a burst
	small      []byte
	start, end int   // buf[start:end] is read and not yet consumed
	filled     bool  // the last read filled buf: a burst
	rerr       error // r's error, returned once buf is consumed
	drained    func() error
	err        error // drained's error
}

// A watch mostly waits for its next event, holding its read buffer: it
// waits with a small one, and reads with a large one only while reads fill
// the buffer they get (a burst: the initial events, a catch-up), so that a
// client with many watches does not keep 64 KiB for each.
const smallReadBytes = 4 << 10

// largeReads holds the large read buffers (itemBatchBytes) of the watches
// not in a burst.
var largeReads = sync.Pool{New: func() any { return new([itemBatchBytes]byte) }}

func newDrainReader(r io.Reader) *drainReader {
	small := make([]byte, smallReadBytes)
	return &drainReader{r: r, buf: small, small: small}
}

// pickBuffer takes a large buffer after a read that filled the buffer,
// and gives it back after one that did not; buf is all consumed.
func (d *drainReader) pickBuffer() {
	large := len(d.buf) > len(d.small)
	switch {
	case d.filled && !large:
		d.buf = largeReads.Get().(*[itemBatchBytes]byte)[:]
	case !d.filled && large:
		largeReads.Put((*[itemBatchBytes]byte)(d.buf))
		d.buf = d.small
	}
}

func (d *drainReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.start == d.end {
		if d.drained != nil {
			if d.err = d.drained(); d.err != nil {
				return 0, d.err
			}
		}
		if d.rerr != nil {
			return 0, d.rerr
		}
		d.pickBuffer()
		var n int
		n, d.rerr = d.r.Read(d.buf)
		d.start, d.end, d.filled = 0, n, n == len(d.buf)
		if n == 0 {
			return 0, d.rerr
		}
	}
	n := copy(p, d.buf[d.start:d.end])
	d.start += n
	return n, nil
}
