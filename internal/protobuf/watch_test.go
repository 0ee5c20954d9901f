package protobuf

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWatchEventRoundTrip(t *testing.T) {
	object, err := Encode(parse(t, docs["configmap"]))
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	stream.Write(EncodeWatchEvent("ADDED", object))
	stream.Write(EncodeWatchEvent("BOOKMARK", nil))
	for _, want := range []struct {
		typ    string
		object []byte
	}{{"ADDED", object}, {"BOOKMARK", nil}} {
		frame, err := ReadFrame(&stream, 1<<20)
		if err != nil {
			t.Fatalf("ReadFrame: %v", err)
		}
		typ, obj, err := DecodeWatchEvent(frame)
		if err != nil {
			t.Fatalf("DecodeWatchEvent: %v", err)
		}
		if typ != want.typ || !bytes.Equal(obj, want.object) {
			t.Errorf("got %s %x, want %s %x", typ, obj, want.typ, want.object)
		}
	}
	if _, err := ReadFrame(&stream, 1<<20); err != io.EOF {
		t.Errorf("ReadFrame at end = %v, want io.EOF", err)
	}
}

func TestEncodeWatchEventBytes(t *testing.T) {
	got := EncodeWatchEvent("DELETED", []byte("k8s\x00"))
	want := []byte{0, 0, 0, 17, 0x0a, 7, 'D', 'E', 'L', 'E', 'T', 'E', 'D', 0x12, 6, 0x0a, 4, 'k', '8', 's', 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"partial length", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"missing body", []byte{0, 0, 0, 3}, io.ErrUnexpectedEOF},
		{"partial body", []byte{0, 0, 0, 3, 1}, io.ErrUnexpectedEOF},
		{"too large", []byte{0, 0, 1, 0}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ReadFrame(bytes.NewReader(tt.stream), 255); !errors.Is(err, tt.want) {
				t.Errorf("ReadFrame error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeWatchEventErrors(t *testing.T) {
	for name, frame := range map[string][]byte{
		"truncated":         {0x0a, 5, 'A'},
		"wrong type":        appendVarint(nil, 1, 1),
		"truncated object":  appendBytes(nil, 2, []byte{0x0a, 9}),
		"object wrong type": appendBytes(nil, 2, appendVarint(nil, 1, 1)),
	} {
		if _, _, err := DecodeWatchEvent(frame); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeWatchEvent error = %v, want ErrMalformed", name, err)
		}
	}
}
