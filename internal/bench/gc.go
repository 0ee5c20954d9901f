package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// Propagation policies of a DELETE, as DeleteOptions names them.
const (
	PolicyBackground = "Background"
	PolicyForeground = "Foreground"
	PolicyOrphan     = "Orphan"
)

// GCConfig configures `listwatch bench gc`: delete the owner of many
// dependents and time the server's garbage collector.
type GCConfig struct {
	Dependents int
	Policy     string // PolicyBackground, PolicyForeground or PolicyOrphan
	Size       int    // bytes of each object's JSON
	Rounds     int
	// Timeout bounds each round's wait for the collector.
	Timeout time.Duration
	// Target is the server; with an empty URL a fresh child is started
	// from Server for each round.
	Target Process
	Server ServerOptions
}

// MaxDependents bounds GCConfig.Dependents.
const MaxDependents = 100_000

// GCReport is every round of a gc run.
type GCReport struct {
	Config GCConfig
	Rounds []GCRound
}

// GCRound is one deletion of an owner.
type GCRound struct {
	Create time.Duration // creating the dependents
	// Elapsed is from the DELETE of the owner until the watch has shown
	// every dependent deleted (Background, Foreground) or without its
	// ownerReference (Orphan), and the owner deleted.
	Elapsed time.Duration
	CPU     time.Duration // the server's, over Elapsed
	// RSSBefore is the server's RSS at the DELETE; RSS and HWM (its peak
	// so far) at the end.
	RSSBefore, RSS, HWM int64
	// Commits are the server's store commits over Elapsed; nil when it
	// does not export them.
	Commits *StoreCommits
}

// GC measures the garbage collection of an owner's dependents, a round at
// a time.
func GC(ctx context.Context, cfg GCConfig) (*GCReport, error) {
	switch {
	case cfg.Dependents < 1 || cfg.Dependents > MaxDependents:
		return nil, fmt.Errorf("--dependents %d: must be in [1, %d]", cfg.Dependents, MaxDependents)
	case !slices.Contains([]string{PolicyBackground, PolicyForeground, PolicyOrphan}, cfg.Policy):
		return nil, fmt.Errorf("--policy %q: must be %s, %s or %s", cfg.Policy, PolicyBackground, PolicyForeground, PolicyOrphan)
	case cfg.Size < 0 || cfg.Size > MaxSize:
		return nil, fmt.Errorf("--size %d: must be in [0, %d]", cfg.Size, MaxSize)
	case cfg.Rounds < 1 || cfg.Rounds > MaxRounds:
		return nil, fmt.Errorf("--rounds %d: must be in [1, %d]", cfg.Rounds, MaxRounds)
	case cfg.Timeout <= 0 || cfg.Timeout > MaxDuration:
		return nil, fmt.Errorf("--timeout %v: must be in (0, %v]", cfg.Timeout, MaxDuration)
	case cfg.Target.URL == "" && cfg.Server.Binary == "":
		return nil, errors.New("no server: give its URL or the listwatch binary")
	}
	rep := &GCReport{Config: cfg}
	// Names unique to the run, for a server given by URL that keeps them.
	run := "gc" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range cfg.Rounds {
		r, err := withServer(ctx, cfg.Target, cfg.Server, nil, func(p Process) (GCRound, error) {
			return gcRound(ctx, cfg, p, run+"-"+strconv.Itoa(i+1))
		})
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		rep.Rounds = append(rep.Rounds, r)
	}
	return rep, nil
}

// gcRound creates an owner named prefix and its dependents, watches them,
// deletes the owner and waits for the collector to finish.
func gcRound(ctx context.Context, cfg GCConfig, p Process, prefix string) (GCRound, error) {
	a := newAPIClient(p, configMapKind)
	defer a.close()
	if err := a.ensureNamespace(ctx); err != nil {
		return GCRound{}, err
	}
	w := newGCWatch(cfg.Policy, prefix, cfg.Dependents)
	b, err := a.do(ctx, http.MethodPost, configMaps, configMap(w.owner, cfg.Size, time.Now()))
	if err != nil {
		return GCRound{}, fmt.Errorf("creating the owner: %w", err)
	}
	if w.ownerUID, err = uidOf(b); err != nil {
		return GCRound{}, err
	}
	// kube lets a foreground deletion finish before the dependents that do
	// not block it are gone.
	block := cfg.Policy == PolicyForeground
	refs := fmt.Sprintf(`,"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"blockOwnerDeletion":%v}]`, w.owner, w.ownerUID, block)
	var r GCRound
	start := time.Now()
	err = createEach(ctx, a, cfg.Dependents, func(i int) []byte {
		return configMapMeta(w.dependent(i), refs, cfg.Size, time.Now())
	})
	if err != nil {
		return GCRound{}, fmt.Errorf("creating the dependents: %w", err)
	}
	r.Create = time.Since(start)
	rv, err := a.listRevision(ctx)
	if err != nil {
		return GCRound{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	path := configMaps + "?watch=true&resourceVersion=" + strconv.FormatInt(rv, 10) + "&timeoutSeconds=" + strconv.FormatInt(int64(cfg.Timeout.Seconds())+60, 10)
	body, err := openHTTP1(ctx, watchSpec{base: p.URL, path: path, transport: TransportHTTP1, tls: p.clientTLS(), token: p.Token})
	if err != nil {
		return GCRound{}, err
	}
	defer body.Close()
	// The collector has the creates' events to take in; let it finish.
	if err := wait.Sleep(ctx, settle); err != nil {
		return GCRound{}, err
	}
	commits, _ := a.commitBuckets(ctx)
	u0, err := ReadUsage(p.PID)
	if err != nil {
		return GCRound{}, err
	}
	start = time.Now()
	if _, err := a.do(ctx, http.MethodDelete, configMaps+"/"+w.owner, []byte(`{"propagationPolicy":"`+cfg.Policy+`"}`)); err != nil {
		return GCRound{}, fmt.Errorf("deleting the owner: %w", err)
	}
	if err := w.follow(body); err != nil {
		return GCRound{}, fmt.Errorf("%w (%d dependents left, owner gone %v, after %v)", err, len(w.pending), w.ownerGone, time.Since(start).Round(time.Millisecond))
	}
	r.Elapsed = time.Since(start)
	u1, err := ReadUsage(p.PID)
	if err != nil {
		return GCRound{}, err
	}
	r.CPU, r.RSSBefore, r.RSS, r.HWM = u1.CPU-u0.CPU, u0.RSS, u1.RSS, u1.HWM
	r.Commits = a.storeCommits(ctx, commits)
	return r, nil
}

// uidOf is the metadata.uid of an object's JSON.
func uidOf(b []byte) (string, error) {
	var o struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &o); err != nil || o.Metadata.UID == "" {
		return "", fmt.Errorf("no uid in the created owner %.200q: %v", b, err)
	}
	return o.Metadata.UID, nil
}

// gcWatch follows a deletion on a watch of the namespace's configmaps.
type gcWatch struct {
	policy          string
	owner, ownerUID string
	prefix          string
	pending         map[string]bool // dependents not yet deleted (or orphaned)
	ownerGone       bool
}

func newGCWatch(policy, prefix string, dependents int) *gcWatch {
	w := &gcWatch{policy: policy, owner: prefix + "-owner", prefix: prefix, pending: make(map[string]bool, dependents)}
	for i := range dependents {
		w.pending[w.dependent(i)] = true
	}
	return w
}

func (w *gcWatch) dependent(i int) string { return w.prefix + "-" + strconv.Itoa(i) }

// ownerRef is what an ownerReference says of the owner.
type ownerRef struct {
	UID string `json:"uid"`
}

// gcEvent is what a watch event says of the deletion.
type gcEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string     `json:"name"`
			OwnerReferences []ownerRef `json:"ownerReferences"`
		} `json:"metadata"`
		Message string `json:"message"` // of an ERROR's Status
	} `json:"object"`
}

// follow reads the watch until the deletion is done, it ends, or its
// events break the policy's order.
func (w *gcWatch) follow(body io.Reader) error {
	dec := json.NewDecoder(body)
	for !w.ownerGone || len(w.pending) > 0 {
		var e gcEvent
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("reading the watch: %w", err)
		}
		if err := w.observe(e); err != nil {
			return err
		}
	}
	return nil
}

// observe takes in one event.
func (w *gcWatch) observe(e gcEvent) error {
	md := e.Object.Metadata
	switch {
	case e.Type == "ERROR":
		return fmt.Errorf("the watch failed: %s", e.Object.Message)
	case e.Type == "DELETED" && md.Name == w.owner:
		if w.policy != PolicyBackground && len(w.pending) > 0 {
			return fmt.Errorf("the owner was deleted before its dependents were %s", gcDone(w.policy))
		}
		w.ownerGone = true
	case !w.pending[md.Name]:
	case e.Type == "DELETED":
		if w.policy == PolicyOrphan {
			return fmt.Errorf("dependent %s was deleted, not orphaned", md.Name)
		}
		delete(w.pending, md.Name)
	case e.Type == "MODIFIED" && w.policy == PolicyOrphan:
		if !slices.Contains(md.OwnerReferences, ownerRef{w.ownerUID}) {
			delete(w.pending, md.Name)
		}
	}
	return nil
}

// Print writes each round and, for several, the mean and range.
func (r *GCReport) Print(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "gc: delete an owner of %d dependents of %d B, propagationPolicy %s\n", c.Dependents, c.Size, c.Policy)
	var elapsed, cpu []time.Duration
	for i, x := range r.Rounds {
		fmt.Fprintf(w, "round %d: dependents created in %s; all %s in %s (%.0f/s); server CPU %.2f s; RSS %.1f -> %.1f MiB, peak %.1f MiB",
			i+1, ms(x.Create), gcDone(c.Policy), ms(x.Elapsed), float64(c.Dependents)/x.Elapsed.Seconds(), x.CPU.Seconds(), mib(x.RSSBefore), mib(x.RSS), mib(x.HWM))
		if x.Commits != nil {
			fmt.Fprintf(w, "; store commit p99 / max <= %s", x.Commits)
		}
		fmt.Fprintln(w)
		elapsed, cpu = append(elapsed, x.Elapsed), append(cpu, x.CPU)
	}
	if len(r.Rounds) < 2 {
		return nil
	}
	_, err := fmt.Fprintf(w, "mean of %d rounds: %s (%s-%s), server CPU %.2f s (%.2f-%.2f)\n", len(r.Rounds),
		ms(mean(elapsed)), ms(slices.Min(elapsed)), ms(slices.Max(elapsed)), mean(cpu).Seconds(), slices.Min(cpu).Seconds(), slices.Max(cpu).Seconds())
	return err
}

// gcDone is what the policy does to the dependents.
func gcDone(policy string) string {
	if policy == PolicyOrphan {
		return "orphaned"
	}
	return "deleted"
}

func mean(v []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range v {
		sum += d
	}
	return sum / time.Duration(len(v))
}
