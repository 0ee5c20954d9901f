package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
)

// watchOptions are the flags of `listwatch watch`.
type watchOptions struct {
	conn          connFlags
	allNamespaces bool
	selector      string
	output        string
}

func newWatch() *cobra.Command {
	o := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch RESOURCE",
		Short: "Print every change to a resource: type, resourceVersion, key and the changed fields; resumes across disconnects and server restarts",
		Long: `watch lists the resource (printing each object as ADDED), then watches it from the
list's resourceVersion, printing one line per event. When the stream ends or the server
goes away it watches again from the last resourceVersion it printed, so no event is
missed or repeated; only when the server no longer holds that resourceVersion (410) does
it list again, printing what changed meanwhile as ADDED, MODIFIED and DELETED.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.conn.register(cmd)
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "watch across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector")
	f.StringVarP(&o.output, "output", "o", "text", "text, or json (one event a line)")
	return cmd
}

// watcher is one run of `watch`: the objects it has seen by key, to diff
// modifications against and to reconcile after a relist.
type watcher struct {
	r        *client.Resource[client.Unstructured]
	selector string
	out      io.Writer
	json     bool
	known    map[string]client.Unstructured
}

func (o *watchOptions) run(cmd *cobra.Command, resource string) error {
	if o.output != "text" && o.output != outJSON {
		return fmt.Errorf("unknown output format %q: use text or json", o.output)
	}
	s, err := o.conn.newSession(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	_, r, err := s.open(ctx, resource, o.allNamespaces)
	if err != nil {
		return err
	}
	w := &watcher{r: r, selector: o.selector, out: s.out, json: o.output == outJSON, known: map[string]client.Unstructured{}}
	return w.run(ctx)
}

// run lists, follows the watch, and lists again whenever the watch's
// resourceVersion has expired.
func (w *watcher) run(ctx context.Context) error {
	for {
		rv, err := w.relist(ctx)
		if err != nil {
			return err
		}
		f := &follower[client.Unstructured]{
			open: func(ctx context.Context, rv string) (client.Watch[client.Unstructured], error) {
				return w.r.Watch(ctx, client.ListOptions{LabelSelector: w.selector, ResourceVersion: rv, AllowWatchBookmarks: true})
			},
			rvOf:   func(ev client.Event[client.Unstructured]) string { return ev.Object.GetResourceVersion() },
			handle: w.handle,
		}
		err = f.run(ctx, rv)
		if !client.IsExpired(err) {
			return err
		}
	}
}

// relist lists everything and prints how it differs from what was known.
func (w *watcher) relist(ctx context.Context) (string, error) {
	items, rv, err := w.r.ListAll(ctx, client.ListOptions{LabelSelector: w.selector})
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	for _, it := range items {
		key := objectKey(it)
		seen[key] = true
		old, ok := w.known[key]
		switch {
		case !ok:
			err = w.handle(client.Event[client.Unstructured]{Type: client.Added, Object: it})
		case old.GetResourceVersion() != it.GetResourceVersion():
			err = w.handle(client.Event[client.Unstructured]{Type: client.Modified, Object: it})
		}
		if err != nil {
			return "", err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(w.known)) {
		if !seen[key] {
			if err := w.handle(client.Event[client.Unstructured]{Type: client.Deleted, Object: w.known[key]}); err != nil {
				return "", err
			}
		}
	}
	return rv, nil
}

// objectKey is namespace/name, or name for cluster-scoped objects.
func objectKey(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// watchLine is one printed event.
type watchLine struct {
	Type            client.EventType `json:"type"`
	ResourceVersion string           `json:"resourceVersion"`
	Key             string           `json:"key"`
	Changes         []change         `json:"changes,omitempty"`
}

// handle records an event and prints it; bookmarks are not printed.
func (w *watcher) handle(ev client.Event[client.Unstructured]) error {
	if ev.Type == client.Bookmark {
		return nil
	}
	key := objectKey(ev.Object)
	line := watchLine{Type: ev.Type, ResourceVersion: ev.Object.GetResourceVersion(), Key: key}
	switch ev.Type {
	case client.Deleted:
		delete(w.known, key)
	case client.Modified:
		line.Changes = diffObjects(w.known[key], ev.Object)
		fallthrough
	default:
		w.known[key] = ev.Object
	}
	return w.print(line)
}

func (w *watcher) print(l watchLine) error {
	if w.json {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("encoding an event: %w", err)
		}
		_, err = fmt.Fprintf(w.out, "%s\n", b)
		return err
	}
	var changes []string
	for _, c := range l.Changes {
		changes = append(changes, c.String())
	}
	_, err := fmt.Fprintf(w.out, "%-8s %s %s%s\n", l.Type, l.ResourceVersion, l.Key, prefixed("  ", strings.Join(changes, "; ")))
	return err
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
