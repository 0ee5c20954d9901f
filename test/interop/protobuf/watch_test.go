package protobuf_test

import (
	"bytes"
	"io"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sprotobuf "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"

	"github.com/listwatch/listwatch/internal/protobuf"
)

// events returns watch events as the apiserver sends them: each object an
// envelope from the serializer, ERROR carrying a Status.
func events(t *testing.T, s *runtime.Scheme) []metav1.WatchEvent {
	var evs []metav1.WatchEvent
	types := []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}
	for i, tc := range cases() {
		evs = append(evs, metav1.WatchEvent{Type: types[i%len(types)], Object: runtime.RawExtension{Raw: theirs(t, s, tc.obj)}})
	}
	return append(evs, metav1.WatchEvent{Type: "ADDED"}, metav1.WatchEvent{Type: ""})
}

// TestWatchFrames: EncodeWatchEvent writes what the apiserver's watch
// encoder (streaming encoder, RawSerializer, LengthDelimitedFramer) writes.
func TestWatchFrames(t *testing.T) {
	s := newScheme(t)
	var want, got bytes.Buffer
	enc := streaming.NewEncoder(k8sprotobuf.LengthDelimitedFramer.NewFrameWriter(&want), k8sprotobuf.NewRawSerializer(s, s))
	for _, ev := range events(t, s) {
		if err := enc.Encode(&ev); err != nil {
			t.Fatalf("streaming Encode: %v", err)
		}
		got.Write(protobuf.EncodeWatchEvent(ev.Type, ev.Object.Raw))
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Fatalf("watch stream differs: %d bytes from apimachinery, %d from EncodeWatchEvent", want.Len(), got.Len())
	}
}

// TestReadWatchFrames: ReadFrame and DecodeWatchEvent read what
// apimachinery's framer writes, and apimachinery's frame reader reads what
// EncodeWatchEvent writes.
func TestReadWatchFrames(t *testing.T) {
	s := newScheme(t)
	evs := events(t, s)
	var stream, ours bytes.Buffer
	w := k8sprotobuf.LengthDelimitedFramer.NewFrameWriter(&stream)
	for _, ev := range evs {
		data, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		ours.Write(protobuf.EncodeWatchEvent(ev.Type, ev.Object.Raw))
	}
	r := k8sprotobuf.LengthDelimitedFramer.NewFrameReader(io.NopCloser(&ours))
	for i, ev := range evs {
		frame, err := protobuf.ReadFrame(&stream, 1<<20)
		if err != nil {
			t.Fatalf("event %d: ReadFrame: %v", i, err)
		}
		typ, obj, err := protobuf.DecodeWatchEvent(frame)
		if err != nil {
			t.Fatalf("event %d: DecodeWatchEvent: %v", i, err)
		}
		if typ != ev.Type || !bytes.Equal(obj, ev.Object.Raw) {
			t.Errorf("event %d: got %q with %d bytes, want %q with %d", i, typ, len(obj), ev.Type, len(ev.Object.Raw))
		}
		buf := make([]byte, 1<<20)
		n, err := r.Read(buf)
		if err != nil {
			t.Fatalf("event %d: apimachinery frame reader: %v", i, err)
		}
		var back metav1.WatchEvent
		if err := back.Unmarshal(buf[:n]); err != nil {
			t.Fatalf("event %d: WatchEvent.Unmarshal: %v", i, err)
		}
		if back.Type != ev.Type || !bytes.Equal(back.Object.Raw, ev.Object.Raw) {
			t.Errorf("event %d: apimachinery read %q with %d bytes, want %q with %d", i, back.Type, len(back.Object.Raw), ev.Type, len(ev.Object.Raw))
		}
	}
	if _, err := protobuf.ReadFrame(&stream, 1<<20); err != io.EOF {
		t.Errorf("ReadFrame at end = %v, want io.EOF", err)
	}
}
