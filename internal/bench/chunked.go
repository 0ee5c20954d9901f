package bench

import (
	"bytes"
	"errors"
	"fmt"
)

// errChunked is a malformed chunked stream; the decoder's errors wrap it.
var errChunked = errors.New("malformed chunked encoding")

// maxLineBytes bounds a watch event line assembled across chunks and
// reads: well above an event of MaxSize bytes, JSON-escaped.
const maxLineBytes = 16 << 20

// maxSizeDigits bounds a chunk size's hex digits, so that it fits an int64.
const maxSizeDigits = 15

// chunkState is where the decoder is in the chunked framing.
type chunkState uint8

const (
	chunkSize        chunkState = iota // the hex size
	chunkExt                           // a chunk extension, after ';', up to CR
	chunkSizeLF                        // the LF ending the size line
	chunkData                          // the chunk's data
	chunkDataCR                        // the CR after the data
	chunkDataLF                        // the LF after the data
	chunkTrailer                       // the start of a trailer line, or of the final CRLF
	chunkTrailerLine                   // inside a trailer line, up to its LF
	chunkEndLF                         // the LF of the final CRLF
	chunkDone                          // after the final CRLF
)

// chunkDecoder decodes an HTTP/1.1 chunked body incrementally, fed
// whatever each read returned, and hands every complete line ("\n"
// included; empty lines skipped, as readEvents skips them) to onLine. A
// line may span chunks and feeds; several lines may share a chunk. The
// slice given to onLine is valid only during the call.
type chunkDecoder struct {
	onLine func(line []byte)
	state  chunkState
	size   int64  // the size being parsed (chunkSize), then the data left (chunkData)
	digits int    // hex digits of the size so far
	line   []byte // a line begun in an earlier chunk or feed
}

// feed decodes p. It returns an error wrapping errChunked on malformed
// framing or bytes after the last chunk; the decoder is then unusable.
func (c *chunkDecoder) feed(p []byte) error {
	for len(p) > 0 {
		if c.state == chunkData {
			n := int(min(int64(len(p)), c.size))
			if err := c.data(p[:n]); err != nil {
				return err
			}
			p, c.size = p[n:], c.size-int64(n)
			if c.size == 0 {
				c.state = chunkDataCR
			}
			continue
		}
		if err := c.step(p[0]); err != nil {
			return err
		}
		p = p[1:]
	}
	return nil
}

// done says whether the terminating chunk and its final CRLF were read.
func (c *chunkDecoder) done() bool { return c.state == chunkDone }

// finish hands a line left without its "\n" to onLine, as readEvents does
// at the end of a stream, and forgets it.
func (c *chunkDecoder) finish() {
	if len(c.line) > 1 {
		c.onLine(c.line)
	}
	c.line = c.line[:0]
}

// data splits a chunk's data into lines, joining the first to the line
// begun before it.
func (c *chunkDecoder) data(p []byte) error {
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(c.line)+len(p) > maxLineBytes {
				return fmt.Errorf("%w: a line longer than %d bytes", errChunked, maxLineBytes)
			}
			c.line = append(c.line, p...)
			return nil
		}
		line := p[:i+1]
		if len(c.line) > 0 {
			line = append(c.line, line...)
			c.line = line[:0]
		}
		if len(line) > 1 {
			c.onLine(line)
		}
		p = p[i+1:]
	}
}

// step decodes one byte of framing (anything but chunk data).
func (c *chunkDecoder) step(b byte) error {
	switch c.state {
	case chunkSize:
		return c.sizeByte(b)
	case chunkExt:
		if b == '\r' {
			c.state = chunkSizeLF
		}
		return nil
	case chunkSizeLF:
		return c.endSizeLine(b)
	case chunkDataCR:
		return c.expect(b, '\r', chunkDataLF, "after chunk data")
	case chunkDataLF:
		return c.expect(b, '\n', chunkSize, "after chunk data")
	case chunkTrailer:
		c.state = chunkTrailerLine
		if b == '\r' {
			c.state = chunkEndLF
		}
		return nil
	case chunkTrailerLine:
		if b == '\n' {
			c.state = chunkTrailer
		}
		return nil
	case chunkEndLF:
		return c.expect(b, '\n', chunkDone, "ending the stream")
	}
	return fmt.Errorf("%w: bytes after the last chunk", errChunked)
}

// sizeByte takes one byte of a size line before its CR or extension.
func (c *chunkDecoder) sizeByte(b byte) error {
	v, ok := hexValue(b)
	switch {
	case ok && c.digits < maxSizeDigits:
		c.size, c.digits = c.size<<4|int64(v), c.digits+1
		return nil
	case ok:
		return fmt.Errorf("%w: chunk size of more than %d hex digits", errChunked, maxSizeDigits)
	case c.digits == 0:
		return fmt.Errorf("%w: chunk size line starts with %q", errChunked, b)
	case b == ';':
		c.state = chunkExt
		return nil
	case b == '\r':
		c.state = chunkSizeLF
		return nil
	}
	return fmt.Errorf("%w: %q in a chunk size", errChunked, b)
}

// endSizeLine takes the LF of a size line and starts the chunk's data, or
// the trailer after the last chunk.
func (c *chunkDecoder) endSizeLine(b byte) error {
	if b != '\n' {
		return fmt.Errorf("%w: %q after a chunk size's CR", errChunked, b)
	}
	c.digits, c.state = 0, chunkData
	if c.size == 0 {
		c.state = chunkTrailer
	}
	return nil
}

// expect moves to next if b is want.
func (c *chunkDecoder) expect(b, want byte, next chunkState, where string) error {
	if b != want {
		return fmt.Errorf("%w: %q instead of %q %s", errChunked, b, want, where)
	}
	c.state = next
	return nil
}

// hexValue is the value of a hex digit.
func hexValue(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
