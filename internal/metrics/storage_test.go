package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// exposition returns m's metrics in the text format.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommits checks that the store's commit histograms are exported once
// Commits is called (the bolt backend), not before, and count what the
// store reports.
func TestCommits(t *testing.T) {
	m := New()
	if out := exposition(t, m); strings.Contains(out, "listwatch_storage_commit") {
		t.Fatalf("commit metrics exported before Commits:\n%s", out)
	}
	c := m.Commits()
	if m.Commits() != c {
		t.Fatal("Commits returned new collectors the second time")
	}
	c.Committed(2*time.Millisecond, 3)
	c.Committed(300*time.Millisecond, 1)
	out := exposition(t, m)
	for _, series := range []string{
		`listwatch_storage_commit_duration_seconds_bucket{le="0.0016"} 0`,
		`listwatch_storage_commit_duration_seconds_bucket{le="0.0032"} 1`,
		`listwatch_storage_commit_duration_seconds_bucket{le="0.4096"} 2`,
		`listwatch_storage_commit_duration_seconds_count 2`,
		`listwatch_storage_commit_batch_size_bucket{le="2"} 1`,
		`listwatch_storage_commit_batch_size_bucket{le="4"} 2`,
		`listwatch_storage_commit_batch_size_sum 4`,
	} {
		if !strings.Contains(out, series+"\n") {
			t.Errorf("no line %s in:\n%s", series, out)
		}
	}
}
