package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/listwatch/listwatch/api"
)

// maxWatchErrorBody bounds how much of a refused watch's body is read.
const maxWatchErrorBody = 1 << 20

// openWatch sends a watch request and starts decoding its stream. A watch
// is neither retried nor bounded by the client's request timeout: its
// length is the server's (timeoutSeconds).
func openWatch[T any](ctx context.Context, c *Client, r *request) (Watch[T], error) {
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
	return newStreamWatch[T](ctx, cancel, resp.Body), nil
}

// streamWatch decodes a stream of JSON watch events, as kube-apiserver
// writes them (one {"type","object"} object after another; newlines are not
// required, and an event may arrive in any number of pieces). One goroutine
// reads the stream; it ends at the end of the stream, on Stop, or when the
// context ends, and then closes the events channel.
type streamWatch[T any] struct {
	events chan Event[T]
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
	return newStreamWatch[T](ctx, cancel, body)
}

func newStreamWatch[T any](ctx context.Context, cancel context.CancelFunc, body io.ReadCloser) *streamWatch[T] {
	w := &streamWatch[T]{
		events: make(chan Event[T]), body: body, cancel: cancel,
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
	dec := json.NewDecoder(w.body)
	for {
		ev, err := decodeEvent[T](dec)
		if err != nil {
			w.end(ctx, err)
			return
		}
		select {
		case w.events <- ev:
		case <-w.stop:
			return
		case <-ctx.Done():
			w.end(ctx, ctx.Err())
			return
		}
		if ev.Type == Error {
			w.end(ctx, ev.Err)
			return
		}
	}
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

// wireEvent is a watch event as sent.
type wireEvent struct {
	Type   EventType       `json:"type"`
	Object json.RawMessage `json:"object"`
}

// bookmarkMeta is what a bookmark's object says beyond its resourceVersion.
type bookmarkMeta struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

// decodeEvent reads the next event from dec. A stream that ends between
// events returns io.EOF; one that ends inside an event, io.ErrUnexpectedEOF.
func decodeEvent[T any](dec *json.Decoder) (Event[T], error) {
	var we wireEvent
	if err := dec.Decode(&we); err != nil {
		return Event[T]{}, err
	}
	if len(we.Object) == 0 || string(we.Object) == "null" {
		return Event[T]{}, fmt.Errorf("watch event %q has no object", we.Type)
	}
	switch we.Type {
	case Added, Modified, Deleted:
		obj, err := decode[T](we.Object)
		return Event[T]{Type: we.Type, Object: obj}, err
	case Bookmark:
		return decodeBookmark[T](we.Object)
	case Error:
		return Event[T]{Type: Error, Err: decodeErrorEvent(we.Object)}, nil
	}
	return Event[T]{}, fmt.Errorf("unknown watch event type %q", we.Type)
}

func decodeBookmark[T any](raw json.RawMessage) (Event[T], error) {
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
func decodeErrorEvent(raw json.RawMessage) error {
	var st api.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != "Status" {
		return fmt.Errorf("watch ERROR event with an object that is not a Status: %.200s", raw)
	}
	return &api.StatusError{Status: st}
}
