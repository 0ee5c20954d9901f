package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// IdleConfig configures `listwatch bench idle`.
type IdleConfig struct {
	Watchers  int
	Transport string
	// Reader is ReaderGoroutine or ReaderEpoll (http1 without TLS, on
	// Linux); "" picks epoll where it can.
	Reader string
	// TLS serves the started child over TLS with a certificate made for
	// the run; with a Target URL, it must be https.
	TLS bool
	// Target is the server; with an empty URL a child is started from Server.
	// A fresh child is the honest measurement.
	Target Process
	Server ServerOptions
	// Settle is the wait before memory is sampled.
	Settle time.Duration
}

// IdleReport is the server's memory before and after the idle watches.
type IdleReport struct {
	Config        IdleConfig
	Before, After int64   // median VmRSS, bytes
	Samples       []int64 // VmRSS samples after, bytes
	HWM           int64   // VmHWM at the end
	PerWatcher    float64 // (After - Before) / Watchers, bytes
}

// rssSamples are taken rssInterval apart; their median is the measurement.
const (
	rssSamples  = 5
	rssInterval = 500 * time.Millisecond
)

// Idle measures the server's resident memory per idle watch.
func Idle(ctx context.Context, cfg IdleConfig) (*IdleReport, error) {
	switch {
	case cfg.Watchers < 1 || cfg.Watchers > MaxWatchers:
		return nil, fmt.Errorf("--watchers %d: must be in [1, %d]", cfg.Watchers, MaxWatchers)
	case cfg.Settle <= 0 || cfg.Settle > MaxDuration:
		return nil, fmt.Errorf("settle %v: must be in (0, %v]", cfg.Settle, MaxDuration)
	}
	if err := checkTLS(cfg.Target, cfg.TLS); err != nil {
		return nil, err
	}
	if err := checkTransport(cfg.Transport, cfg.TLS); err != nil {
		return nil, err
	}
	var err error
	if cfg.Reader, err = resolveReader(cfg.Reader, cfg.Transport, cfg.TLS); err != nil {
		return nil, err
	}
	var cert *certificate
	if cfg.TLS && cfg.Target.URL == "" {
		var err error
		if cert, err = newCertificate(); err != nil {
			return nil, err
		}
		defer cert.remove()
	}
	return withServer(ctx, cfg.Target, cfg.Server, cert, func(p Process) (*IdleReport, error) {
		if p.PID == 0 {
			return nil, fmt.Errorf("idle needs the server's pid to read its memory")
		}
		return idle(ctx, cfg, p)
	})
}

func idle(ctx context.Context, cfg IdleConfig, p Process) (*IdleReport, error) {
	a := newAPIClient(p, configMapKind)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	rv, err := a.listRevision(ctx)
	if err != nil {
		return nil, err
	}
	rep := &IdleReport{Config: cfg}
	before, err := sampleRSS(ctx, p.PID, cfg.Settle)
	if err != nil {
		return nil, err
	}
	var d deliveries
	path := watchPath(configMapKind, rv, FanoutConfig{Duration: cfg.Settle + time.Duration(rssSamples)*rssInterval, Drain: time.Minute})
	ws, err := openWatches(ctx, watchSpec{base: p.URL, path: path, transport: cfg.Transport, tls: p.clientTLS(), token: p.Token, startRV: rv, reader: cfg.Reader}, cfg.Watchers, &d)
	if err != nil {
		return nil, err
	}
	defer ws.close()
	if rep.Samples, err = sampleRSS(ctx, p.PID, cfg.Settle); err != nil {
		return nil, err
	}
	rep.Before, rep.After = median(before), median(rep.Samples)
	rep.PerWatcher = float64(rep.After-rep.Before) / float64(cfg.Watchers)
	u, err := ReadUsage(p.PID)
	rep.HWM = u.HWM
	return rep, err
}

// sampleRSS waits settle, then returns rssSamples readings of VmRSS.
func sampleRSS(ctx context.Context, pid int, settle time.Duration) ([]int64, error) {
	if err := wait.Sleep(ctx, settle); err != nil {
		return nil, err
	}
	var out []int64
	for i := range rssSamples {
		if i > 0 {
			if err := wait.Sleep(ctx, rssInterval); err != nil {
				return nil, err
			}
		}
		u, err := ReadUsage(pid)
		if err != nil {
			return nil, err
		}
		out = append(out, u.RSS)
	}
	return out, nil
}

func median(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
