package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestHistoryTellsWhatHappened: a job that is paused and resumed, whose
// last step fails so that its two effects are compensated, has every
// event in its history, in order, on both stores. A first delivery that
// reaches its outcome has no launched event: its outcome says when it
// entered.
func TestHistoryTellsWhatHappened(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e, job := sagaJob(t, r, true)
		if err := e.Pause(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := e.Resume(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := e.Resume(ctx, job); err != nil { // not paused: no event
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		in, err := e.Inspect(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, ev := range in.History {
			line := string(ev.Event)
			if ev.Act != "" {
				line += " " + ev.Act
			}
			if ev.Attempt != 0 {
				line += fmt.Sprintf(" #%d", ev.Attempt)
			}
			got = append(got, line)
			if i > 0 && ev.At.Before(in.History[i-1].At) {
				t.Errorf("event %d (%s) is older than the one before", i, line)
			}
		}
		want := []string{
			"started", "paused", "resumed",
			"succeeded reserve@ #1", "succeeded charge@<reserve #1", "failed ship@<charge #1",
			"compensating",
			"succeeded charge@<reserve#undo #1", "succeeded reserve@#undo #1",
			"finished",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		last := in.History[len(in.History)-1]
		if last.Detail != "failed" || !strings.Contains(in.History[5].Detail, "Permanent: carrier refused the parcel") ||
			!strings.HasPrefix(in.History[0].Detail, "flow saga unversioned ") {
			t.Errorf("details: started %q, ship %q, finished %q", in.History[0].Detail, in.History[5].Detail, last.Detail)
		}
		for _, ev := range in.History[3:6] { // an outcome says when its delivery entered
			if ev.Since.IsZero() || ev.Since.After(ev.At) {
				t.Errorf("%s %s: entered at %v, finished at %v", ev.Event, ev.Act, ev.Since, ev.At)
			}
		}
	})
}

// TestHistoryOfControl: a decision at a checkpoint and a kill are in the
// history, with who decided and why the job was killed.
func TestHistoryOfControl(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		e := New(r.store, Options{Now: r.clock.Now})
		if err := e.Register(approvalFlow()); err != nil {
			t.Fatal(err)
		}
		events := func(job runtime.JobID) string {
			in, err := e.Inspect(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, ev := range in.History {
				out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", ev.Event, ev.Act, ev.Detail)))
			}
			return strings.Join(out, "\n")
		}
		approved, _ := e.Start(ctx, "approval", json.RawMessage(`{"order":"o-1"}`))
		killed, _ := e.Start(ctx, "approval", json.RawMessage(`{"order":"o-2"}`))
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Signal(ctx, approved, "approve", runtime.Decision{Approved: true, By: "finance"}); err != nil {
			t.Fatal(err)
		}
		if err := e.Kill(ctx, killed, "order withdrawn"); err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if h := events(approved); !strings.Contains(h, "parked approve@<start\nsignaled approve@<start approved by finance\nsucceeded approve@<start port approved\n") {
			t.Errorf("approved job's history:\n%s", h)
		}
		if h := events(killed); !strings.Contains(h, "killed  order withdrawn\n") || !strings.HasSuffix(h, "finished  killed") {
			t.Errorf("killed job's history:\n%s", h)
		}
	})
}

// TestHistoryOfACrash: a delivery whose worker dies before its outcome
// leaves no event, and the next delivery says it is attempt 2.
func TestHistoryOfACrash(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		var calls atomic.Int64
		worker := crashingWorkers(t, r, &calls)
		job, err := worker(false).Start(ctx, "saga", json.RawMessage(sagaInput))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, worker(true)); !errors.Is(err, errCrashed) {
			t.Fatalf("first worker: %v, want it crashed in ship", err)
		}
		r.clock.Advance(11 * time.Second)
		e := worker(false)
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		in, err := e.Inspect(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		var ship []string
		for _, ev := range in.History {
			if ev.Act == "ship@<charge" {
				ship = append(ship, fmt.Sprintf("%s #%d", ev.Event, ev.Attempt))
			}
		}
		if strings.Join(ship, ", ") != "launched #2, succeeded #2" {
			t.Errorf("ship's history: %v, want launched #2, succeeded #2", ship)
		}
	})
}
