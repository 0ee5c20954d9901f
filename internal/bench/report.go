package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the report as a table, one column per target.
func (r *FanoutReport) Print(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "fanout: %d watchers (%s, %s reader), %d writes/s of %d B for %v\n", c.Watchers, transportLabel(c.Transport, c.TLS), c.Reader, c.Rate, c.Size, c.Duration)
	results := []Result{r.Server}
	if r.Bare != nil {
		results = append(results, *r.Bare)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(Result) string) {
		fmt.Fprint(tw, name, "\t")
		for _, res := range results {
			fmt.Fprint(tw, f(res), "\t")
		}
		fmt.Fprintln(tw)
	}
	row("target", func(x Result) string { return x.Target })
	row("writes (failed)", func(x Result) string { return fmt.Sprintf("%d (%d)", x.Writes, x.WritesFailed) })
	row("achieved writes/s", func(x Result) string { return orNA(x.WriteRate > 0, "%.1f", x.WriteRate) })
	row("write ack p50 / p99", func(x Result) string {
		return orNA(x.WriteLatency.Count > 0, "%s", ms(x.WriteLatency.P50)+" / "+ms(x.WriteLatency.P99))
	})
	if r.Server.StoreCommits != nil {
		row("store commit p99 / max <=", func(x Result) string { return x.StoreCommits.String() })
	}
	row("deliveries/s", func(x Result) string { return fmt.Sprintf("%.0f", x.PerSecond) })
	row("received / expected", func(x Result) string { return fmt.Sprintf("%d / %d", x.Received, x.Expected) })
	row("missed", func(x Result) string { return fmt.Sprint(x.Missed) })
	row("duplicates", func(x Result) string { return fmt.Sprint(x.Duplicates) })
	row("errors", func(x Result) string { return fmt.Sprint(x.Errors) })
	row("latency p50", func(x Result) string { return ms(x.Latency.P50) })
	row("latency p99", func(x Result) string { return ms(x.Latency.P99) })
	row("latency max", func(x Result) string { return ms(x.Latency.Max) })
	row("event bytes", func(x Result) string { return fmt.Sprint(x.EventBytes) })
	row("target CPU s", func(x Result) string { return fmt.Sprintf("%.2f", x.CPU.Seconds()) })
	row("CPU/delivery µs", func(x Result) string { return fmt.Sprintf("%.2f", us(x.CPUPerEvent)) })
	row("target RSS / HWM MiB", func(x Result) string { return fmt.Sprintf("%.1f / %.1f", mib(x.RSS), mib(x.HWM)) })
	row("load generator CPU s", func(x Result) string { return fmt.Sprintf("%.2f", x.ClientCPU.Seconds()) })
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Bare == nil {
		return nil
	}
	if len(r.Rounds) > 1 {
		return r.printRounds(w)
	}
	_, err := fmt.Fprintf(w, "CPU per delivery, server / bare: %.2fx\n", r.Ratio)
	return err
}

// printRounds writes each round's CPU per delivery and ratio (the table
// above is the last round's), and the ratios' mean and range.
func (r *FanoutReport) printRounds(w io.Writer) error {
	var b strings.Builder // written at once, so that no line's error is lost
	sum, lo, hi := 0.0, r.Rounds[0].Ratio, r.Rounds[0].Ratio
	for i, x := range r.Rounds {
		fmt.Fprintf(&b, "round %d: CPU per delivery, server %.2f µs, bare %.2f µs: %.3fx\n", i+1, us(x.Server), us(x.Bare), x.Ratio)
		sum += x.Ratio
		lo, hi = min(lo, x.Ratio), max(hi, x.Ratio)
	}
	fmt.Fprintf(&b, "CPU per delivery, server / bare: %.3fx mean of %d rounds (%.3f-%.3f)\n", sum/float64(len(r.Rounds)), len(r.Rounds), lo, hi)
	_, err := io.WriteString(w, b.String())
	return err
}

// Print writes the idle report.
func (r *IdleReport) Print(w io.Writer) error {
	_, err := fmt.Fprintf(w, "idle: %d watchers (%s)\nRSS before %.1f MiB, after %.1f MiB (samples %s), HWM %.1f MiB\nper watcher: %.1f KiB\n",
		r.Config.Watchers, transportLabel(r.Config.Transport, r.Config.TLS), mib(r.Before), mib(r.After), mibs(r.Samples), mib(r.HWM), r.PerWatcher/1024)
	return err
}

// Print writes the list report.
func (r *ListReport) Print(w io.Writer) error {
	_, err := fmt.Fprintf(w, "list: %d objects of %d B, resourceVersion=0, %d runs\nresponse %d B; time to last byte min %s, p50 %s, max %s; %.2f GB/s at p50; server CPU %.2f ms per list\n",
		r.Config.Objects, r.Config.Size, r.Config.Runs, r.Bytes, ms(r.Min), ms(r.P50), ms(r.Max), r.BytesPerSecond/1e9, float64(r.CPUPerList)/float64(time.Millisecond))
	return err
}

// String is the p99 and max bounds of the commits and their number, or
// n/a when there were none (or no figures: c is nil).
func (c *StoreCommits) String() string {
	if c == nil || c.Count == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s / %s (%d commits)", bound(c.P99), bound(c.Max), c.Count)
}

// bound is a StoreCommits figure: a duration, or +Inf.
func bound(d time.Duration) string {
	if d == Unbounded {
		return "+Inf"
	}
	return ms(d)
}

func orNA(ok bool, format string, v any) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func mibs(v []int64) string {
	s := ""
	for i, b := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", mib(b))
	}
	return s
}
