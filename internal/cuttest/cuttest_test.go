package cuttest

import (
	"testing"
	"time"
)

// maxLagP99 is the handler lag the informers may add to what the machine
// adds while their connections are cut (client-go stays around a
// millisecond).
const maxLagP99 = time.Second

// TestInformerLagUnderCuts runs our informer, with LIST and with a
// streaming list, through a proxy that cuts their connections every ~2 s
// while writes arrive: each handler must see each write within a second
// (p99) of when a control informer, connected straight to the server, sees
// it (a loaded machine stalls both alike), and neither may list again (no
// 410 happens), counted by the reflector and at the server.
func TestInformerLagUnderCuts(t *testing.T) {
	sched := DefaultSchedule()
	list, stream := &OurInformer{Name: "listwatch"}, &OurInformer{Name: "listwatch-watchlist", UseWatchList: true}
	control := (&OurInformer{Name: "control"}).Informer(t)
	control.Direct = true
	results, writes, cuts := LagRun(t, sched, list.Informer(t), stream.Informer(t), control)
	t.Logf("%d writes, %d cuts; %v", writes, cuts, results[2])
	for i, inf := range []*OurInformer{list, stream} {
		r, st := results[i], inf.Stats()
		t.Logf("%v; reflector %+v", r, st)
		if bound := results[2].P99 + maxLagP99; r.P99 >= bound {
			t.Errorf("%s: handler lag p99 %v, want under %v (the control's p99 and %v)", r.Name, r.P99, bound, maxLagP99)
		}
		wantLists := 1 // the first
		if inf.UseWatchList {
			wantLists = 0
		}
		if r.Reads.Lists != wantLists || st.Relists != 0 || st.WatchListFallbacks != 0 {
			t.Errorf("%s: %d LISTs at the server, %d relists, %d fallbacks to LIST: want %d, 0, 0 (no 410 happened)",
				r.Name, r.Reads.Lists, st.Relists, st.WatchListFallbacks, wantLists)
		}
	}
	if cuts < int(sched.Run/sched.MaxCut) {
		t.Errorf("only %d cuts: the run did not test anything", cuts)
	}
}
