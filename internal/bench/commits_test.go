package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// exposition is a text exposition of the commit histogram with the given
// cumulative counts for the bounds 0.0001, 0.0002, 0.0004, 0.0008 and
// +Inf, among other metrics as listwatch serve writes them.
func exposition(counts [5]string) []byte {
	var b strings.Builder
	b.WriteString("# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines 12\n")
	b.WriteString("# HELP listwatch_storage_commit_batch_size Write requests committed in one transaction\n# TYPE listwatch_storage_commit_batch_size histogram\n")
	b.WriteString("listwatch_storage_commit_batch_size_bucket{le=\"1\"} 7\nlistwatch_storage_commit_batch_size_bucket{le=\"+Inf\"} 9\n")
	b.WriteString("# HELP listwatch_storage_commit_duration_seconds Time the embedded store took to commit\n# TYPE listwatch_storage_commit_duration_seconds histogram\n")
	for i, le := range []string{"0.0001", "0.0002", "0.0004", "0.0008", "+Inf"} {
		fmt.Fprintf(&b, "listwatch_storage_commit_duration_seconds_bucket{le=%q} %s\n", le, counts[i])
	}
	fmt.Fprintf(&b, "listwatch_storage_commit_duration_seconds_sum 0.5\nlistwatch_storage_commit_duration_seconds_count %s\n", counts[4])
	return []byte(b.String())
}

func TestStoreCommitsFromBuckets(t *testing.T) {
	const us = time.Microsecond
	zero := [5]string{"0", "0", "0", "0", "0"}
	tests := []struct {
		name          string
		before, after [5]string
		want          StoreCommits
	}{
		{"none", zero, zero, StoreCommits{}},
		{"all in the first bucket", zero, [5]string{"5", "5", "5", "5", "5"}, StoreCommits{Count: 5, P99: 100 * us, Max: 100 * us}},
		{"a tail", zero, [5]string{"0", "990", "999", "1000", "1000"}, StoreCommits{Count: 1000, P99: 200 * us, Max: 800 * us}},
		{"p99 at 99 of 100", zero, [5]string{"0", "98", "99", "100", "100"}, StoreCommits{Count: 100, P99: 400 * us, Max: 800 * us}},
		{"the +Inf bucket", zero, [5]string{"1", "1", "1", "1", "2"}, StoreCommits{Count: 2, P99: Unbounded, Max: Unbounded}},
		{"counts written as floats", zero, [5]string{"1e+06", "1e+06", "1e+06", "1e+06", "1e+06"}, StoreCommits{Count: 1e6, P99: 100 * us, Max: 100 * us}},
		{"since an earlier scrape", [5]string{"0", "10", "10", "11", "11"}, [5]string{"100", "110", "110", "111", "111"}, StoreCommits{Count: 100, P99: 100 * us, Max: 100 * us}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, ok, err := parseBuckets(exposition(tt.before), commitMetric)
			if err != nil || !ok {
				t.Fatalf("parsing before: ok %v, %v", ok, err)
			}
			after, ok, err := parseBuckets(exposition(tt.after), commitMetric)
			if err != nil || !ok {
				t.Fatalf("parsing after: ok %v, %v", ok, err)
			}
			if diff := cmp.Diff(tt.want, after.since(before).summary()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseBucketsAbsentOrMalformed(t *testing.T) {
	tests := []struct {
		name, text string
		wantErr    bool
	}{
		{"absent (etcd, an older binary)", "# TYPE go_goroutines gauge\ngo_goroutines 12\n", false},
		{"another histogram's", "listwatch_storage_commit_batch_size_bucket{le=\"+Inf\"} 9\n", false},
		{"no +Inf bucket", "listwatch_storage_commit_duration_seconds_bucket{le=\"0.0001\"} 1\n", true},
		{"a bad count", "listwatch_storage_commit_duration_seconds_bucket{le=\"+Inf\"} many\n", true},
		{"a bad bound", "listwatch_storage_commit_duration_seconds_bucket{le=\"soon\"} 1\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok, err := parseBuckets([]byte(tt.text), commitMetric)
			if ok || (err != nil) != tt.wantErr {
				t.Errorf("ok %v, error %v; want no buckets and an error: %v", ok, err, tt.wantErr)
			}
		})
	}
}

func TestStoreCommitsString(t *testing.T) {
	for _, tt := range []struct {
		c    *StoreCommits
		want string
	}{
		{nil, "n/a"},
		{&StoreCommits{}, "n/a"},
		{&StoreCommits{Count: 3, P99: 3200 * time.Microsecond, Max: Unbounded}, "3.20 ms / +Inf (3 commits)"},
	} {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
		}
	}
}
