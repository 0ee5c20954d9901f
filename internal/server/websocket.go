package server

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/watchstream"
)

// A watch may be asked for as a WebSocket (RFC 6455): the handshake is
// validated here, as part of the request; the engine (internal/watchstream)
// answers it on the hijacked connection and frames the events.

// isWebSocket reports whether the client asked for a WebSocket upgrade.
func (q *request) isWebSocket() bool {
	return strings.EqualFold(q.r.Header.Get("Upgrade"), "websocket")
}

// wsKeyGUID is appended to the client's key to make the accept key.
const wsKeyGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// webSocketHandshake validates a WebSocket upgrade (RFC 6455 4.2.1) and
// chooses its subprotocol: the one the client offers besides a bearer
// token (authn.WebSocketProtocolPrefix), if any.
func (q *request) webSocketHandshake() (*watchstream.Upgrade, error) {
	r := q.r
	fail := func(msg string) (*watchstream.Upgrade, error) {
		return nil, apierror.BadRequest("WebSocket upgrade failed: " + msg)
	}
	switch {
	case r.ProtoMajor != 1 || r.ProtoMinor < 1:
		return fail("the handshake must be HTTP/1.1, not " + r.Proto)
	case r.Method != http.MethodGet:
		return fail("the handshake's method must be GET, not " + r.Method)
	case !headerHasToken(r.Header, "Connection", "upgrade"):
		return fail("the Connection header does not contain Upgrade")
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return fail("unsupported Sec-WebSocket-Version " + r.Header.Get("Sec-WebSocket-Version") + ", want 13")
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return fail("want one Sec-WebSocket-Key header")
	}
	key := strings.TrimSpace(keys[0])
	if k, err := base64.StdEncoding.DecodeString(key); err != nil || len(k) != 16 {
		return fail("the Sec-WebSocket-Key is not 16 bytes in base64")
	}
	var protocols []string
	for _, p := range authn.WebSocketProtocols(r) {
		if !strings.HasPrefix(p, authn.WebSocketProtocolPrefix) {
			protocols = append(protocols, p)
		}
	}
	if len(protocols) > 1 {
		return nil, apierror.BadRequest("more than one WebSocket subprotocol offered besides the bearer token")
	}
	if !watchstream.CanHijack(q.w) {
		return nil, apierror.Internal(errors.New("a WebSocket upgrade on a connection that cannot be hijacked"))
	}
	sum := sha1.Sum([]byte(key + wsKeyGUID))
	up := &watchstream.Upgrade{Accept: base64.StdEncoding.EncodeToString(sum[:])}
	if len(protocols) == 1 {
		up.Protocol = protocols[0]
	}
	return up, nil
}

// headerHasToken reports whether header name's comma-separated values
// include token, in any case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
