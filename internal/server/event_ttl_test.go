package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// ttlServer starts a Server on store inside a synctest bubble; the test's
// cleanup closes it. It returns once the server leads.
func ttlServer(t *testing.T, store storage.Interface) *Server {
	t.Helper()
	s, err := New(context.Background(), Config{Storage: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	synctest.Wait()
	return s
}

func coreEventsOf(s *Server) *resource.Resource {
	events, _ := s.catalog.Get("", "v1", "events")
	return events
}

func putEvent(t *testing.T, s *Server, name, note string) {
	t.Helper()
	obj := api.Object{
		"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": name, "namespace": "default"},
		"involvedObject": map[string]any{"kind": "Pod", "name": "p", "namespace": "default"}, "message": note,
	}
	if cur, err := s.registry.Get(context.Background(), coreEventsOf(s), "default", name); err == nil {
		obj["metadata"].(map[string]any)["resourceVersion"] = cur.ResourceVersion()
		if _, err := s.registry.Update(context.Background(), coreEventsOf(s), "default", name, func(api.Object) (api.Object, error) { return obj, nil }); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := s.registry.Create(context.Background(), coreEventsOf(s), "default", obj); err != nil {
		t.Fatal(err)
	}
}

// alive reports which of names are stored, once the server's
// controllers have done what the time allows.
func alive(t *testing.T, store storage.Interface, s *Server, names ...string) string {
	t.Helper()
	synctest.Wait()
	out := ""
	for _, n := range names {
		_, err := store.Get(context.Background(), coreEventsOf(s).Key("default", n))
		switch {
		case err == nil:
			out += n + " "
		case !errors.Is(err, storage.ErrNotFound):
			t.Fatal(err)
		}
	}
	return out
}

// TestEventTTL: an event is deleted an hour (the default --event-ttl)
// after its last write, an update pushing its expiry back.
func TestEventTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		s := ttlServer(t, store)
		putEvent(t, s, "old", "first")
		putEvent(t, s, "updated", "first")
		time.Sleep(30 * time.Minute)
		putEvent(t, s, "updated", "again")
		putEvent(t, s, "young", "first")
		time.Sleep(30*time.Minute - time.Second)
		if got := alive(t, store, s, "old", "updated", "young"); got != "old updated young " {
			t.Fatalf("a second before the hour: %q alive, want all", got)
		}
		time.Sleep(2 * time.Second)
		if got := alive(t, store, s, "old", "updated", "young"); got != "updated young " {
			t.Fatalf("a second after the hour: %q alive, want the updated and the young", got)
		}
		time.Sleep(30 * time.Minute)
		if got := alive(t, store, s, "old", "updated", "young"); got != "" {
			t.Fatalf("an hour after the last writes: %q alive, want none", got)
		}
	})
}

// TestEventTTLRestart: events written while no server ran expire an hour
// after the last write they record (managedFields, else their own times,
// else creationTimestamp), and one that claims a future time an hour
// after the server found it.
func TestEventTTLRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		ago := func(d time.Duration) string { return time.Now().Add(-d).UTC().Format(time.RFC3339) }
		events := coreEventsOf(&Server{catalog: resource.NewCatalog(resource.Builtins()...)})
		for name, md := range map[string]string{
			// managedFields win over the event's own older times
			"managed": fmt.Sprintf(`"creationTimestamp":%q,"managedFields":[{"manager":"a","operation":"Update","time":%q},{"manager":"b","operation":"Update","time":%q}]},"lastTimestamp":%q`,
				ago(55*time.Minute), ago(55*time.Minute), ago(20*time.Minute), ago(50*time.Minute)),
			"series":   fmt.Sprintf(`"creationTimestamp":%q},"eventTime":"%s.000000Z","series":{"count":2,"lastObservedTime":"%s.000000Z"}`, ago(55*time.Minute), ago(50 * time.Minute)[:19], ago(40 * time.Minute)[:19]),
			"created":  fmt.Sprintf(`"creationTimestamp":%q}`, ago(30*time.Minute)),
			"future":   fmt.Sprintf(`"creationTimestamp":%q},"lastTimestamp":"2999-01-01T00:00:00Z"`, ago(59*time.Minute)),
			"timeless": `"uid":"x"}`,
		} {
			value := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"` + name + `","namespace":"default",` + md +
				`,"involvedObject":{"kind":"Pod","name":"p","namespace":"default"}}`
			if _, err := store.Create(context.Background(), events.Key("default", name), []byte(value)); err != nil {
				t.Fatal(err)
			}
		}
		s := ttlServer(t, store)
		all := []string{"managed", "series", "created", "future", "timeless"}
		start := time.Now()
		for _, step := range []struct {
			after time.Duration
			want  string
		}{
			{20*time.Minute - time.Second, "managed series created future timeless "},
			{2 * time.Second, "managed created future timeless "}, // series: written 40 min before start
			{30 * time.Minute, "future timeless "},                // created 30 min before, managed 20 min before
			{10 * time.Minute, ""},                                // an hour after the server found them
		} {
			time.Sleep(step.after)
			if got := alive(t, store, s, all...); got != step.want {
				t.Fatalf("%v after start: %q alive, want %q", time.Since(start), got, step.want)
			}
		}
	})
}

// TestEventTTLFinalizers: an event held by a finalizer expires all the
// same, as etcd deletes a key whose lease expired whatever it holds; a
// delete would only have marked it, for ever.
func TestEventTTLFinalizers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		s := ttlServer(t, store)
		obj := api.Object{
			"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "held", "namespace": "default", "finalizers": []any{"example.com/hold"}},
			"involvedObject": map[string]any{"kind": "Pod", "name": "p", "namespace": "default"},
		}
		if _, err := s.registry.Create(context.Background(), coreEventsOf(s), "default", obj); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour + time.Second)
		if got := alive(t, store, s, "held"); got != "" {
			t.Fatalf("an hour after its write: %q alive, want none", got)
		}
	})
}
