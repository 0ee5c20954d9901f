package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
)

// readSignal tells reading each time a request's body is first read: the
// server is then waiting for its bytes.
func readSignal(h http.Handler, reading chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &signalBody{ReadCloser: r.Body, signal: sync.OnceFunc(func() { reading <- struct{}{} })}
		h.ServeHTTP(w, r)
	})
}

type signalBody struct {
	io.ReadCloser
	signal func()
}

func (b *signalBody) Read(p []byte) (int, error) {
	b.signal()
	return b.ReadCloser.Read(p)
}

// post POSTs a body of announced bytes that feed writes until done (the
// answer is in), and returns the answer and how long it took.
func post(ctx context.Context, client *http.Client, url string, announced int64, feed func(w io.Writer, done <-chan struct{})) (*http.Response, time.Duration, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer pw.Close() // unblocks a write of feed's
	defer close(done)
	// Go's transport, cancelled, waits for its read of the body.
	defer context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })()
	wg.Go(func() { feed(pw, done) })
	req, err := http.NewRequestWithContext(ctx, "POST", url, pr)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = announced
	start := time.Now()
	resp, err := client.Do(req)
	return resp, time.Since(start), err
}

// trickle feeds a space every 20 ms.
func trickle(w io.Writer, done <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// stall feeds n spaces, then nothing.
func stall(n int) func(io.Writer, <-chan struct{}) {
	return func(w io.Writer, done <-chan struct{}) {
		if _, err := w.Write(bytes.Repeat([]byte(" "), n)); err == nil {
			<-done
		}
	}
}

// newReadAheadServer serves a Server with cfg on a memory store over
// HTTP/1.1 and h2c, telling reading when a body is first read, and
// returns a client of proto and the URL of configmaps in default.
func newReadAheadServer(t *testing.T, proto string, cfg Config, reading chan<- struct{}) (*Server, *http.Client, string) {
	t.Helper()
	store := memory.New()
	cfg.Storage, cfg.Logger = store, slog.New(slog.DiscardHandler)
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(readSignal(s.Handler(), reading))
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if proto == "HTTP/2" {
		tr.Protocols = unencryptedHTTP2()
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(func() { tr.CloseIdleConnections(); s.Close(); ts.Close(); store.Close() })
	return s, &http.Client{Transport: tr}, ts.URL + "/api/v1/namespaces/default/configmaps"
}

// TestTrickledBodiesHoldNoSlot: more writes than the mutating limit
// trickling their bodies hold no slot, so that a normal write succeeds
// meanwhile, over HTTP/1.1 and HTTP/2; each trickled one is answered
// kube's 504 at the body deadline, however steadily its bytes come.
func TestTrickledBodiesHoldNoSlot(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			const limit, tricklers, deadline = 4, 8, time.Second
			// Told when a body is first read, and when a trickled write is
			// answered (at once, were it refused).
			reading := make(chan struct{}, 2*tricklers+1)
			_, client, cms := newReadAheadServer(t, proto, Config{MaxMutatingRequestsInFlight: limit, RequestBodyTimeout: deadline}, reading)

			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			for range tricklers {
				wg.Go(func() {
					resp, took, err := post(ctx, client, cms, 1<<10, trickle) // announced: net/http reads a short unread rest after the handler
					reading <- struct{}{}
					if err != nil {
						t.Errorf("a trickled write: %v", err)
						return
					}
					defer resp.Body.Close()
					var st api.Status
					_ = json.NewDecoder(resp.Body).Decode(&st)
					if resp.StatusCode != http.StatusGatewayTimeout || st.Reason != api.StatusReasonTimeout ||
						st.Message != "Timeout: request did not complete within the allotted timeout" {
						t.Errorf("a trickled write: %d %+v, want 504 Timeout", resp.StatusCode, st)
					}
					if took < deadline {
						t.Errorf("a trickled write was answered after %v, before its deadline %v", took, deadline)
					}
				})
			}
			for range tricklers {
				select {
				case <-reading:
				case <-ctx.Done():
					t.Fatal("the trickled writes were neither read nor answered")
				}
			}
			body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"meanwhile"}}`
			resp, err := client.Post(cms, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("a write while %d trickle (limit %d): %d %s, want 201", tricklers, limit, resp.StatusCode, b)
			}
			wg.Wait()
		})
	}
}

// TestReadAheadBudget: the bodies read ahead of their slots may hold
// MaxMutatingRequestsInFlight x MaxBodyBytes, here 4 KiB, taken by the
// bytes read or the buffer made for an announced length, and one user a
// quarter of it. A user holding its share with a stalled body is refused
// another body's first byte with 429 at once, while another user's write
// succeeds; four users' stalled bodies hold it all, and a fifth user is
// refused; once they have gone, a write succeeds.
func TestReadAheadBudget(t *testing.T) {
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			const limit, maxBody, deadline = 4, 1 << 10, 20 * time.Second
			var lines strings.Builder
			for i := range limit + 1 {
				fmt.Fprintf(&lines, "t%d,u%d,%d\n", i, i, i)
			}
			tokens, err := authn.ParseTokens(strings.NewReader(lines.String()))
			if err != nil {
				t.Fatal(err)
			}
			s, client, cms := newReadAheadServer(t, proto, Config{
				MaxMutatingRequestsInFlight: limit, MaxBodyBytes: maxBody, RequestBodyTimeout: deadline,
				Authenticator: authn.BearerToken{Tokens: tokens},
			}, make(chan struct{}, 3*limit))
			held := func() int64 { s.bodies.mu.Lock(); defer s.bodies.mu.Unlock(); return s.bodies.used }
			as := func(user int) *http.Client {
				return &http.Client{Transport: bearer{client.Transport, fmt.Sprint("t", user)}}
			}
			refused := func(user int) {
				t.Helper()
				resp, took, err := post(t.Context(), as(user), cms, 2, stall(1))
				if err != nil {
					t.Fatal(err)
				}
				var st api.Status
				_ = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if resp.StatusCode != http.StatusTooManyRequests || st.Reason != api.StatusReasonTooManyRequests || took >= deadline {
					t.Errorf("u%d's body past the budget: %d %+v after %v, want 429 at once", user, resp.StatusCode, st, took)
				}
			}
			created := func(user int, name string) {
				t.Helper()
				body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
				resp, err := as(user).Post(cms, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("u%d's write: %d, want 201", user, resp.StatusCode)
				}
			}

			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			stalled := func(user int) {
				wg.Go(func() {
					if resp, _, err := post(ctx, as(user), cms, maxBody, stall(0)); err == nil {
						resp.Body.Close()
						t.Errorf("u%d's stalled body was answered %d", user, resp.StatusCode)
					}
				})
			}
			stalled(0) // u0's share, in the buffer made for what it announced
			testwait.Until(t, 10*time.Second, "one body held", func() bool { return held() == maxBody })
			refused(0)
			created(1, "meanwhile")
			for user := 1; user < limit; user++ {
				stalled(user)
			}
			testwait.Until(t, 10*time.Second, "every admitted body held", func() bool { return held() == limit*maxBody })
			refused(limit)
			cancel()
			wg.Wait()
			testwait.Until(t, 10*time.Second, "every body released", func() bool { return held() == 0 })
			created(0, "after")
		})
	}
}

// bearer sends each request with its token.
type bearer struct {
	http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.RoundTripper.RoundTrip(r)
}
