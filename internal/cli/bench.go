package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/listwatch/listwatch/internal/bench"
)

func newBench() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a server: watch fan-out, idle watches, lists from the cache",
		Long: "bench starts `listwatch serve` as a child on a free loopback port with a fresh data\n" +
			"directory (or uses --server), drives it, and reports its latency, CPU and memory.",
	}
	cmd.AddCommand(newBenchFanout(), newBenchIdle(), newBenchList(), newBenchCRUD(), newBenchGC(), newBenchBareServer())
	return cmd
}

// targetFlags choose the server a bench command measures.
type targetFlags struct {
	url        string
	pid        int
	token      string
	serveFlags []string
	cpuProfile string
}

func (t *targetFlags) add(f *pflag.FlagSet) {
	f.StringVar(&t.url, "server", "", "measure this server (http://host:port) instead of starting one")
	f.IntVar(&t.pid, "server-pid", 0, "with --server: its process id, for CPU and memory figures")
	f.StringVar(&t.token, "token", "", "with --server: a bearer token every request sends")
	f.StringArrayVar(&t.serveFlags, "serve-flag", nil, "a flag for the started `serve` (repeatable), e.g. --serve-flag=--unsafe-no-fsync")
	f.StringVar(&t.cpuProfile, "server-cpuprofile", "", "write the started server's CPU profile to this file")
}

// resolve returns the target and how to start a server.
func (t *targetFlags) resolve() (bench.Process, bench.ServerOptions, error) {
	self, err := os.Executable()
	if err != nil {
		return bench.Process{}, bench.ServerOptions{}, fmt.Errorf("finding this executable: %w", err)
	}
	o := bench.ServerOptions{Binary: self, Args: t.serveFlags}
	if t.cpuProfile != "" {
		abs, err := filepath.Abs(t.cpuProfile)
		if err != nil {
			return bench.Process{}, o, fmt.Errorf("--server-cpuprofile: %w", err)
		}
		o.Args = append(o.Args, "--cpuprofile", abs)
	}
	return bench.Process{URL: t.url, PID: t.pid, Token: t.token}, o, nil
}

// printer is a bench report.
type printer interface{ Print(io.Writer) error }

// benchCommand is a bench subcommand measuring the server its target flags
// choose: it resolves them into target and server, runs run and prints
// its report. The caller adds the command's own flags.
func benchCommand(use, short string, target *bench.Process, server *bench.ServerOptions, run func(context.Context) (printer, error)) *cobra.Command {
	var t targetFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if *target, *server, err = t.resolve(); err != nil {
				return err
			}
			rep, err := run(cmd.Context())
			if err != nil {
				return err
			}
			return rep.Print(cmd.OutOrStdout())
		},
	}
	t.add(cmd.Flags())
	return cmd
}

// readerHelp describes --reader, the load generator's watch reader.
const readerHelp = "how the load generator reads watches: " + bench.ReaderEpoll + " (a few epoll loops decoding the chunked streams in place; http1 without --tls, Linux only) " +
	"or " + bench.ReaderGoroutine + " (a goroutine per watch through net/http's chunked reader, about 15 µs of CPU per delivery); default " +
	bench.ReaderEpoll + " where it can read the transport, else " + bench.ReaderGoroutine

func newBenchFanout() *cobra.Command {
	cfg := bench.FanoutConfig{Watchers: 1000, Rate: 50, Size: 1024, Duration: 30 * time.Second, Transport: bench.TransportHTTP1, Baseline: true, Drain: 10 * time.Second}
	cmd := benchCommand("fanout", "W watchers, one writer at R writes/s: delivery latency, misses, server CPU per delivery, against a bare-socket baseline", &cfg.Target, &cfg.Server, func(ctx context.Context) (printer, error) {
		return bench.Fanout(ctx, cfg)
	})
	f := cmd.Flags()
	f.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, fmt.Sprintf("watches to open (at most %d)", bench.MaxWatchers))
	f.IntVar(&cfg.Rate, "rate", cfg.Rate, "writes per second")
	f.IntVar(&cfg.Size, "size", cfg.Size, "bytes of each object")
	kindFlag(f, &cfg.Kind)
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, fmt.Sprintf("how long to write (at most %v)", bench.MaxDuration))
	f.StringVar(&cfg.Transport, "transport", cfg.Transport, "http1 (a connection per watch), h2c (multiplexed), or with --tls h2 (multiplexed)")
	f.StringVar(&cfg.Reader, "reader", "", readerHelp+"; the bare baseline is read the same way")
	f.BoolVar(&cfg.TLS, "tls", false, "serve the started server and the baseline over TLS, with a self-signed certificate made for the run (with --server: an https URL)")
	f.BoolVar(&cfg.Baseline, "baseline", cfg.Baseline, "also measure the bare-socket baseline and print the ratio")
	f.DurationVar(&cfg.Drain, "drain", cfg.Drain, "how long to wait for deliveries after the last write")
	f.IntVar(&cfg.Rounds, "rounds", 1, fmt.Sprintf("repeat the run and its baseline, one after the other, and print each round's ratio and their mean (at most %d)", bench.MaxRounds))
	return cmd
}

func newBenchIdle() *cobra.Command {
	cfg := bench.IdleConfig{Watchers: 10_000, Transport: bench.TransportHTTP1, Settle: 5 * time.Second}
	cmd := benchCommand("idle", "The server's resident memory per idle watch", &cfg.Target, &cfg.Server, func(ctx context.Context) (printer, error) {
		return bench.Idle(ctx, cfg)
	})
	f := cmd.Flags()
	f.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, fmt.Sprintf("idle watches to open (at most %d)", bench.MaxWatchers))
	f.StringVar(&cfg.Transport, "transport", cfg.Transport, "http1 (a connection per watch), h2c (multiplexed), or with --tls h2 (multiplexed)")
	f.StringVar(&cfg.Reader, "reader", "", readerHelp)
	f.BoolVar(&cfg.TLS, "tls", false, "serve the started server over TLS, with a self-signed certificate made for the run (with --server: an https URL)")
	f.DurationVar(&cfg.Settle, "settle", cfg.Settle, "wait before sampling memory")
	return cmd
}

func newBenchList() *cobra.Command {
	cfg := bench.ListConfig{Objects: 10_000, Size: 1024, Runs: 20}
	cmd := benchCommand("list", "Time to last byte of a LIST from the watch cache (resourceVersion=0)", &cfg.Target, &cfg.Server, func(ctx context.Context) (printer, error) {
		return bench.List(ctx, cfg)
	})
	f := cmd.Flags()
	f.IntVar(&cfg.Objects, "objects", cfg.Objects, fmt.Sprintf("objects to create (at most %d)", bench.MaxObjects))
	f.IntVar(&cfg.Size, "size", cfg.Size, "bytes of each object")
	kindFlag(f, &cfg.Kind)
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "lists to time")
	return cmd
}

func newBenchCRUD() *cobra.Command {
	cfg := bench.CRUDConfig{Clients: 32, Duration: 10 * time.Second, Size: 1024}
	cmd := benchCommand("crud", "Start-up time, idle memory, and create and get throughput from concurrent clients", &cfg.Target, &cfg.Server, func(ctx context.Context) (printer, error) {
		return bench.CRUD(ctx, cfg)
	})
	f := cmd.Flags()
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, fmt.Sprintf("concurrent clients, each on its own connection (at most %d)", bench.MaxClients))
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each phase (creates, then gets)")
	f.IntVar(&cfg.Size, "size", cfg.Size, "bytes of each object")
	kindFlag(f, &cfg.Kind)
	return cmd
}

// kindFlag is the --kind of the runs that write objects.
func kindFlag(f *pflag.FlagSet, kind *string) {
	f.StringVar(kind, "kind", bench.KindConfigMaps, "what to write: "+bench.KindConfigMaps+", or "+bench.KindPods+" (two containers, defaulted and validated as kube does)")
}

func newBenchGC() *cobra.Command {
	cfg := bench.GCConfig{Dependents: 10_000, Policy: bench.PolicyBackground, Size: 1024, Rounds: 1, Timeout: 5 * time.Minute}
	cmd := benchCommand("gc", "Delete an owner of N dependents: time until the garbage collector is done, server CPU and memory", &cfg.Target, &cfg.Server, func(ctx context.Context) (printer, error) {
		return bench.GC(ctx, cfg)
	})
	f := cmd.Flags()
	f.IntVar(&cfg.Dependents, "dependents", cfg.Dependents, fmt.Sprintf("ConfigMaps the owner ConfigMap owns (at most %d)", bench.MaxDependents))
	f.StringVar(&cfg.Policy, "policy", cfg.Policy, "the DELETE's propagationPolicy: "+bench.PolicyBackground+", "+bench.PolicyForeground+" (dependents block the owner's deletion) or "+bench.PolicyOrphan)
	f.IntVar(&cfg.Size, "size", cfg.Size, "bytes of each object")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, fmt.Sprintf("rounds, each on a fresh started server (at most %d)", bench.MaxRounds))
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "how long a round may wait for the collector")
	return cmd
}

// newBenchBareServer is the baseline `bench fanout` starts as a child.
func newBenchBareServer() *cobra.Command {
	var cfg bench.BareConfig
	cmd := &cobra.Command{
		Use:    "bare-server",
		Short:  "Write pre-encoded frames to plain sockets (the fan-out baseline; controlled on stdin)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.ServeBare(cmd.Context(), cfg, cmd.InOrStdin())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:0", "address to serve on")
	f.IntVar(&cfg.Watchers, "watchers", 1, "connections to accept")
	f.IntVar(&cfg.Rate, "rate", 1, "frames per second")
	f.IntVar(&cfg.Size, "size", 1024, "bytes of each frame")
	f.DurationVar(&cfg.Duration, "duration", time.Second, "how long to write")
	f.StringVar(&cfg.CertFile, "tls-cert-file", "", "serve TLS with this certificate")
	f.StringVar(&cfg.KeyFile, "tls-private-key-file", "", "the key of --tls-cert-file")
	return cmd
}
