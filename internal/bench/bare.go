package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// BareConfig configures the bare socket server.
type BareConfig struct {
	Listen   string
	Watchers int
	Rate     int
	Size     int
	Duration time.Duration
	// CertFile and KeyFile, if given, make it serve TLS (ALPN http/1.1):
	// its frames are then written through tls.Conn, the bare cost of a
	// TLS write.
	CertFile, KeyFile string
}

// ServeBare is the baseline a server's fan-out is measured against: it
// accepts cfg.Watchers HTTP/1.1 requests (answering /readyz on the side),
// answers each with a chunked 200, and, once a line arrives on control,
// writes Rate frames a second for Duration, each frame pre-encoded once and
// written to every connection with one write per connection. It returns
// when control ends or ctx does.
func ServeBare(ctx context.Context, cfg BareConfig, control io.Reader) error {
	if cfg.Watchers < 1 || cfg.Watchers > MaxWatchers || cfg.Rate < 1 || cfg.Rate > MaxRate || cfg.Duration > MaxDuration {
		return fmt.Errorf("bare server: %d watchers, %d/s for %v: out of bounds", cfg.Watchers, cfg.Rate, cfg.Duration)
	}
	var tc *tls.Config
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return fmt.Errorf("bare server: loading its certificate: %w", err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc) // the handshake happens in answer's read, under its deadline
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	conns, err := acceptWatchers(ln, cfg.Watchers)
	ln.Close()
	defer closeAll(conns)
	if err != nil {
		return err
	}
	lines := make(chan bool)
	go readControl(ctx, control, lines)
	if !waitLine(ctx, lines) {
		return ctx.Err()
	}
	writeFrames(ctx, conns, cfg)
	waitLine(ctx, lines) // until control ends
	return nil
}

// readControl sends true for each line of r until r or ctx ends. A read
// in progress cannot be interrupted: the process's exit ends it.
func readControl(ctx context.Context, r io.Reader, lines chan<- bool) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		select {
		case lines <- true:
		case <-ctx.Done():
			return
		}
	}
}

func waitLine(ctx context.Context, lines <-chan bool) bool {
	select {
	case ok := <-lines:
		return ok
	case <-ctx.Done():
		return false
	}
}

// acceptWatchers accepts connections until n have sent a watch request.
func acceptWatchers(ln net.Listener, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for len(conns) < n {
		c, err := ln.Accept()
		if err != nil {
			return conns, fmt.Errorf("accepting watcher %d of %d: %w", len(conns)+1, n, err)
		}
		watch, err := answer(c)
		if err != nil || !watch {
			c.Close()
			continue
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// answer reads a request's headers: /readyz gets "ok", anything else a
// chunked stream's headers; it reports whether c is now a watch.
func answer(c net.Conn) (bool, error) {
	_ = c.SetDeadline(time.Now().Add(headerTimeout))
	defer c.SetDeadline(time.Time{})
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return false, fmt.Errorf("reading a request: %w", err)
	}
	if req.URL.Path == "/readyz" {
		_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		return false, err
	}
	_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
	return err == nil, err
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// writeFrames writes Rate frames a second for Duration to every connection
// still open, stamping each frame once with its resourceVersion and time.
func writeFrames(ctx context.Context, conns []net.Conn, cfg BareConfig) {
	n := int(int64(cfg.Rate) * int64(cfg.Duration) / int64(time.Second))
	period := time.Second / time.Duration(cfg.Rate)
	live := conns
	var buf []byte
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * period)))
		buf = bareChunk(buf[:0], int64(i+1), time.Now(), cfg.Size)
		kept := live[:0]
		for _, c := range live {
			if _, err := c.Write(buf); err == nil {
				kept = append(kept, c)
			}
		}
		live = kept
	}
}

// bareChunk appends one HTTP chunk holding a watch event line of about
// size bytes, shaped as the server's.
func bareChunk(b []byte, rv int64, ts time.Time, size int) []byte {
	var f []byte
	f = append(f, `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-0","namespace":"`+namespace+`","resourceVersion":"`...)
	f = strconv.AppendInt(f, rv, 10)
	f = append(f, `"},"data":{"pad":"`...)
	tail := `","ts":"` + strconv.FormatInt(ts.UnixNano(), 10) + `"}}}` + "\n"
	f = appendPad(f, size-len(f)-len(tail))
	f = append(f, tail...)
	b = strconv.AppendInt(b, int64(len(f)), 16)
	b = append(b, "\r\n"...)
	b = append(b, f...)
	return append(b, "\r\n"...)
}

// fanoutBare runs the same watchers against a bare server child, over TLS
// with cert when the run is TLS.
func fanoutBare(ctx context.Context, cfg FanoutConfig, cert *certificate) (Result, error) {
	addr, err := freeAddr()
	if err != nil {
		return Result{}, err
	}
	control, ch, err := startBare(cfg, addr, cert)
	if err != nil {
		return Result{}, err
	}
	defer ch.stop()
	defer control.Close()
	spec := watchSpec{base: "http://" + addr, path: "/watch", transport: TransportHTTP1, reader: cfg.Reader}
	if cert != nil {
		spec.base, spec.tls = "https://"+addr, cert.client
	}
	if err := ch.waitReady(ctx, spec.tls, spec.base+"/readyz"); err != nil {
		return Result{}, ch.failure(err)
	}
	n := int64(cfg.Rate) * int64(cfg.Duration) / int64(time.Second)
	m := measure{pid: ch.pid()}
	err = m.run(ctx, spec, cfg.Watchers, func() (int64, error) {
		if _, err := io.WriteString(control, "start\n"); err != nil {
			return 0, fmt.Errorf("starting the bare server: %w", err)
		}
		return n, nil
	}, cfg.Duration+cfg.Drain)
	if err != nil {
		return Result{}, err
	}
	return m.result("bare socket ("+transportLabel(TransportHTTP1, cert != nil)+")", n), nil
}

// startBare starts the hidden `bench bare-server` command (serving cert
// over TLS unless it is nil), controlled by the pipe it returns.
func startBare(cfg FanoutConfig, addr string, cert *certificate) (*os.File, *child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("making the control pipe: %w", err)
	}
	defer r.Close()
	args := []string{"bench", "bare-server", "--listen", addr,
		"--watchers", strconv.Itoa(cfg.Watchers), "--rate", strconv.Itoa(cfg.Rate),
		"--size", strconv.Itoa(cfg.Size), "--duration", cfg.Duration.String()}
	if cert != nil {
		args = append(args, cert.args()...)
	}
	ch, err := startChild(cfg.Server.Binary, cfg.Server.Env, r, func(string) []string { return args })
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, ch, nil
}
