package client

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestJSONReaderCutsInsideEscapes: values whose strings hold runs of
// backslashes and escaped quotes are read whole however the stream is cut.
func TestJSONReaderCutsInsideEscapes(t *testing.T) {
	values := []string{
		`"a\\"`, `"\\\""`, `"\\\\"`, `"\""`, `"\\\\\\\"x\\"`,
		`["\"",{"k\\":"\\\\\""},"\u005c"]`, `{"a":"\\","b":["\\\"\\"]}`,
	}
	for _, v := range values {
		data := v + ` 1`
		for n := 1; n <= len(data); n++ {
			raw, err := newJSONReader(chunkReader{strings.NewReader(data), n}).readValue()
			if err != nil || string(raw) != v {
				t.Fatalf("%s read %d bytes at a time: %s, %v", v, n, raw, err)
			}
		}
	}
}

// TestJSONReaderScansCutStringsOnce: a long string read a little at a time
// is scanned once, not again after each read (which took 1.8 s for 16 MiB
// of plain bytes and longer for escapes).
func TestJSONReaderScansCutStringsOnce(t *testing.T) {
	for _, unit := range []string{"x", `\\`, `\"`, `x\\\\\\`} {
		v := `"` + strings.Repeat(unit, 16<<20/len(unit)) + `"`
		start := time.Now()
		raw, err := newJSONReader(chunkReader{strings.NewReader(v), 1400}).readValue()
		elapsed := time.Since(start)
		if err != nil || len(raw) != len(v) {
			t.Fatalf("%s: read %d bytes of %d, %v", unit, len(raw), len(v), err)
		}
		t.Logf("%s: %v", unit, elapsed)
		if elapsed > time.Second {
			t.Errorf("%s: 16 MiB string read 1400 bytes at a time in %v, want well under a second", unit, elapsed)
		}
	}
}

// BenchmarkJSONLongString: the time per MiB stays flat as a string read a
// little at a time grows.
func BenchmarkJSONLongString(b *testing.B) {
	for _, mib := range []int{1, 4, 16} {
		v := `"` + strings.Repeat("x", mib<<20) + `"`
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if _, err := newJSONReader(chunkReader{strings.NewReader(v), 1400}).readValue(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJSONReaderBoundsValues: a value up to the bound is read, one over it
// is refused with an error naming the bound, however the stream is cut.
func TestJSONReaderBoundsValues(t *testing.T) {
	const limit = 100
	for _, chunk := range []int{1, 7, 1 << 20} {
		for _, v := range []string{
			`"` + strings.Repeat("x", limit-2) + `"`,
			`{"a":"` + strings.Repeat(`\"`, (limit-8)/2) + `"}`,
			`[` + strings.Repeat("1,", (limit-4)/2) + `10]`,
		} {
			if len(v) != limit {
				t.Fatalf("%s has %d bytes, want %d", v, len(v), limit)
			}
			for _, over := range []bool{false, true} {
				in := v
				if over {
					in = in[:1] + " " + in[1:]
				}
				d := newJSONReader(chunkReader{strings.NewReader(in + " " + in), chunk})
				d.limit = limit
				raw, err := d.readValue()
				switch {
				case !over && (err != nil || string(raw) != in):
					t.Fatalf("%d bytes, %d at a time: %q, %v", len(in), chunk, raw, err)
				case over && (err == nil || !strings.Contains(err.Error(), "over 100 bytes")):
					t.Fatalf("%d bytes over the bound of %d, %d at a time: err = %v", len(in), limit, chunk, err)
				}
			}
		}
	}
}

// TestWatchRefusesEventOverBound: the default bound holds on a watch, and
// the reader's buffer stops growing there.
func TestWatchRefusesEventOverBound(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	body := io.MultiReader(
		strings.NewReader(`{"type":"ADDED","object":{"metadata":{"name":"a"}}}`+"\n"+`{"type":"ADDED","object":{"data":"`),
		endless('x'))
	got, err := collect(NewStreamWatch[Unstructured](io.NopCloser(body)))
	if len(got) != 1 || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("over %d bytes", maxJSONValue)) {
		t.Fatalf("got %d events and err %v, want 1 and the bound's error", len(got), err)
	}
}

// endless reads as c over and over.
type endless byte

func (c endless) Read(p []byte) (int, error) {
	if len(p) > 0 {
		p[0] = byte(c)
		for n := 1; n < len(p); n *= 2 {
			copy(p[n:], p[:n])
		}
	}
	return len(p), nil
}
