package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// TestWatchWithCurl watches with the real curl, as seed 000 does, over
// HTTP/1.1 (chunked) and HTTP/2 with prior knowledge: events arrive as
// they happen, one JSON object per line.
func TestWatchWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (.ci/run installs it): the curl end-to-end test needs it")
	}
	ts, _, _ := newWatchServer(t)
	url := ts.URL + "/api/v1/namespaces/default/configmaps?watch=true"
	for i, proto := range []string{"--http1.1", "--http2-prior-knowledge"} {
		t.Run(proto, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, curl, "-sS", "-N", proto, url)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); _ = cmd.Wait() }()
			lines := bufio.NewScanner(out)
			name := fmt.Sprintf("curl-%d", i)
			// Written before or after curl's watch starts, the object comes out
			// of curl's stdout: as a change, or in the initial state.
			code, _ := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"`+name+`"}}`)
			if code != 201 {
				t.Fatalf("create: %d", code)
			}
			for lines.Scan() {
				var ev api.WatchEvent
				if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
					t.Fatalf("curl printed %q: %v", lines.Text(), err)
				}
				obj, _ := api.ParseObject(ev.Object)
				if ev.Type == api.Added && obj.Name() == name {
					return
				}
			}
			t.Fatalf("curl's stream ended without the event: %v", lines.Err())
		})
	}
}
