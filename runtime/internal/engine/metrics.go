package engine

import (
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// metrics tells the engine's counts and durations to an observe.Metrics
// (docs/observability.md). Labels are bounded: flow names and aliases,
// definition hashes, outcome and failure kinds, schedule names; never a
// job id. Everything is told after the commit it describes, so a
// rolled-back transaction counts nothing and a retried one counts once.
type metrics struct{ observe.Metrics }

// newMetrics tells m, or nobody when m is nil.
func newMetrics(m observe.Metrics) metrics {
	if m == nil {
		return metrics{observe.Nop{}}
	}
	return metrics{m}
}

// flowName is the flow name of a flow key (name#hash) or reference.
func flowName(flow string) string {
	name, _, _ := strings.Cut(flow, flowKeySep)
	return name
}

// countEntered counts what the committed entries of entered did: the
// hand-backs for want of a flow definition, the leases taken over.
func (m metrics) countEntered(entered []*entry) {
	for _, en := range entered {
		if en.unserved {
			name, hash := en.t.FlowKey()
			m.Add(observe.Unserved, 1, name, hash)
		}
		if en.tookOver {
			m.Add(observe.Takeovers, 1)
		}
	}
}

// committed counts what a committed steps commit recorded for en: its
// outcome and duration and, when it closed the job, the job's.
func (m metrics) committed(en *entry, now time.Time) {
	flow := flowName(en.t.Flow)
	if res := en.res; res != nil && en.result != nil { // a result this commit wrote
		outcome, kind := "succeeded", ""
		if res.Failed() {
			outcome, kind = "failed", string(res.ErrKind)
			if res.ErrKind == runtype.Canceled {
				outcome = "canceled"
			}
		}
		m.Add(observe.Finished, 1, flow, en.t.Node, outcome, kind)
		if en.t.Kind == protocol.Undo {
			m.Add(observe.Compensations, 1, flow, en.t.Node, outcome)
		}
		if !en.entered.IsZero() {
			m.Observe(observe.ActivationDuration, now.Sub(en.entered).Seconds(), flow, en.t.Node)
		}
		if en.t.Resume == timerResume {
			m.Add(observe.Timers, 1, flow)
		}
	}
	if st := en.status; st != nil {
		m.Observe(observe.JobDuration, st.Finished.Sub(st.Started).Seconds(), flow, string(st.State))
	}
}
