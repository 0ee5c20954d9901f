package bench

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decoded is what a chunkDecoder made of a stream.
type decoded struct {
	Lines []string
	Done  bool
	Err   bool
}

// decodeParts feeds parts in turn, stopping at the first error; finish is
// called once the stream is done, as the epoll loop does.
func decodeParts(parts ...[]byte) (decoded, error) {
	var got decoded
	c := chunkDecoder{onLine: func(line []byte) { got.Lines = append(got.Lines, string(line)) }}
	for _, p := range parts {
		if err := c.feed(p); err != nil {
			got.Err = true
			return got, err
		}
	}
	if got.Done = c.done(); got.Done {
		c.finish()
	}
	return got, nil
}

// eachSplit calls f with stream fed whole, cut in two at every byte
// boundary, and one byte at a time.
func eachSplit(stream []byte, f func(name string, parts ...[]byte)) {
	for i := range len(stream) + 1 {
		f("split at "+strconv.Itoa(i), stream[:i], stream[i:])
	}
	var bytewise [][]byte
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	f("byte by byte", bytewise...)
}

func TestChunkDecoder(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stream string
		want   decoded
	}{{
		name: "several events per chunk, events across chunks, terminated",
		stream: "8\r\nev1\nev2\n\r\n" + // two events in one chunk
			"5\r\nev3-p\r\n" + "a;ext=1\r\nart\nev4-pa\r\n" + "4\r\nrt\n\n\r\n" + // ev3 across chunks, ev4 across three, an empty line
			"A\r\nev5\nev6\nev\r\n" + "2\r\n7\n\r\n" +
			"0\r\n\r\n",
		want: decoded{Lines: []string{"ev1\n", "ev2\n", "ev3-part\n", "ev4-part\n", "ev5\n", "ev6\n", "ev7\n"}, Done: true},
	}, {
		name:   "trailers after the last chunk",
		stream: "4\r\nev1\n\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
		want:   decoded{Lines: []string{"ev1\n"}, Done: true},
	}, {
		name:   "a line without its newline at the end",
		stream: "6\r\nev1\nev\r\n1\r\n2\r\n0\r\n\r\n",
		want:   decoded{Lines: []string{"ev1\n", "ev2"}, Done: true},
	}, {
		name:   "not ended yet",
		stream: "6\r\nev1\nev\r\n",
		want:   decoded{Lines: []string{"ev1\n"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			eachSplit([]byte(tt.stream), func(name string, parts ...[]byte) {
				got, err := decodeParts(parts...)
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: (-want +got)\n%s", name, diff)
				}
			})
		})
	}
}

func TestChunkDecoderMalformed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stream string
		lines  []string // decoded before the error
	}{
		{"not hex", "4\r\nev1\n\r\nzz\r\n", []string{"ev1\n"}},
		{"empty size", "\r\nev1\n", nil},
		{"space in the size", "4 \r\nev1\n\r\n", nil},
		{"no CR", "4\nev1\n\r\n", nil},
		{"CR without LF", "4\rev1\n\r\n", nil},
		{"size too long", "1000000000000000\r\n", nil},
		{"data longer than the size", "3\r\nev1\n\r\n", nil},
		{"no CRLF after the data", "4\r\nev1\nX\r\n", []string{"ev1\n"}},
		{"bad final CRLF", "0\r\n\rX", nil},
		{"bytes after the end", "0\r\n\r\n4\r\nev1\n\r\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachSplit([]byte(tt.stream), func(name string, parts ...[]byte) {
				got, err := decodeParts(parts...)
				if !errors.Is(err, errChunked) {
					t.Errorf("%s: error %v, want %v", name, err, errChunked)
				}
				if diff := cmp.Diff(tt.lines, got.Lines); diff != "" {
					t.Errorf("%s: lines (-want +got)\n%s", name, diff)
				}
			})
		})
	}
}

// chunkedStream encodes data in chunks of at most size bytes, ended by
// the last chunk.
func chunkedStream(data []byte, size int) []byte {
	var b []byte
	for p := range pieces(data, size) {
		b = strconv.AppendInt(b, int64(len(p)), 16)
		b = append(append(append(b, "\r\n"...), p...), "\r\n"...)
	}
	return append(b, "0\r\n\r\n"...)
}

// pieces yields data's consecutive pieces of at most size bytes.
func pieces(data []byte, size int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(data) > 0 {
			n := min(size, len(data))
			if !yield(data[:n]) {
				return
			}
			data = data[n:]
		}
	}
}

// wantLines are the lines a decoder hands over for data: those longer
// than their newline, and a last one without newline.
func wantLines(data []byte) []string {
	var out []string
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) > 1 {
			out = append(out, string(l))
		}
	}
	return out
}

func FuzzChunkDecoder(f *testing.F) {
	f.Add([]byte("ev1\nev2\n\nlong event\n"), uint8(3), uint16(7))
	f.Add([]byte("5\r\nev1\n\r\n0\r\n\r\n"), uint8(0), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, split uint16) {
		// data framed by chunkedStream decodes to its lines at any split.
		stream := chunkedStream(data, int(chunk%32)+1)
		at := int(split) % (len(stream) + 1)
		got, err := decodeParts(stream[:at], stream[at:])
		want := decoded{Lines: wantLines(data), Done: true}
		if err != nil || !cmp.Equal(want, got) {
			t.Fatalf("%q split at %d: %v (-want +got)\n%s", stream, at, err, cmp.Diff(want, got))
		}
		// data taken as a stream decodes alike, or fails alike, at any split.
		at = int(split) % (len(data) + 1)
		whole, _ := decodeParts(data)
		parts, _ := decodeParts(data[:at], data[at:])
		if diff := cmp.Diff(whole, parts); diff != "" {
			t.Fatalf("%q whole, then split at %d: (-whole +split)\n%s", data, at, diff)
		}
	})
}
