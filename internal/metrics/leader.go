package metrics

import "github.com/prometheus/client_golang/prometheus"

// LeaderStatus exports whether this server leads the election for lease
// name, as component-base's leader_election_master_status{name}: 0 until
// it does. It returns the setter.
func (m *Metrics) LeaderStatus(name string) func(leading bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leader == nil {
		m.leader = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "leader_election_master_status",
			Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
		}, []string{"name"})
		m.reg.MustRegister(m.leader)
	}
	g := m.leader.WithLabelValues(name)
	g.Set(0)
	return func(leading bool) {
		if leading {
			g.Set(1)
		} else {
			g.Set(0)
		}
	}
}
