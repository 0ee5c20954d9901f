package client

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if a watch's reader goroutine outlives the tests:
// every watch must end on Stop, its context, or the end of its stream.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if stack := leakedWatch(5 * time.Second); stack != "" {
			fmt.Fprintf(os.Stderr, "a watch goroutine leaked:\n%s\n", stack)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedWatch returns the stack of a watch goroutine still running once
// the grace period (for goroutines on their way out) is over.
func leakedWatch(grace time.Duration) string {
	deadline := time.Now().Add(grace)
	for {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		var leaked string
		for _, g := range strings.Split(all, "\n\n") {
			if strings.Contains(g, "client.(*streamWatch") {
				leaked = g
			}
		}
		if leaked == "" || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(10 * time.Millisecond)
	}
}
