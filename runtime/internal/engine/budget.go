package engine

import (
	"fmt"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// budgetCeiling bounds a job's spent-activations counter.
const budgetCeiling = 1 << 50

// jobBudget is a budget as a job carries it: an activation ceiling and an
// absolute deadline.
type jobBudget struct {
	MaxActivations int64     `json:"maxActivations,omitempty"`
	Deadline       time.Time `json:"deadline,omitzero"`
}

func budgetFrom(b runtype.Budget, start time.Time) jobBudget {
	jb := jobBudget{MaxActivations: b.Activations}
	if b.Timeout > 0 {
		jb.Deadline = start.Add(b.Timeout)
	}
	return jb
}

// within is the child budget b allows when the parent has left (the
// smaller ceiling, the earlier deadline; zero is unlimited on either side).
func (b jobBudget) within(left jobBudget) jobBudget {
	if left.MaxActivations > 0 && (b.MaxActivations == 0 || left.MaxActivations < b.MaxActivations) {
		b.MaxActivations = left.MaxActivations
	}
	if !left.Deadline.IsZero() && (b.Deadline.IsZero() || left.Deadline.Before(b.Deadline)) {
		b.Deadline = left.Deadline
	}
	return b
}

// stamp gives tasks the job's budget, so that the processor and the router
// enforce it without reading the job's meta.
func (b jobBudget) stamp(ts []task) {
	for i := range ts {
		ts[i].MaxActivations = b.MaxActivations
		if !b.Deadline.IsZero() {
			ts[i].Deadline = b.Deadline.UnixNano()
		}
	}
}

func budgetOf(t task) jobBudget {
	b := jobBudget{MaxActivations: t.MaxActivations}
	if t.Deadline != 0 {
		b.Deadline = time.Unix(0, t.Deadline).UTC()
	}
	return b
}

// spend charges the activations about to be published to the job's
// budget, in the publishing transaction, and refuses those past it.
func spend(tx store.Tx, job runtype.JobID, b jobBudget, ts []task) error {
	if b.MaxActivations == 0 {
		return nil
	}
	charged := 0
	for _, t := range ts {
		if t.Kind != protocol.Undo {
			charged++
		}
	}
	if charged == 0 {
		return nil
	}
	spent, err := tx.Add(protocol.SpentKey(job), int64(charged), budgetCeiling)
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	n := spent - int64(charged) // spent before these
	for i := range ts {
		if ts[i].Kind == protocol.Undo {
			continue
		}
		if n++; n > b.MaxActivations && ts[i].Refused == "" {
			ts[i].Refused = fmt.Sprintf("budget exhausted: activation %d of a budget of %d", n, b.MaxActivations)
		}
	}
	return nil
}

// spent is how many activations a job has charged to its budget.
func spent(tx store.ReadTx, job runtype.JobID) (int64, error) {
	return tx.Counter(protocol.SpentKey(job))
}

// overdue is the refusal of an activation that would begin after the job's
// deadline ("" when it may run). Compensations always run.
func overdue(t task, now time.Time) string {
	if t.Deadline == 0 || t.Kind == protocol.Undo || now.UnixNano() <= t.Deadline {
		return ""
	}
	return "budget exhausted: the job's deadline " + time.Unix(0, t.Deadline).UTC().Format(time.RFC3339Nano) + " has passed"
}
