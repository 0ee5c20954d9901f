// Package audittest reads audit logs in tests.
package audittest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/listwatch/listwatch/internal/server/audit"
)

// ReadLog decodes the events of the audit log at path, one a line.
func ReadLog(tb testing.TB, path string) []audit.Event {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var evs []audit.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev audit.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			tb.Fatalf("%s: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return evs
}
