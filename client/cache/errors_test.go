package cache

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Errors a watch ends with, as the client reports them.
var (
	errConnRefused error = syscall.ECONNREFUSED
	errCutInEvent        = fmt.Errorf("jsontext: read error: %w", io.ErrUnexpectedEOF)
	errConnReset         = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	errReadTimeout       = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	errH2ConnLost        = errors.New("http2: client connection lost")
)
