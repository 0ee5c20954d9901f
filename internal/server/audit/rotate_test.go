package audit

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// stuckWriter blocks every write until released, as a disk that hangs.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(b []byte) (int, error) {
	<-w.release
	return len(b), nil
}

// TestLogStuckDiskDoesNotHoldRequests: a request waits writeWait at most
// for its event, and once the queue is full events are dropped, counted,
// without waiting.
func TestLogStuckDiskDoesNotHoldRequests(t *testing.T) {
	w := stuckWriter{release: make(chan struct{})}
	l := newLog(w, nil, LogConfig{Logger: discardLogger()})
	start := time.Now()
	if !l.Write(&Event{AuditID: "first"}) {
		t.Fatal("the first event was dropped")
	}
	if waited := time.Since(start); waited < writeWait || waited > 10*writeWait {
		t.Errorf("waited %v for a stuck write, want about %v", waited, writeWait)
	}
	line, err := l.encode(&Event{AuditID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	queued := 1
	for l.Send(&Event{AuditID: "x"}) {
		queued++
		if queued > 2*queueBytes/len(line) {
			t.Fatal("the queue is not bounded")
		}
	}
	if events, errors := l.Counts(); errors != 1 || int(events) != queued+1 {
		t.Errorf("counts: %d events, %d errors; want %d, 1", events, errors, queued+1)
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeLines writes lines to r in one write.
func writeLines(t *testing.T, r *rotatingFile, lines ...string) {
	t.Helper()
	if _, err := r.Write([]byte(strings.Join(lines, ""))); err != nil {
		t.Fatal(err)
	}
}

// files are the names in dir and their contents.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// clock returns a time that moves one second each call.
func clock() func() time.Time {
	t := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	r, err := openRotating(filepath.Join(dir, "audit.log"), 20, 0, 0, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.now = clock()
	line := func(c string) string { return strings.Repeat(c, 9) + "\n" } // 10 bytes
	writeLines(t, r, line("a"), line("b"), line("c"))                    // a, b fill a file; c starts the next
	writeLines(t, r, line("d"))
	writeLines(t, r, strings.Repeat("L", 49)+"\n", line("e")) // a line larger than a file is alone
	want := map[string]string{
		"audit-2026-11-26T21-00-01.000.log": line("a") + line("b"),
		"audit-2026-11-26T21-00-02.000.log": line("c") + line("d"),
		"audit-2026-11-26T21-00-03.000.log": strings.Repeat("L", 49) + "\n",
		"audit.log":                         line("e"),
	}
	if diff := cmp.Diff(want, files(t, dir)); diff != "" {
		t.Errorf("files (-want +got)\n%s", diff)
	}
}

func TestRotationPrunes(t *testing.T) {
	for _, tt := range []struct {
		name               string
		maxBackups, maxAge int
		want               []string
	}{
		{"by count", 2, 0, []string{"audit-2026-11-26T21-00-02.000.log", "audit-2026-11-26T21-00-03.000.log", "audit.log", "other.log"}},
		{"by age", 0, 1, []string{"audit-2026-11-26T21-00-01.000.log", "audit-2026-11-26T21-00-02.000.log", "audit-2026-11-26T21-00-03.000.log", "audit.log", "other.log"}},
		{"kept", 0, 0, []string{"audit-2025-01-01T00-00-00.000.log", "audit-2026-11-26T21-00-01.000.log", "audit-2026-11-26T21-00-02.000.log", "audit-2026-11-26T21-00-03.000.log", "audit.log", "other.log"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{"audit-2025-01-01T00-00-00.000.log", "other.log"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("old\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := openRotating(filepath.Join(dir, "audit.log"), 10, tt.maxBackups, tt.maxAge, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.now = clock()
			for range 4 {
				writeLines(t, r, "123456789\n")
			}
			var got []string
			for name := range files(t, dir) {
				got = append(got, name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("files (-want +got)\n%s", diff)
			}
		})
	}
}
