package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// thing is a typed object of the tests: a struct embedding its metadata.
type thing struct {
	Kind     string    `json:"kind,omitempty"`
	Metadata thingMeta `json:"metadata"`
	Data     string    `json:"data,omitempty"`
}

type thingMeta struct {
	Name            string            `json:"name,omitempty"`
	Namespace       string            `json:"namespace,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
}

func (t *thing) GetName() string              { return t.Metadata.Name }
func (t *thing) GetNamespace() string         { return t.Metadata.Namespace }
func (t *thing) GetResourceVersion() string   { return t.Metadata.ResourceVersion }
func (t *thing) GetLabels() map[string]string { return t.Metadata.Labels }

func newThing(name, rv, data string) *thing {
	return &thing{Kind: "Thing", Metadata: thingMeta{Name: name, Namespace: "ns", ResourceVersion: rv}, Data: data}
}

// stream is a watch stream as kube-apiserver writes it, with the events it
// decodes to.
var stream = []struct {
	line string
	want Event[*thing]
}{
	{`{"type":"ADDED","object":{"kind":"Thing","metadata":{"name":"a","namespace":"ns","resourceVersion":"1"},"data":"x"}}`,
		Event[*thing]{Type: Added, Object: newThing("a", "1", "x")}},
	{` {"object":{"kind":"Thing","metadata":{"name":"a","namespace":"ns","resourceVersion":"2"},"data":"y\n{\"type\""},"type":"MODIFIED"}`,
		Event[*thing]{Type: Modified, Object: newThing("a", "2", "y\n{\"type\"")}},
	{`{"type":"BOOKMARK","object":{"kind":"Thing","metadata":{"resourceVersion":"3","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		Event[*thing]{Type: Bookmark, Object: &thing{Kind: "Thing", Metadata: thingMeta{ResourceVersion: "3"}}, InitialEventsEnd: true}},
	{`{"type":"DELETED","object":{"kind":"Thing","metadata":{"name":"a","namespace":"ns","resourceVersion":"4"},"data":"y"}}`,
		Event[*thing]{Type: Deleted, Object: newThing("a", "4", "y")}},
	{`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`,
		Event[*thing]{Type: Error, Err: &api.StatusError{Status: api.Status{
			TypeMeta: api.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
			Message: "too old resource version: 1 (5)", Reason: api.StatusReasonExpired, Code: 410,
		}}}},
}

func streamBytes() []byte {
	var b strings.Builder
	for _, s := range stream {
		b.WriteString(s.line + "\n")
	}
	return []byte(b.String())
}

// collect drains w and returns its events and final error.
func collect[T any](w Watch[T]) ([]Event[T], error) {
	var evs []Event[T]
	for ev := range w.Events() {
		evs = append(evs, ev)
	}
	return evs, w.Err()
}

// pipeWatch decodes what write writes into a pipe.
func pipeWatch[T any](write func(w io.Writer)) Watch[T] {
	pr, pw := io.Pipe()
	go func() {
		write(pw)
		pw.Close()
	}()
	return NewStreamWatch[T](pr)
}

var cmpStatusErr = cmp.Comparer(func(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) })

func TestWatchDecodesEventsSplitAtEveryByte(t *testing.T) {
	data := streamBytes()
	var want []Event[*thing]
	for _, s := range stream {
		want = append(want, s.want)
	}
	for cut := 0; cut <= len(data); cut++ {
		w := pipeWatch[*thing](func(w io.Writer) {
			_, _ = w.Write(data[:cut])
			_, _ = w.Write(data[cut:])
		})
		got, err := collect(w)
		if diff := cmp.Diff(want, got, cmpStatusErr); diff != "" {
			t.Fatalf("cut at %d: events (-want +got):\n%s", cut, diff)
		}
		if !IsExpired(err) {
			t.Fatalf("cut at %d: Err() = %v, want the ERROR event's Expired", cut, err)
		}
	}
	t.Run("one byte at a time", func(t *testing.T) {
		w := pipeWatch[*thing](func(w io.Writer) {
			for i := range data {
				_, _ = w.Write(data[i : i+1])
			}
		})
		if got, _ := collect(w); len(got) != len(stream) {
			t.Errorf("got %d events, want %d", len(got), len(stream))
		}
	})
}

func TestWatchDecodesLinesOfSeveralMiB(t *testing.T) {
	sizes := []int{3 << 20, 7<<20 + 13}
	w := pipeWatch[Unstructured](func(w io.Writer) {
		for i, n := range sizes {
			fmt.Fprintf(w, `{"type":"ADDED","object":{"metadata":{"name":"big%d"},"data":"%s"}}`, i, strings.Repeat("x", n))
		}
	})
	got, err := collect(w)
	if err != nil || len(got) != len(sizes) {
		t.Fatalf("got %d events, err %v", len(got), err)
	}
	for i, ev := range got {
		if s, _ := ev.Object["data"].(string); len(s) != sizes[i] || ev.Object.GetName() != fmt.Sprintf("big%d", i) {
			t.Errorf("event %d: %s with %d bytes of data", i, ev.Object.GetName(), len(s))
		}
	}
}

func TestWatchEnds(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string // "" for a clean end
		events  int
	}{
		{"clean EOF", stream[0].line + "\n", "", 1},
		{"empty stream", "", "", 0},
		{"cut inside an event", stream[0].line + `{"type":"ADDED","obj`, "unexpected EOF", 1},
		{"garbage", `{"type":"ADDED","object":{"metadata":`, "unexpected EOF", 0},
		{"unknown type", `{"type":"RENAMED","object":{}}`, `unknown watch event type "RENAMED"`, 0},
		{"no object", `{"type":"ADDED"}`, "has no object", 0},
		{"null object", `{"type":"ADDED","object":null}`, "has no object", 0},
		{"null object before its type", `{"object":null,"type":"ADDED"}`, "has no object", 0},
		{"not an object", `["ADDED"]`, "not an object", 0},
		{"cut after a member", `{"type":"ADDED",`, "unexpected EOF", 0},
		{"object that is not a T", `{"type":"ADDED","object":{"metadata":[]}}`, "decoding", 0},
		{"error without a Status", `{"type":"ERROR","object":{"kind":"Pod"}}`, "not a Status", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := pipeWatch[*thing](func(w io.Writer) { _, _ = io.WriteString(w, tt.body) })
			got, err := collect(w)
			if len(got) != tt.events {
				t.Errorf("got %d events, want %d", len(got), tt.events)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Err() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestWatchStopClosesTheStream stops a watch whose server never ends: the
// reader goroutine ends, the server sees its request end, and Err is nil.
func TestWatchStopClosesTheStream(t *testing.T) {
	c, srv, gone := hangingWatchServer(t)
	defer srv.Close()
	w, err := NewResource[*thing](c, GroupVersionResource{Version: "v1", Resource: "things"}, "ns").Watch(context.Background(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.Events(); ev.Type != Added || ev.Object.GetName() != "a" {
		t.Fatalf("first event %+v", ev)
	}
	w.Stop()
	w.Stop() // idempotent
	<-gone
	if _, ok := <-w.Events(); ok {
		t.Error("Events not closed after Stop")
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err() after Stop = %v", err)
	}
	<-w.(*streamWatch[*thing]).done
}

// TestWatchEndsWithItsContext cancels the context of a watch nobody reads.
func TestWatchEndsWithItsContext(t *testing.T) {
	c, srv, gone := hangingWatchServer(t)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewResource[*thing](c, GroupVersionResource{Version: "v1", Resource: "things"}, "ns").Watch(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-gone
	<-w.(*streamWatch[*thing]).done
	if _, err := collect(w); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", err)
	}
}

// hangingWatchServer serves one ADDED event and then holds the watch open
// until the client goes; gone is closed then.
func hangingWatchServer(t *testing.T) (*Client, *httptest.Server, chan struct{}) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			t.Errorf("not a watch: %s", r.URL)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stream[0].line+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	c, err := New(ConfigForURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return c, srv, gone
}

func TestWatchRefusedWithStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, "Too many requests, please try again later.\n")
	}))
	defer srv.Close()
	c, _ := New(ConfigForURL(srv.URL))
	_, err := NewResource[Unstructured](c, GroupVersionResource{Version: "v1", Resource: "things"}, "").Watch(context.Background(), ListOptions{})
	if d, ok := RetryAfter(err); !IsTooManyRequests(err) || !ok || d.Seconds() != 3 {
		t.Errorf("err = %v, RetryAfter %v %v", err, d, ok)
	}
}

// burst is n ADDED events of things named t0, t1, ..., each with pad bytes
// of data, as JSON lines.
func burst(first, n, pad int) []byte {
	var b bytes.Buffer
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"type":"ADDED","object":{"kind":"Thing","metadata":{"name":"t%d","namespace":"ns","resourceVersion":"%d"},"data":"%s"}}`+"\n",
			i, i+1, strings.Repeat("x", pad))
	}
	return b.Bytes()
}

// A burst of many batches is decoded on several goroutines and delivered
// in order; an event that does not decode ends the watch after every event
// before it.
func TestWatchDecodesBurstsInOrder(t *testing.T) {
	const n = 5000 // about 40 batches
	good := burst(0, n, 400)
	bad := append(burst(0, n/2, 400), `{"type":"ADDED","object":{"metadata":"not an object"}}`+"\n"...)
	bad = append(bad, burst(n/2+1, 10, 400)...)
	for _, tc := range []struct {
		name    string
		data    []byte
		events  int
		wantErr bool
	}{
		{"burst", good, n, false},
		{"bad event in the middle", bad, n / 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(NewStreamWatch[*thing](io.NopCloser(bytes.NewReader(tc.data))))
			if (err != nil) != tc.wantErr || len(got) != tc.events {
				t.Fatalf("%d events, err %v; want %d events, error %v", len(got), err, tc.events, tc.wantErr)
			}
			for i, ev := range got {
				if ev.Type != Added || ev.Object.Metadata.Name != fmt.Sprintf("t%d", i) {
					t.Fatalf("event %d: %s %+v", i, ev.Type, ev.Object)
				}
			}
		})
	}
}

// Every event received is delivered before the watch waits for more: the
// last of a burst and a lone event after it are not held back for a batch
// to fill.
func TestWatchDeliversWhatArrivedBeforeWaiting(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewStreamWatch[*thing](pr)
	defer w.Stop()
	writes := make(chan []byte)
	go func() {
		defer pw.Close()
		for b := range writes {
			if _, err := pw.Write(b); err != nil {
				return
			}
		}
	}()
	defer close(writes)
	expect := func(first, n int) {
		t.Helper()
		for i := first; i < first+n; i++ {
			select {
			case ev := <-w.Events():
				if ev.Object == nil || ev.Object.Metadata.Name != fmt.Sprintf("t%d", i) {
					t.Fatalf("event %+v, want t%d", ev, i)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("t%d, sent, was not delivered", i)
			}
		}
	}
	writes <- burst(0, 1000, 400) // several batches, the last one not full
	expect(0, 1000)
	writes <- burst(1000, 1, 10)
	expect(1000, 1)
}

// FuzzWatchBatches: the events a watch delivers, however its stream is cut
// into reads, are the events decoded one after another, and it ends with
// an error exactly when decoding one after another does.
func FuzzWatchBatches(f *testing.F) {
	f.Add(streamBytes(), uint16(7))
	f.Add(burst(0, 300, 300), uint16(4096))
	f.Add([]byte(`{"type":"ADDED","object":{}} [] {"type":"ADDED"`), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		var want []Event[*thing]
		var wantErr error
		codec := jsonEvents[*thing](bytes.NewReader(data))
		for {
			ev, err := codec.next()
			if err != nil {
				if err != io.EOF {
					wantErr = err
				}
				break
			}
			want = append(want, ev)
			if ev.Type == Error {
				wantErr = ev.Err
				break
			}
		}
		var r io.Reader = bytes.NewReader(data)
		switch {
		case chunk == 1:
			r = iotest.OneByteReader(r)
		case chunk == 2: // the last data comes with io.EOF
			r = iotest.DataErrReader(r)
		case chunk > 2:
			r = chunkReader{r, int(chunk)}
		}
		got, err := collect(NewStreamWatch[*thing](io.NopCloser(r)))
		if diff := cmp.Diff(want, got, cmpStatusErr); diff != "" {
			t.Fatalf("events (-one after another +watch):\n%s", diff)
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("watch ended with %v; one after another with %v", err, wantErr)
		}
	})
}

// chunkReader reads at most n bytes at a time.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// next reads and decodes the next event on the calling goroutine: the
// events one after another, without batches.
func (c eventCodec[T]) next() (Event[T], error) {
	raw, err := c.split()
	if err != nil {
		return Event[T]{}, err
	}
	var ev Event[T]
	err = c.decode(raw, &ev)
	return ev, err
}
