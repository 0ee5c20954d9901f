package cache

import (
	"testing"

	"github.com/listwatch/listwatch/client/cache/cachetest"
)

func TestCoalescing(t *testing.T) {
	v := func(rv int) *obj { return cachetest.New("ns", "a", rv) }
	add := notification[*obj]{kind: notifyAdd, key: "ns/a", obj: v(1), flag: true}
	upd := notification[*obj]{kind: notifyUpdate, key: "ns/a", old: v(1), obj: v(2)}
	del := notification[*obj]{kind: notifyDelete, key: "ns/a", obj: v(3), flag: true}
	readd := notification[*obj]{kind: notifyAdd, key: "ns/a", obj: v(4)}
	for _, tc := range []struct {
		name string
		in   []notification[*obj]
		want string // "" for nothing
	}{
		{"add, update", []notification[*obj]{add, upd}, "add 2 true"},
		{"add, delete", []notification[*obj]{add, upd, del}, ""},
		{"update, delete", []notification[*obj]{upd, del}, "delete 3 true"},
		{"delete, add", []notification[*obj]{del, readd}, "update 3->4"},
		{"update, update", []notification[*obj]{upd, {kind: notifyUpdate, old: v(2), obj: v(5)}}, "update 1->5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoalesced(tc.in[0])
			for _, n := range tc.in[1:] {
				c.merge(n)
			}
			n, ok := c.notification("ns/a")
			got := ""
			if ok {
				switch n.kind {
				case notifyAdd:
					got = "add " + n.obj.ResourceVersion + map[bool]string{true: " true", false: " false"}[n.flag]
				case notifyUpdate:
					got = "update " + n.old.ResourceVersion + "->" + n.obj.ResourceVersion
				case notifyDelete:
					got = "delete " + n.obj.ResourceVersion + map[bool]string{true: " true", false: " false"}[n.flag]
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
