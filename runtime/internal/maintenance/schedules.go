package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
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

// Schedules starts the jobs of the cron schedules added to it. Its
// exported fields are set once, before its first use.
type Schedules struct {
	// Store holds the schedules' states and the jobs.
	Store store.Store
	// Starter starts the ticks' jobs.
	Starter Starter
	// Now is the clock.
	Now func() time.Time
	// Crash is called at runtype.CrashScheduled after each commit.
	Crash func(point string) error
	// Log receives why Run will look again.
	Log *slog.Logger
	// Metrics counts the ticks handled.
	Metrics observe.Metrics

	mu   sync.RWMutex
	list []*schedule
}

// Starter starts the jobs of schedules' ticks: the engine.
type Starter interface {
	// Prepare finds flow (a name, or name@version) before any
	// transaction, so an unknown flow fails without one, and returns
	// what starts its jobs.
	Prepare(flow string) (StartTick, error)
	// Running reports whether job still runs (false for a job the store
	// does not hold).
	Running(tx store.ReadTx, job runtype.JobID) (bool, error)
}

// StartTick starts, in tx, a job of the prepared flow with input under
// the job key key, which no job holds yet.
type StartTick func(ctx context.Context, tx store.Tx, key string, input json.RawMessage) (runtype.JobID, error)

// Add makes s start jobs (StartDue, and Run about once a second). Several processes may have the same schedule: each tick
// starts one job whichever of them sees it first. Adding a schedule of a
// name added before replaces it when it starts the same flow (a newer
// version registering it again) and is refused when it starts another:
// the two would share one state and one set of job keys.
func (ss *Schedules) Add(s runtype.Schedule) error {
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
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, o := range ss.list {
		if o.Name == s.Name && protocol.FlowName(o.Flow) != protocol.FlowName(s.Flow) {
			return fmt.Errorf("schedule %s: already starts jobs of flow %s; give the schedule of %s another name", s.Name, o.Flow, s.Flow)
		}
	}
	ss.list = slices.DeleteFunc(ss.list, func(o *schedule) bool { return o.Name == s.Name })
	ss.list = append(ss.list, &schedule{Schedule: s, cron: c})
	return nil
}

// StartDue starts the jobs of every tick of the schedules that came
// due, by their overlap policies, and returns how many it started.
func (ss *Schedules) StartDue(ctx context.Context) (int, error) {
	ss.mu.RLock()
	schedules := slices.Clone(ss.list)
	ss.mu.RUnlock()
	started := 0
	var errs []error
	for _, s := range schedules {
		n, err := ss.startDue(ctx, s)
		started += n
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", s.Name, err))
		}
	}
	return started, errors.Join(errs...)
}

// startDue handles the due ticks of one schedule in one transaction.
func (ss *Schedules) startDue(ctx context.Context, s *schedule) (int, error) {
	start, err := ss.Starter.Prepare(s.Flow)
	if err != nil {
		return 0, err
	}
	now := ss.Now().UTC()
	started, skipped, dropped := 0, 0, 0
	err = ss.Store.Update(ctx, func(tx store.Tx) error {
		started, skipped, dropped = 0, 0, 0
		// Processes looking at once read the state one after another.
		if err := protocol.LockRow(tx, protocol.ScheduleKey(s.Name)); err != nil {
			return err
		}
		var st scheduleState
		if found, err := protocol.GetJSON(tx, protocol.ScheduleKey(s.Name), &st); err != nil {
			return err
		} else if !found {
			st.Last = now // a new schedule: its ticks start from now
			return protocol.PutJSON(tx, protocol.ScheduleKey(s.Name), st)
		}
		before := st
		due := s.ticks(&st, now)
		dropped = st.Dropped - before.Dropped
		if len(due) == 0 {
			if dropped == 0 {
				return nil
			}
			return protocol.PutJSON(tx, protocol.ScheduleKey(s.Name), st) // past the dropped ticks for good
		}
		for len(due) > 0 {
			running, err := ss.running(tx, st.Job)
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
			job, created, err := startTick(ctx, tx, start, s, due[0])
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
		return protocol.PutJSON(tx, protocol.ScheduleKey(s.Name), st)
	})
	if err != nil {
		return 0, err
	}
	for result, n := range map[string]int{"started": started, "skipped": skipped, "dropped": dropped} {
		if n > 0 {
			ss.Metrics.Add(observe.Ticks, float64(n), s.Name, result)
		}
	}
	return started, ss.Crash(runtype.CrashScheduled)
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
func startTick(ctx context.Context, tx store.Tx, start StartTick, s *schedule, tick time.Time) (runtype.JobID, bool, error) {
	key := "schedule/" + s.Name + "/" + tick.UTC().Format(time.RFC3339)
	var claim protocol.StartKeyRecord
	if found, err := protocol.GetJSON(tx, protocol.StartKey(key), &claim); err != nil {
		return runtype.JobID{}, false, err
	} else if found {
		job, err := runtype.ParseJobID(claim.Job)
		return job, false, err
	}
	job, err := start(ctx, tx, key, s.Input)
	return job, true, err
}

// running reports whether the job (its id as a string; "" for none)
// still runs.
func (ss *Schedules) running(tx store.ReadTx, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	job, err := runtype.ParseJobID(id)
	if err != nil {
		return false, err
	}
	return ss.Starter.Running(tx, job)
}

// Run calls StartDue about once a second until ctx ends.
func (ss *Schedules) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		if _, err := ss.StartDue(ctx); err != nil && ctx.Err() == nil {
			ss.Log.Warn("starting scheduled jobs; will look again", "err", err)
		}
	}
}
