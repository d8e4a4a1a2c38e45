package engine

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus metrics. Labels are bounded: flow
// names and definition hashes, never job ids.
type metrics struct {
	unserved *prometheus.CounterVec
}

// newMetrics makes the engine's metrics and registers them with reg (none
// when nil). Engines of one process may share reg: the second finds the
// first's collectors and counts into them.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		unserved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flowgen_unserved_deliveries_total",
			Help: "Deliveries this worker handed back (or, after 15 minutes, dead-lettered) because it has no definition of the job's flow version.",
		}, []string{"flow", "definition"}),
	}
	if reg != nil {
		m.unserved = register(reg, m.unserved)
	}
	return m
}

// register registers c with reg, or returns the collector of the same
// description registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

// countUnserved counts the committed hand-backs among entered.
func (m *metrics) countUnserved(entered []*entry) {
	for _, en := range entered {
		if en.unserved {
			name, hash, _ := strings.Cut(en.t.Flow, flowKeySep)
			m.unserved.WithLabelValues(name, hash).Inc()
		}
	}
}
