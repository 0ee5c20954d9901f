package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// ListConfig configures `listwatch bench list`.
type ListConfig struct {
	Objects int
	Size    int
	Kind    string // KindConfigMaps ("") or KindPods
	Runs    int
	// Target is the server; with an empty URL a child is started from Server.
	Target Process
	Server ServerOptions
}

// MaxObjects bounds the objects a list run creates.
const MaxObjects = 200_000

// ListReport is the time to last byte of LISTs served from the watch cache.
type ListReport struct {
	Config         ListConfig
	Bytes          int64 // of one response
	Min, P50, Max  time.Duration
	BytesPerSecond float64       // Bytes / P50
	CPUPerList     time.Duration // the server's, averaged over the runs
}

// List creates the objects, then times LIST with resourceVersion=0.
func List(ctx context.Context, cfg ListConfig) (*ListReport, error) {
	switch {
	case cfg.Objects < 1 || cfg.Objects > MaxObjects:
		return nil, fmt.Errorf("--objects %d: must be in [1, %d]", cfg.Objects, MaxObjects)
	case cfg.Size < 0 || cfg.Size > MaxSize:
		return nil, fmt.Errorf("--size %d: must be in [0, %d]", cfg.Size, MaxSize)
	case cfg.Runs < 1 || cfg.Runs > 1000:
		return nil, fmt.Errorf("--runs %d: must be in [1, 1000]", cfg.Runs)
	}
	return withServer(ctx, cfg.Target, cfg.Server, nil, func(p Process) (*ListReport, error) {
		return list(ctx, cfg, p)
	})
}

func list(ctx context.Context, cfg ListConfig, p Process) (*ListReport, error) {
	k, err := kindFor(cfg.Kind)
	if err != nil {
		return nil, err
	}
	a := newAPIClient(p, k)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	if err := createObjects(ctx, a, cfg.Objects, cfg.Size); err != nil {
		return nil, fmt.Errorf("creating the objects: %w", err)
	}
	if err := a.checkList(ctx, cfg.Objects); err != nil {
		return nil, err
	}
	u0, err := ReadUsage(p.PID)
	if err != nil {
		return nil, err
	}
	rep := &ListReport{Config: cfg}
	times := make([]time.Duration, cfg.Runs)
	for i := range times {
		if times[i], rep.Bytes, err = a.timeList(ctx); err != nil {
			return nil, err
		}
	}
	u1, err := ReadUsage(p.PID)
	if err != nil {
		return nil, err
	}
	slices.Sort(times)
	rep.Min, rep.P50, rep.Max = times[0], times[len(times)/2], times[len(times)-1]
	rep.BytesPerSecond = float64(rep.Bytes) / rep.P50.Seconds()
	rep.CPUPerList = (u1.CPU - u0.CPU) / time.Duration(cfg.Runs)
	return rep, nil
}

// checkList waits for the cache to hold every object (a consistent list),
// then checks that a resourceVersion=0 list returns n items.
func (a *apiClient) checkList(ctx context.Context, n int) error {
	if _, err := a.do(ctx, http.MethodGet, a.kind.path, nil); err != nil {
		return err
	}
	b, err := a.do(ctx, http.MethodGet, a.kind.path+"?resourceVersion=0", nil)
	if err != nil {
		return err
	}
	var l struct{ Items []json.RawMessage }
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("decoding the list: %w", err)
	}
	if len(l.Items) != n {
		return fmt.Errorf("the list has %d items, want %d", len(l.Items), n)
	}
	return nil
}

// timeList sends one LIST with resourceVersion=0 and returns the time to
// its last byte and its size.
func (a *apiClient) timeList(ctx context.Context) (time.Duration, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+a.kind.path+"?resourceVersion=0", nil)
	if err != nil {
		return 0, 0, fmt.Errorf("making the list request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	a.authorize(req)
	start := time.Now()
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("list: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the list: %w", err)
	}
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("list answered %s", resp.Status)
	}
	return took, n, nil
}
