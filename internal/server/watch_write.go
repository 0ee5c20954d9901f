package server

import (
	"errors"

	"github.com/listwatch/listwatch/internal/sockwrite"
)

// writev is one writev(2) of the first pieces of bufs on a non-blocking
// descriptor (sockwrite.Writev), reporting EAGAIN as errWouldBlock.
func writev(fd uintptr, bufs [][]byte) (int, error) {
	n, err := sockwrite.Writev(fd, bufs)
	if errors.Is(err, sockwrite.ErrWouldBlock) {
		err = errWouldBlock
	}
	return n, err
}
