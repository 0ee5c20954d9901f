package h2_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/listwatch/listwatch/internal/h2"
)

// FuzzServeConn feeds a connection arbitrary frames after the preface:
// the server must answer or end the connection, never crash or hang.
func FuzzServeConn(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	srv := &h2.Server{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})
	f.Fuzz(func(t *testing.T, frames []byte) {
		client, server := net.Pipe()
		var wg sync.WaitGroup
		wg.Go(func() { srv.ServeConn(server, h2.ConnOptions{Handler: handler}) })
		wg.Go(func() { _, _ = io.Copy(io.Discard, client) })
		_, _ = client.Write(append([]byte(http2.ClientPreface), frames...))
		client.Close()
		wg.Wait()
	})
}

// fuzzSeeds are a SETTINGS frame followed by valid requests, so that the
// fuzzer starts from frames the server reads far.
func fuzzSeeds() [][]byte {
	var buf, hb bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	enc := hpack.NewEncoder(&hb)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/x"}, {Name: "content-length", Value: "3"}} {
		_ = enc.WriteField(f)
	}
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	_ = fr.WriteData(1, true, []byte("abc"))
	_ = fr.WritePing(false, [8]byte{})
	_ = fr.WriteWindowUpdate(0, 1000)
	_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
	one := bytes.Clone(buf.Bytes())
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hb.Bytes()[:5]})
	_ = fr.WriteContinuation(3, true, hb.Bytes()[5:])
	return [][]byte{one, bytes.Clone(buf.Bytes()), {}}
}
