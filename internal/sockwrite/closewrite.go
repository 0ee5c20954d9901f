package sockwrite

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// LingerTimeout bounds how long a connection whose side CloseWrite closed
// waits for the client to close its own, its reader dropping what the
// client sends meanwhile: a client that never closes holds it no longer.
// (Closing at once, with bytes from the client unread, makes Linux reset
// the connection, and the client can lose the end of the stream.)
const LingerTimeout = time.Second

// CloseWrite closes our side of c after everything written (over TLS a
// close_notify, then in any case a FIN: tls.Conn's CloseWrite sends no
// FIN, which a client may wait for), and sets c's read deadline
// LingerTimeout from now, which it returns: the reader that drains c
// until the client's close gives up then.
func CloseWrite(c net.Conn) (time.Time, error) {
	under := c
	if tc, ok := c.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil {
			return time.Time{}, fmt.Errorf("closing a TLS stream: %w", err)
		}
		under = tc.NetConn()
	}
	cw, ok := under.(interface{ CloseWrite() error })
	if !ok {
		return time.Time{}, errors.New("a connection that cannot be half-closed")
	}
	if err := cw.CloseWrite(); err != nil {
		return time.Time{}, fmt.Errorf("half-closing a connection: %w", err)
	}
	until := time.Now().Add(LingerTimeout)
	_ = c.SetReadDeadline(until)
	return until, nil
}
