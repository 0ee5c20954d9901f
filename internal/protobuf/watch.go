package protobuf

import (
	"encoding/binary"
	"fmt"
	"io"
)

// EncodeWatchEvent returns one frame of a protobuf watch stream: a 4-byte
// big-endian length, then a meta/v1 WatchEvent without envelope whose
// object.raw is object, itself an envelope from Encode. eventType is ADDED,
// MODIFIED, DELETED, BOOKMARK or ERROR (with a Status object).
func EncodeWatchEvent(eventType string, object []byte) []byte {
	var rawExt []byte
	if object != nil {
		rawExt = appendBytes(nil, 1, object)
	}
	event := appendBytes(appendString(nil, 1, eventType), 2, rawExt)
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(event)), uint32(len(event)))
	return append(frame, event...)
}

// DecodeWatchEvent returns the type and enveloped object of the WatchEvent
// in frame, a frame as ReadFrame returns it (without the length).
func DecodeWatchEvent(frame []byte) (eventType string, object []byte, err error) {
	rs, err := split(watchEventMsg, frame)
	if err != nil {
		return "", nil, fmt.Errorf("decoding WatchEvent: %w", err)
	}
	raw, err := split(watchEventMsg.fields[1].msg, concat(rs[1]))
	if err != nil {
		return "", nil, fmt.Errorf("decoding WatchEvent object: %w", err)
	}
	return string(last(rs[0]).data), last(raw[0]).data, nil
}

// ReadFrame reads one length-prefixed frame from r and returns it without
// the length. It returns io.EOF at a clean end of stream,
// io.ErrUnexpectedEOF within a frame, and ErrFrameTooLarge for a frame
// longer than limit bytes, before reading it.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, fmt.Errorf("reading %d-byte frame: %w", n, noEOF(err))
	}
	return frame, nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: after a length, the stream
// must hold the frame.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
