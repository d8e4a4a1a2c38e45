package engine

import (
	"context"
	"encoding/json"

	"github.com/flowgen-dev/flowgen/runtime/internal/maintenance"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// AddSchedule makes this engine start s's jobs (maintenance.Schedules).
func (e *Engine) AddSchedule(s runtype.Schedule) error { return e.schedules.Add(s) }

// StartDue starts the jobs of every tick of the engine's schedules that
// came due, by their overlap policies, and returns how many it started.
func (e *Engine) StartDue(ctx context.Context) (int, error) { return e.schedules.StartDue(ctx) }

// scheduleStarter starts the jobs of e's schedules.
type scheduleStarter struct{ e *Engine }

// Prepare implements maintenance.Starter: a start of a tick's job is a
// start of the flow under the tick's job key, traced from here whether
// or not its commit makes it.
func (s scheduleStarter) Prepare(flow string) (maintenance.StartTick, error) {
	c, err := s.e.flows.flow(flow)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx store.Tx, key string, input json.RawMessage) (runtype.JobID, error) {
		st, err := s.e.newStart(ctx, c, key, input)
		if err != nil {
			return runtype.JobID{}, err
		}
		st.traced(nil)
		_, err = s.e.writes.writeStart(tx, c, st, false)
		return st.job, err
	}, nil
}

// Running implements maintenance.Starter.
func (scheduleStarter) Running(tx store.ReadTx, job runtype.JobID) (bool, error) {
	st, found, err := readStatus(tx, job)
	if err != nil || !found {
		return false, err
	}
	return !st.Done(), nil
}
