package server

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/listwatch/listwatch/storage/bolt"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestWatchResumesAcrossRestart restarts the server on the same bolt data
// directory: a client resumes from its last resourceVersion and gets
// exactly the events it missed, with no 410 and so no relist, because the
// store's history still holds them.
func TestWatchResumesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*httptest.Server, func()) {
		store, err := bolt.Open(dir, bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(t.Context(), Config{Storage: store})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		return ts, func() { s.Close(); ts.Close(); store.Close() }
	}
	ts, stop := start()
	before := script(t, ts) // the client saw all of these
	seen := before[len(before)-1].Revision
	stop()

	ts, stop = start()
	defer stop()
	missed := scriptNamed(t, ts, "after") // written while the client was away
	history := append(before, missed...)
	w := openWatch(t, ts.Client(), ts.URL+fmt.Sprintf("/api/v1/configmaps?watch=true&resourceVersion=%d", seen))
	got := w.next(len(missed), false)
	if err := storagetest.ValidateWatch(history, seen, records(got), true); err != nil {
		t.Fatal(err)
	}
}
