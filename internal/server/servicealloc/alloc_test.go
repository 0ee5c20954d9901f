package servicealloc

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// newAllocator returns an Allocator over a new memory store, giving
// addresses of prefix and ports of ports.
func newAllocator(t *testing.T, prefix string, ports PortRange) *Allocator {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	catalog := resource.NewCatalog(resource.Builtins()...)
	reg := registry.New(store, slog.Default())
	a, err := New(t.Context(), reg, store, catalog, Config{ClusterIPRanges: []netip.Prefix{netip.MustParsePrefix(prefix)}, NodePorts: ports}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func service(name, typ string) api.Object {
	return api.Object{"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{"type": typ, "ports": []any{map[string]any{"port": 80}}}}
}

// TestStaleHintNeverSharesAnAddress checks that the store's create, not
// the allocator's view of what is taken, decides: an allocator that has
// not seen another server's allocations (its view emptied) passes over
// every address and port they hold and finds the range full, never giving
// one twice.
func TestStaleHintNeverSharesAnAddress(t *testing.T) {
	a := newAllocator(t, "10.9.0.0/29", PortRange{Base: 30000, Size: 4}) // 6 addresses, 4 ports
	held := map[string]bool{}
	for i := range 6 {
		svc := service(fmt.Sprintf("s%d", i), "ClusterIP")
		if i < 4 {
			svc["spec"].(map[string]any)["type"] = "NodePort"
		}
		finish, err := a.Begin(t.Context(), svc, nil)
		if err != nil {
			t.Fatalf("s%d: %v", i, err)
		}
		finish(true)
		ip := svc["spec"].(map[string]any)["clusterIP"].(string)
		port := fmt.Sprint(svc["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"])
		if held[ip] || i < 4 && held[port] {
			t.Fatalf("s%d: %s or %s given twice", i, ip, port)
		}
		held[ip], held[port] = true, true
	}
	a.ips, a.portsTaken = newTakenSet(), newTakenSet() // as a server that has seen none of it
	for _, typ := range []string{"ClusterIP", "NodePort"} {
		svc := service("late", typ)
		if typ == "NodePort" {
			svc["spec"].(map[string]any)["clusterIP"] = "None" // no address: the ports alone
		}
		_, err := a.Begin(t.Context(), svc, nil)
		var se *api.StatusError
		if !errors.As(err, &se) || se.Status.Code != 500 || !strings.HasSuffix(se.Status.Message, "range is full") {
			t.Errorf("%s: %v (spec %v), want kube's 500 of a full range", typ, err, svc["spec"])
		}
	}
}

// newServiceStore returns an Allocator on the default ranges, giving the
// Services its registry writes (namespace default exists) over a new
// memory store.
func newServiceStore(t *testing.T) (*Allocator, *registry.Registry, storage.Interface, *resource.Resource) {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	catalog := resource.NewCatalog(resource.Builtins()...)
	reg := registry.New(store, slog.Default())
	a, err := New(t.Context(), reg, store, catalog, Config{}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	services, _ := catalog.Get("", "v1", "services")
	services.Allocate, services.Release = a.Begin, a.Release
	namespaces, _ := catalog.Get("", "v1", "namespaces")
	if _, err := reg.Create(t.Context(), namespaces, "", api.Object{"metadata": map[string]any{"name": "default"}}); err != nil {
		t.Fatal(err)
	}
	return a, reg, store, services
}

// TestRepair checks that Repair frees what no stored Service holds once
// older than RepairGrace (a write whose server stopped after allocating),
// and never what a stored Service holds or a young allocation, which may
// be a write in flight.
func TestRepair(t *testing.T) {
	a, reg, store, services := newServiceStore(t)
	kept := api.Object{"metadata": map[string]any{"name": "kept", "namespace": "default"}, "spec": map[string]any{
		"type": "LoadBalancer", "externalTrafficPolicy": "Local", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
		"ports": []any{map[string]any{"port": 80, "targetPort": 80, "protocol": "TCP"}},
	}}
	stored, err := reg.Create(t.Context(), services, "default", kept)
	if err != nil {
		t.Fatal(err)
	}
	ghost := service("ghost", "NodePort") // allocated, never stored
	if _, err := a.Begin(t.Context(), ghost, nil); err != nil {
		t.Fatal(err)
	}
	address := func(obj api.Object) string { return obj["spec"].(map[string]any)["clusterIP"].(string) }
	// An address made for kept, which kept does not hold: one that
	// neither allocation drew.
	notHeld := "10.0.0.250"
	if notHeld == address(stored.Object) || notHeld == address(ghost) {
		notHeld = "10.0.0.251"
	}
	if notHeld == address(stored.Object) || notHeld == address(ghost) {
		notHeld = "10.0.0.252"
	}
	if err := a.createIPAddress(t.Context(), stored.Object, a.ranges[0], netip.MustParseAddr(notHeld)); err != nil {
		t.Fatal(err)
	}
	port := func(obj api.Object) int {
		return intOf(obj["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"])
	}
	taken := func(ip string, p int) (bool, bool) {
		_, ipErr := reg.Get(t.Context(), a.ipAddresses, "", ip)
		_, portErr := store.Get(t.Context(), nodePortKey(p))
		return ipErr == nil, portErr == nil
	}
	for _, at := range []time.Duration{0, RepairGrace + time.Minute} {
		if err := a.Repair(t.Context(), services, time.Now().Add(at)); err != nil {
			t.Fatal(err)
		}
		hc := intOf(stored.Object["spec"].(map[string]any)["healthCheckNodePort"])
		if ip, p := taken(address(stored.Object), port(stored.Object)); !ip || !p || hc == 0 {
			t.Errorf("after %v: a stored Service's address taken %v, node port %v; want both kept", at, ip, p)
		} else if _, hcTaken := taken(address(stored.Object), hc); !hcTaken {
			t.Errorf("after %v: a stored Service's health check node port %d freed", at, hc)
		}
		ip, p := taken(address(ghost), port(ghost))
		if want := at == 0; ip != want || p != want {
			t.Errorf("after %v: a leaked address taken %v, node port %v; want %v", at, ip, p, want)
		}
	}
	if _, err := reg.Get(t.Context(), a.ipAddresses, "", notHeld); !isNotFound(err) {
		t.Errorf("an address its parent does not hold is kept: %v", err)
	}
	want := []string{
		"Warning ipallocator-repair-controller IPAddressAllocation IPAddressNotAllocated IPAddress " + address(ghost) +
			": IPAddress: " + address(ghost) + " for Service default/ghost appears to have leaked: cleaning up",
		"Warning ipallocator-repair-controller IPAddressAllocation IPAddressWrongReference IPAddress " + notHeld +
			": IPAddress: " + notHeld + " for Service default/kept has a wrong reference; cleaning up",
	}
	slices.Sort(want)
	if got := repairEvents(t, a); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// fixedSource is a rand source that always answers one value (not 0:
// Uint64N rejects a draw of 0 for most n, and would draw forever).
type fixedSource uint64

func (s fixedSource) Uint64() uint64 { return uint64(s) }

// TestLargeRangeStartsInRange checks that the search for a free address of
// a /64, the widest range kube allows, starts within the range whatever
// the random draw: at the extremes, the range's last address and the first
// beyond its offset (kube's KEP-3070 reserve of 256).
func TestLargeRangeStartsInRange(t *testing.T) {
	prefix := netip.MustParsePrefix("fd00::/64")
	for draw, want := range map[uint64]string{1: "fd00::101", ^uint64(0): "fd00::ffff:ffff:ffff:ffff"} {
		a := newAllocator(t, prefix.String(), DefaultNodePortRange)
		a.rand = rand.New(fixedSource(draw))
		svc := service("s", "ClusterIP")
		finish, err := a.Begin(t.Context(), svc, nil)
		if err != nil {
			t.Fatal(err)
		}
		finish(true)
		if got := svc["spec"].(map[string]any)["clusterIP"]; got != want {
			t.Errorf("draw %#x: clusterIP %v, want %s", draw, got, want)
		}
	}
}

// repairEvents are the Events in namespace default, each as "type
// controller action reason kind name: note", sorted.
func repairEvents(t *testing.T, a *Allocator) []string {
	t.Helper()
	list, err := a.registry.List(t.Context(), a.events, "default", registry.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range list.Items {
		regarding := ev["regarding"].(map[string]any)
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s: %s", ev["type"], ev["reportingController"], ev["action"], ev["reason"], regarding["kind"], regarding["name"], ev["note"]))
	}
	slices.Sort(got)
	return got
}

// TestRepairRemakesMissingAddress checks that Repair mends the IPAddress
// of an address a stored Service holds, as kube's RepairIPAddress, with
// its warning Events on the Service: one missing is made again, one naming
// another parent (that does not hold the address) is made again for the
// Service, one that lost the allocator's labels is made again silently;
// an address of no configured range is only warned of.
func TestRepairRemakesMissingAddress(t *testing.T) {
	a, reg, store, services := newServiceStore(t)
	addresses := map[string]string{}
	for _, name := range []string{"lost", "far", "stolen", "relabeled"} {
		svc := service(name, "ClusterIP")
		svc["spec"].(map[string]any)["sessionAffinity"] = "None"
		svc["spec"].(map[string]any)["internalTrafficPolicy"] = "Cluster"
		svc["spec"].(map[string]any)["ports"] = []any{map[string]any{"port": 80, "targetPort": 80, "protocol": "TCP"}}
		w, err := reg.Create(t.Context(), services, "default", svc)
		if err != nil {
			t.Fatal(err)
		}
		addresses[name] = w.Object["spec"].(map[string]any)["clusterIP"].(string)
	}
	if _, _, err := reg.Delete(t.Context(), a.ipAddresses, "", addresses["lost"], registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Changes behind the server's back (a restore of another cluster's
	// data, a hand edit of the store): far's address moved out of every
	// range; stolen's IPAddress names another parent, relabeled's lost a
	// label.
	rewrite := func(key, from, to string) {
		t.Helper()
		kv, err := store.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Update(t.Context(), key, kv.ModRevision, []byte(strings.ReplaceAll(string(kv.Value), from, to))); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(services.Key("default", "far"), `"`+addresses["far"]+`"`, `"10.99.0.1"`)
	rewrite(a.ipAddresses.Key("", addresses["stolen"]), `"name":"stolen"`, `"name":"nobody"`)
	rewrite(a.ipAddresses.Key("", addresses["relabeled"]), ipManager, "someone-else")
	if err := a.Repair(t.Context(), services, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lost", "stolen", "relabeled"} {
		w, err := reg.Get(t.Context(), a.ipAddresses, "", addresses[name])
		if err != nil {
			t.Fatalf("%s: IPAddress %s not made again: %v", name, addresses[name], err)
		}
		ref := w["spec"].(map[string]any)["parentRef"].(map[string]any)
		if ref["name"] != name || ref["namespace"] != "default" || ref["resource"] != "services" || w.Labels()[labelManagedBy] != ipManager {
			t.Errorf("%s: IPAddress made again: %v", name, w)
		}
	}
	if _, err := reg.Get(t.Context(), a.ipAddresses, "", "10.99.0.1"); err == nil {
		t.Error("an IPAddress was made for an address of no range")
	}
	got := repairEvents(t, a)
	want := []string{
		"Warning ipallocator-repair-controller ClusterIPAllocation ClusterIPNotAllocated Service lost: Cluster IP [IPv4]: " + addresses["lost"] + " is not allocated; repairing",
		"Warning ipallocator-repair-controller ClusterIPAllocation ClusterIPNotAllocated Service stolen: the ClusterIP [IPv4]: " + addresses["stolen"] + " for Service default/stolen has a wrong reference; repairing",
		"Warning ipallocator-repair-controller ClusterIPAllocation ClusterIPOutOfRange Service far: Cluster IP [IPv4]: 10.99.0.1 is not within any configured Service CIDR; please recreate service",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
