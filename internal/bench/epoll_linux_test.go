package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
)

// streamEvents is how many events each test watch receives.
const streamEvents = 50

// eventStream serves watches of streamEvents events, flushing after the
// first (so that it arrives with the headers) and after every fifth; a
// watch asking for ?end=1 then ends its stream, the others stay open
// until the client goes.
func eventStream(w http.ResponseWriter, r *http.Request) {
	fl := w.(http.Flusher)
	for i := range streamEvents {
		fmt.Fprintf(w, `{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"%d"},"data":{"ts":"%d"}}}`+"\n", i+1, time.Now().UnixNano())
		if i == 0 || i%5 == 4 {
			fl.Flush()
		}
	}
	if r.URL.Query().Get("end") != "1" {
		<-r.Context().Done()
	}
}

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestEpollReader reads streams that end and streams that stay open, then
// checks that close leaves no goroutine, connection or descriptor behind.
func TestEpollReader(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(eventStream))
	defer ts.Close()
	goroutines, files := runtime.NumGoroutine(), openFiles(t)
	const watches = 20
	for _, end := range []string{"0", "1"} {
		t.Run("end="+end, func(t *testing.T) {
			var d deliveries
			spec := watchSpec{base: ts.URL, path: "/watch?end=" + end, transport: TransportHTTP1, reader: ReaderEpoll}
			ws, err := openWatches(t.Context(), spec, watches, &d)
			if err != nil {
				t.Fatal(err)
			}
			ok := waitReceived(t.Context(), &d, watches*streamEvents, 10*time.Second)
			ws.close()
			if !ok || d.received.Load() != watches*streamEvents || d.duplicates.Load() != 0 || d.errors.Load() != 0 {
				t.Errorf("received %d of %d, %d duplicates, %d errors", d.received.Load(), watches*streamEvents, d.duplicates.Load(), d.errors.Load())
			}
			if n := d.latency.summary().Count; n != watches*streamEvents {
				t.Errorf("%d latencies, want %d", n, watches*streamEvents)
			}
		})
	}
	ts.CloseClientConnections()
	testwait.UntilNil(t, 10*time.Second, "the readers' descriptors and goroutines to go", func() error {
		if openFiles(t) <= files && runtime.NumGoroutine() <= goroutines {
			return nil
		}
		buf := make([]byte, 1<<20)
		return fmt.Errorf("%d descriptors (%d before), %d goroutines (%d before)\n%s",
			openFiles(t), files, runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
	})
}

// TestResolveReader checks the reader chosen for each transport.
func TestResolveReader(t *testing.T) {
	for _, tt := range []struct {
		reader, transport string
		tls               bool
		want              string // "" for an error
	}{
		{"", TransportHTTP1, false, ReaderEpoll},
		{"", TransportHTTP1, true, ReaderGoroutine},
		{"", TransportH2C, false, ReaderGoroutine},
		{ReaderGoroutine, TransportHTTP1, false, ReaderGoroutine},
		{ReaderEpoll, TransportHTTP1, false, ReaderEpoll},
		{ReaderEpoll, TransportHTTP1, true, ""},
		{ReaderEpoll, TransportH2C, false, ""},
		{"io_uring", TransportHTTP1, false, ""},
	} {
		got, err := resolveReader(tt.reader, tt.transport, tt.tls)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("resolveReader(%q, %q, %v) = %q, %v; want %q", tt.reader, tt.transport, tt.tls, got, err, tt.want)
		}
	}
}
