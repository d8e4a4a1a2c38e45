package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// scheduledJobs are the jobs of flow in r's store, oldest first.
func scheduledJobs(t *testing.T, e *Engine, flow string) []runtime.JobSummary {
	t.Helper()
	list, err := e.Jobs(context.Background(), runtime.JobQuery{Flow: flow, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return list.Jobs
}

// TestScheduleStartsEachTickOnce: two processes with the same schedule
// look at it at the same time; each minute's tick starts one job between
// them, and ticks missed while neither looked are caught up, as far back
// as the schedule allows.
func TestScheduleStartsEachTickOnce(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		every := runtime.Schedule{Name: "minutely", Flow: "linear", Cron: "* * * * *", Input: json.RawMessage(`{"n":1}`), Overlap: runtime.OverlapAllow, CatchUp: 5 * time.Minute}
		var procs []*Engine
		for _, owner := range []string{"a", "b"} {
			e := New(r.store, Options{Owner: owner, Now: r.clock.Now})
			if err := e.Register(linearFlow()); err != nil {
				t.Fatal(err)
			}
			if err := e.AddSchedule(every); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, e)
		}
		look := func() int { // both processes at once, then once more each
			var wg sync.WaitGroup
			var mu sync.Mutex
			n := 0
			for _, e := range procs {
				wg.Go(func() {
					started, _ := e.StartDue(ctx) // the loser of a race fails, and looks again
					mu.Lock()
					n += started
					mu.Unlock()
				})
			}
			wg.Wait()
			for _, e := range procs {
				started, err := e.StartDue(ctx)
				if err != nil {
					t.Fatal(err)
				}
				n += started
			}
			return n
		}
		if n := look(); n != 0 {
			t.Fatalf("a new schedule started %d jobs for ticks before it existed", n)
		}
		for minute := 1; minute <= 3; minute++ {
			r.clock.Advance(time.Minute)
			if n := look(); n != 1 {
				t.Fatalf("minute %d: %d jobs started, want 1", minute, n)
			}
		}
		r.clock.Advance(10 * time.Minute) // no process looked for ten ticks
		if n := look(); n != 5 {
			t.Fatalf("after ten missed ticks: %d jobs started, want the last 5 (CatchUp)", n)
		}
		if jobs := scheduledJobs(t, procs[0], "linear"); len(jobs) != 8 {
			t.Fatalf("%d jobs, want 8", len(jobs))
		}
		if err := drain(t, procs[0]); err != nil {
			t.Fatal(err)
		}
	})
}

// TestScheduleOverlap: a tick that comes while the last tick's job waits
// at its checkpoint is skipped (skip) or started once that job finishes
// (buffer).
func TestScheduleOverlap(t *testing.T) {
	for _, overlap := range []runtime.Overlap{runtime.OverlapSkip, runtime.OverlapBuffer} {
		t.Run(string(overlap), func(t *testing.T) {
			onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
				ctx := context.Background()
				e := New(r.store, Options{Now: r.clock.Now})
				if err := e.Register(approvalFlow()); err != nil {
					t.Fatal(err)
				}
				err := e.AddSchedule(runtime.Schedule{Name: "approvals", Flow: "approval", Cron: "@every 1m", Input: json.RawMessage(`{"order":"o"}`), Overlap: overlap})
				if err != nil {
					t.Fatal(err)
				}
				due := func() int {
					n, err := e.StartDue(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if err := drain(t, e); err != nil {
						t.Fatal(err)
					}
					return n
				}
				due() // the schedule begins now
				r.clock.Advance(time.Minute)
				if n := due(); n != 1 {
					t.Fatalf("first tick: %d started", n)
				}
				first := scheduledJobs(t, e, "approval")[0]
				r.clock.Advance(time.Minute)
				if n := due(); n != 0 {
					t.Fatalf("tick while the first job waits: %d started, want 0", n)
				}
				id, _ := runtime.ParseJobID(first.Job)
				if _, err := e.Signal(ctx, id, "approve", runtime.Decision{Approved: true}); err != nil {
					t.Fatal(err)
				}
				if err := drain(t, e); err != nil {
					t.Fatal(err)
				}
				want := map[runtime.Overlap]int{runtime.OverlapSkip: 0, runtime.OverlapBuffer: 1}[overlap] // the buffered tick
				if n := due(); n != want {
					t.Fatalf("after the first job finished: %d started, want %d", n, want)
				}
				if jobs := scheduledJobs(t, e, "approval"); len(jobs) != 1+want {
					t.Fatalf("%d jobs, want %d", len(jobs), 1+want)
				}
			})
		})
	}
}

// TestScheduleTickSurvivesEveryCrashPoint: a process that dies after a
// tick's commit, or at any point of the delivery of the job it started,
// leaves a store from which another process, with the same schedule,
// starts no second job for the tick and finishes the first (a saga, whose
// effectful nodes are not folded into their delivery's transaction, so
// that every crash point is reached on both stores).
func TestScheduleTickSurvivesEveryCrashPoint(t *testing.T) {
	crashEnumerate(t, append([]string{CrashScheduled}, CrashPoints...),
		func(t *testing.T, r *rig, hook func(string) error) (func(), error) {
			ctx := context.Background()
			engine := func(owner string, crash func(string) error) *Engine {
				e := sagaWorker(t, r, owner, crash)
				if err := e.AddSchedule(runtime.Schedule{Name: "minutely", Flow: "saga", Cron: "* * * * *", Input: json.RawMessage(sagaInput)}); err != nil {
					t.Fatal(err)
				}
				return e
			}
			if _, err := engine("setup", nil).StartDue(ctx); err != nil { // the schedule's state
				t.Fatal(err)
			}
			r.clock.Advance(time.Minute)
			doomed := engine("doomed", hook)
			_, err := doomed.StartDue(ctx)
			if err == nil {
				err = drain(t, doomed)
			}
			return func() {
				r.reopen()
				r.clock.Advance(11 * time.Second) // the same minute: no new tick
				heir := engine("heir", nil)
				if n, err := heir.StartDue(ctx); err != nil || n != 0 {
					t.Fatalf("the heir started %d jobs (%v) for a tick started before", n, err)
				}
				if err := drain(t, heir); err != nil {
					t.Fatal(err)
				}
				jobs := scheduledJobs(t, heir, "saga")
				if len(jobs) != 1 || jobs[0].State != runtime.StateSucceeded {
					t.Fatalf("jobs %+v, want the tick's one, succeeded", jobs)
				}
			}, err
		})
}

// TestScheduleNamesBelongToOneFlow: a schedule added again under its name
// for the same flow (another version) replaces the first; for another
// flow it is refused, since both would share one state and one set of job
// keys.
func TestScheduleNamesBelongToOneFlow(t *testing.T) {
	t.Parallel()
	e := New(newRig(t).store, Options{})
	for _, f := range []*runtime.Flow{linearFlow(), fanFlow()} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	nightly := runtime.Schedule{Name: "nightly", Flow: "linear", Cron: "0 2 * * *"}
	if err := e.AddSchedule(nightly); err != nil {
		t.Fatal(err)
	}
	nightly.Flow, nightly.Cron = "linear@1.0.0", "0 3 * * *"
	if err := e.AddSchedule(nightly); err != nil {
		t.Errorf("the same flow's schedule again: %v", err)
	}
	nightly.Flow = "fan"
	if err := e.AddSchedule(nightly); err == nil || !strings.Contains(err.Error(), "already starts jobs of flow linear@1.0.0") {
		t.Errorf("another flow's schedule under the same name: %v", err)
	}
}
