package bolt

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/storagetest"
)

const (
	// crashChildEnv names the data directory of the child process of
	// TestCrash; TestMain runs crashChild instead of the tests when it is set.
	crashChildEnv = "LISTWATCH_BOLT_CRASH_DIR"
	// crashWriters is the number of goroutines writing in the child.
	crashWriters = 32
	// crashAcks is how many acknowledged writes the parent waits for before
	// killing the child.
	crashAcks = 2000
)

// crashChild writes from crashWriters goroutines with fsync on, printing
// "ack <key> <revision>" for every write that returned success, until it is
// killed. It returns an exit code.
func crashChild(dir string) int {
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%d/%d", g, i)
				rev, err := s.Create(context.Background(), key, []byte(key))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(3)
				}
				out.Lock()
				fmt.Fprintf(os.Stdout, "ack %s %d\n", key, rev)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return 0
}

// TestCrash kills a writing child process with SIGKILL and checks that every
// acknowledged write survived, with gap-free history that a watch replays.
func TestCrash(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var key string
		var rev int64
		if n, _ := fmt.Sscanf(sc.Text(), "ack %s %d", &key, &rev); n != 2 {
			continue // a line cut by the kill
		}
		acked[key] = rev
		if len(acked) == crashAcks {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil || len(acked) < crashAcks {
		t.Fatalf("child ended (%v) after %d acknowledged writes, before being killed", err, len(acked))
	}
	checkAfterCrash(t, dir, acked)
}

func checkAfterCrash(t *testing.T, dir string, acked map[string]int64) {
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for key, rev := range acked {
		kv, err := s.Get(ctx, key)
		if err != nil || kv.ModRevision != rev || string(kv.Value) != key {
			t.Fatalf("acknowledged %s at %d: got %+v, %v", key, rev, kv, err)
		}
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range storagetest.Collect(t, w, int(cur)) {
		if ev.Revision != int64(i+1) || !strings.HasPrefix(ev.KV.Key, "/crash/") || !ev.IsCreate() {
			t.Fatalf("history entry %d: %+v", i, ev)
		}
		if rev, ok := acked[ev.KV.Key]; ok && rev != ev.Revision {
			t.Fatalf("%s acknowledged at %d, in history at %d", ev.KV.Key, rev, ev.Revision)
		}
	}
	t.Logf("%d acknowledged writes, %d in history after the crash", len(acked), cur)
	if _, err := s.List(ctx, "/crash/", storage.ListOptions{Revision: cur / 2}); err != nil {
		t.Fatalf("List at a past revision after the crash: %v", err)
	}
}
