package h2

import (
	"bufio"
	"fmt"

	"golang.org/x/net/http2"
)

// Header block bounds (CVE-2023-45288): the framer bounds a header
// block's decoded list (MaxHeaderBytes), but neither its CONTINUATION
// frames nor the bytes of HPACK instructions that emit no field (table
// size updates): a client could send an endless header block.
const (
	// headerBlockSlack is what a header block's bytes may exceed
	// MaxHeaderBytes by: padding, a priority, table size updates. A
	// field's encoding is never longer than its hpack size (name, value
	// and 32), so a block within MaxHeaderBytes is within this.
	headerBlockSlack = 16 << 10
	// minHeaderBlockFrames is the fewest frames a header block may take:
	// a HEADERS and nghttp2's 8 CONTINUATIONs
	// (NGHTTP2_DEFAULT_MAX_CONTINUATIONS). A block may take more only as
	// its byte bound needs them in full frames of the size we advertise
	// (defaultMaxFrame, 16 KiB), as clients send them: 65 for the default
	// MaxHeaderBytes. More is a flood of small or empty CONTINUATIONs,
	// which x/net, bounding only the bytes, lets through.
	minHeaderBlockFrames = 1 + 8
)

// blockGuard sits between the connection's buffered reader and its
// Framer: it reads every frame header as it goes by and fails the read
// (a connError, for good) when a header block, HEADERS and its
// CONTINUATIONs, goes beyond maxBytes of payload or maxFrames frames,
// before the framer reads and decodes the frame that goes beyond.
type blockGuard struct {
	r         *bufio.Reader
	maxBytes  int
	maxFrames int

	left        int  // bytes of the current frame still to pass, its header included
	inBlock     bool // a header block has begun and not ended
	blockBytes  int
	blockFrames int
	err         error
}

func newBlockGuard(r *bufio.Reader, maxHeaderBytes uint32) *blockGuard {
	maxBytes := int(maxHeaderBytes) + headerBlockSlack
	fullFrames := (maxBytes + defaultMaxFrame - 1) / defaultMaxFrame
	return &blockGuard{r: r, maxBytes: maxBytes, maxFrames: max(minHeaderBlockFrames, fullFrames)}
}

func (g *blockGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.left == 0 {
		h, err := g.r.Peek(frameHeaderLen)
		if err != nil {
			if len(h) == 0 {
				return 0, err
			}
			g.left = len(h) // a part of a frame header, then its error
		} else if err := g.check(h); err != nil {
			g.err = err
			return 0, err
		} else {
			g.left = frameHeaderLen + frameLength(h)
		}
	}
	n, err := g.r.Read(p[:min(len(p), g.left)])
	g.left -= n
	return n, err
}

// check counts the frame whose header is h against its header block.
func (g *blockGuard) check(h []byte) error {
	length := frameLength(h)
	typ, flags := http2.FrameType(h[3]), http2.Flags(h[4])
	switch {
	case typ == http2.FrameHeaders || typ == http2.FramePushPromise:
		g.inBlock, g.blockBytes, g.blockFrames = true, 0, 0
	case typ != http2.FrameContinuation || !g.inBlock:
		g.inBlock = false // not in a block, or the framer's protocol error
		return nil
	}
	g.blockBytes += length
	g.blockFrames++
	switch {
	case g.blockBytes > g.maxBytes:
		return connError{protocolError, fmt.Sprintf("a header block of more than %d bytes", g.maxBytes)}
	case g.blockFrames > g.maxFrames:
		return connError{calmError, fmt.Sprintf("a header block of more than %d frames", g.maxFrames)}
	}
	if flags.Has(http2.FlagHeadersEndHeaders) { // CONTINUATION's END_HEADERS is the same bit
		g.inBlock = false
	}
	return nil
}

// frameLength is the payload length in frame header h.
func frameLength(h []byte) int { return int(h[0])<<16 | int(h[1])<<8 | int(h[2]) }
