//go:build race

package lockrank

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
)

const checking = true

var (
	mu   sync.Mutex
	held = map[uint64][]int{} // by goroutine, the ranks it holds, in the order taken
)

func acquire[R Rank]() {
	var r R
	rank, name := r.rank()
	g := goroutine()
	mu.Lock()
	defer mu.Unlock()
	for _, h := range held[g] {
		if h >= rank {
			panic(fmt.Sprintf("lockrank: %s (rank %d) taken while holding a lock of rank %d", name, rank, h))
		}
	}
	held[g] = append(held[g], rank)
}

func release[R Rank]() {
	var r R
	rank, _ := r.rank()
	g := goroutine()
	mu.Lock()
	defer mu.Unlock()
	hs := held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i] == rank {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(held, g)
	} else {
		held[g] = hs
	}
}

// goroutine is the calling goroutine's id, from its stack's first line
// ("goroutine 7 [running]:"): race builds only.
func goroutine() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}
