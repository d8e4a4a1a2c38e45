package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/observe"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Schedules. Every process that has a schedule looks at it about once a
// second (Run) and starts the jobs of the ticks that came due, in one
// transaction that reads and writes the schedule's state (sched/<name>):
// the last tick handled and the ticks buffered. Looks at one schedule go
// one at a time (its state's counter is their lock), and each tick's job
// is started under the job key schedule/<name>/<tick>, written once, so
// even two looks that did race would start one job between them.

// schedule is a registered schedule with its parsed cron expression.
type schedule struct {
	runtype.Schedule
	cron cron.Schedule
}

// scheduleState is stored at sched/<name>.
type scheduleState struct {
	// Last is the last tick handled (started, skipped or buffered); the
	// schedule's registration time before its first tick.
	Last time.Time `json:"last"`
	// Buffered are ticks waiting for the running job (OverlapBuffer).
	Buffered []time.Time `json:"buffered,omitempty"`
	// Job is the job of the last tick started.
	Job     string `json:"job,omitempty"`
	Started int    `json:"started"`
	Skipped int    `json:"skipped"`
	Dropped int    `json:"dropped,omitempty"` // missed ticks older than CatchUp
}

// defaultCatchUp is how far back missed ticks are started by default.
const defaultCatchUp = time.Hour

// AddSchedule makes this engine start s's jobs (StartDue, and Run about
// once a second). Several processes may have the same schedule: each tick
// starts one job whichever of them sees it first. Adding a schedule of a
// name added before replaces it when it starts the same flow (a newer
// version registering it again) and is refused when it starts another:
// the two would share one state and one set of job keys.
func (e *Engine) AddSchedule(s runtype.Schedule) error {
	if s.Name == "" || strings.ContainsAny(s.Name, "/") {
		return fmt.Errorf("schedule %q: a schedule needs a name without slashes", s.Name)
	}
	c, err := cron.ParseStandard(s.Cron)
	if err != nil {
		return fmt.Errorf("schedule %s: cron %q: %w", s.Name, s.Cron, err)
	}
	switch s.Overlap {
	case "":
		s.Overlap = runtype.OverlapSkip
	case runtype.OverlapSkip, runtype.OverlapBuffer, runtype.OverlapAllow:
	default:
		return fmt.Errorf("schedule %s: overlap %q: want skip, buffer or allow", s.Name, s.Overlap)
	}
	if s.CatchUp <= 0 {
		s.CatchUp = defaultCatchUp
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range e.schedules {
		if o.Name == s.Name && parseFlowRef(o.Flow).name != parseFlowRef(s.Flow).name {
			return fmt.Errorf("schedule %s: already starts jobs of flow %s; give the schedule of %s another name", s.Name, o.Flow, s.Flow)
		}
	}
	e.schedules = slices.DeleteFunc(e.schedules, func(o *schedule) bool { return o.Name == s.Name })
	e.schedules = append(e.schedules, &schedule{Schedule: s, cron: c})
	return nil
}

// StartDue starts the jobs of every tick of the engine's schedules that
// came due, by their overlap policies, and returns how many it started.
func (e *Engine) StartDue(ctx context.Context) (int, error) {
	e.mu.RLock()
	schedules := slices.Clone(e.schedules)
	e.mu.RUnlock()
	started := 0
	var errs []error
	for _, s := range schedules {
		n, err := e.startDue(ctx, s)
		started += n
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.Name, err))
		}
	}
	return started, errors.Join(errs...)
}

// startDue handles the due ticks of one schedule in one transaction.
func (e *Engine) startDue(ctx context.Context, s *schedule) (int, error) {
	c, err := e.flow(s.Flow)
	if err != nil {
		return 0, err
	}
	now := e.now().UTC()
	started, skipped, dropped := 0, 0, 0
	err = e.store.Update(ctx, func(tx store.Tx) error {
		started, skipped, dropped = 0, 0, 0
		// Processes looking at once read the state one after another.
		if err := lockRow(tx, protocol.ScheduleKey(s.Name)); err != nil {
			return err
		}
		var st scheduleState
		if found, err := protocol.GetJSON(tx, protocol.ScheduleKey(s.Name), &st); err != nil {
			return err
		} else if !found {
			st.Last = now // a new schedule: its ticks start from now
			return putJSON(tx, protocol.ScheduleKey(s.Name), st)
		}
		before := st
		due := s.ticks(&st, now)
		dropped = st.Dropped - before.Dropped
		if len(due) == 0 {
			if dropped == 0 {
				return nil
			}
			return putJSON(tx, protocol.ScheduleKey(s.Name), st) // past the dropped ticks for good
		}
		for len(due) > 0 {
			running, err := jobRunning(tx, st.Job)
			if err != nil {
				return err
			}
			if running && s.Overlap == runtype.OverlapSkip {
				st.Skipped++
				skipped++
				due = due[1:]
				continue
			}
			if running && s.Overlap == runtype.OverlapBuffer {
				break
			}
			job, created, err := e.startTick(ctx, tx, c, s, due[0])
			if err != nil {
				return err
			}
			st.Job, due = job.String(), due[1:]
			if created {
				st.Started++
				started++
			}
		}
		st.Buffered = due
		return putJSON(tx, protocol.ScheduleKey(s.Name), st)
	})
	if err != nil {
		return 0, err
	}
	for result, n := range map[string]int{"started": started, "skipped": skipped, "dropped": dropped} {
		if n > 0 {
			e.metrics.Add(observe.Ticks, float64(n), s.Name, result)
		}
	}
	return started, e.crash(runtype.CrashScheduled)
}

// ticks returns the schedule's ticks to handle now: those buffered, then
// those that came due since the last one handled (at most CatchUp old),
// and moves st.Last past them.
func (s *schedule) ticks(st *scheduleState, now time.Time) []time.Time {
	due := st.Buffered
	for t := s.cron.Next(st.Last); !t.After(now); t = s.cron.Next(t) {
		st.Last = t
		if now.Sub(t) > s.CatchUp {
			st.Dropped++
			continue
		}
		due = append(due, t)
	}
	return due
}

// startTick starts, in tx, the job of the schedule's tick under its
// deterministic job key and reports true, or returns the job that key
// names already and false.
func (e *Engine) startTick(ctx context.Context, tx store.Tx, c *compiled, s *schedule, tick time.Time) (runtype.JobID, bool, error) {
	key := "schedule/" + s.Name + "/" + tick.UTC().Format(time.RFC3339)
	var claim protocol.StartKeyRecord
	if found, err := protocol.GetJSON(tx, protocol.StartKey(key), &claim); err != nil {
		return runtype.JobID{}, false, err
	} else if found {
		job, err := runtype.ParseJobID(claim.Job)
		return job, false, err
	}
	st, err := e.newStart(ctx, c, key, s.Input)
	if err != nil {
		return runtype.JobID{}, false, err
	}
	st.traced(nil) // the tick's trace starts here, whether or not its commit makes it
	_, err = e.writeStart(tx, c, st, false)
	return st.job, true, err
}

// jobRunning reports whether the job (its id as a string; "" for none)
// still runs.
func jobRunning(tx store.ReadTx, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	job, err := runtype.ParseJobID(id)
	if err != nil {
		return false, err
	}
	st, found, err := readStatus(tx, job)
	if err != nil || !found {
		return false, err
	}
	return !st.Done(), nil
}

// runSchedules calls StartDue about once a second until ctx ends.
func (e *Engine) runSchedules(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if _, err := e.StartDue(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("starting scheduled jobs; will look again", "err", err)
		}
	}
}
