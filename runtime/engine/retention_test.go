package engine

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// retentionRig is an engine on r's store that keeps finished jobs an hour
// (the flow "brief" ten minutes) and sweeps only when told, in commits of
// at most 7 deletions, so that one job takes several.
func retentionRig(t *testing.T, r *rig, owner string, crash func(string) error) *Engine {
	t.Helper()
	e := New(r.store, Options{Owner: owner, Now: r.clock.Now, Visibility: 10 * time.Second, LeaseTTL: 10 * time.Second,
		Retention: time.Hour, SweepEvery: -1, SweepBatch: 7, CrashPoint: crash})
	brief := linearFlow()
	brief.Name, brief.Retention = "brief", 10*time.Minute
	for _, f := range []*runtime.Flow{linearFlow(), brief, approvalFlow()} {
		if err := e.Register(f); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// bigInput is an input too large to travel inline: it is stored once, as
// a blob, for every job that has it.
var bigInput = json.RawMessage(`{"n":1,"pad":"` + strings.Repeat("x", 70<<10) + `"}`)

// footprint counts what the store holds for a job: values and counters
// under its root, its index entry, its lease, and whether the blob of
// bigInput and its count are there.
type footprint struct {
	root, index, lease int
}

func footprintOf(t *testing.T, s store.Store, job runtime.JobID) footprint {
	t.Helper()
	var f footprint
	err := s.View(context.Background(), func(tx store.ReadTx) error {
		root := []byte("pid/" + job.String() + "/")
		count := func(k []byte, _ []byte) error { f.root++; return nil }
		if err := tx.Scan(root, count); err != nil {
			return err
		}
		if err := tx.ScanCounters(root, func(k []byte, _ int64) error { f.root++; return nil }); err != nil {
			return err
		}
		inverted := make([]byte, len(job))
		for i, b := range job {
			inverted[i] = ^b
		}
		if _, err := tx.Get([]byte("jobs/" + hex.EncodeToString(inverted))); err == nil {
			f.index++
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := tx.Lease(job[:]); err == nil {
			f.lease++
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// blobsHeld counts the stored blobs and blob counts.
func blobsHeld(t *testing.T, s store.Store) (values, counts int) {
	t.Helper()
	err := s.View(context.Background(), func(tx store.ReadTx) error {
		if err := tx.Scan([]byte("blobs/"), func(_, _ []byte) error { values++; return nil }); err != nil {
			return err
		}
		return tx.ScanCounters([]byte("blobs/"), func(_ []byte, _ int64) error { counts++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return values, counts
}

// TestRetentionSweepsFinishedJobs: the sweeper deletes a finished job once
// its flow's retention has passed, with everything it kept (state,
// history, index entry, lease, job key), and the blob of its input when
// no other job still has the same input; running jobs, younger jobs and
// other jobs' blobs stay. Dedupe records go after their TTL, and
// acknowledged message ids after the retention.
func TestRetentionSweepsFinishedJobs(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		e := retentionRig(t, r, "w", nil)
		kept, _, err := e.StartOnce(ctx, "linear", "order-1", bigInput)
		if err != nil {
			t.Fatal(err)
		}
		brief, err := e.Start(ctx, "brief", bigInput)
		if err != nil {
			t.Fatal(err)
		}
		waiting, err := e.Start(ctx, "approval", json.RawMessage(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		dedupe := NewStoreDedupe(r.store, "payments.charge", r.clock.Now)
		if fresh, err := dedupe.PutIfAbsent(ctx, "charge-9", 20*time.Minute); err != nil || !fresh {
			t.Fatalf("dedupe: %v %v", fresh, err)
		}
		if sw, err := e.Sweep(ctx); err != nil || sw != (runtime.Swept{}) {
			t.Fatalf("a sweep before anything expired: %+v %v", sw, err)
		}

		r.clock.Advance(11 * time.Minute) // past brief's retention only
		sw, err := e.Sweep(ctx)
		if err != nil || sw.Jobs != 1 || sw.Blobs != 0 || sw.Records != 0 {
			t.Fatalf("sweep after 11 minutes: %+v %v, want brief's job and nothing else", sw, err)
		}
		if f := footprintOf(t, r.store, brief); f != (footprint{}) {
			t.Errorf("brief's job after its retention: %+v", f)
		}
		if _, err := e.Status(ctx, brief); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("status of a swept job: %v, want ErrNotFound", err)
		}
		if f := footprintOf(t, r.store, kept); f.root == 0 || f.index != 1 {
			t.Errorf("a job within its retention was touched: %+v", f)
		}
		if v, c := blobsHeld(t, r.store); v != 1 || c != 1 {
			t.Errorf("the input blob both jobs had: %d values, %d counts, want it kept for the other job", v, c)
		}

		r.clock.Advance(time.Hour)
		sw, err = e.Sweep(ctx)
		if err != nil || sw.Jobs != 1 || sw.Blobs != 1 || sw.Records != 1 || sw.Acked == 0 {
			t.Fatalf("sweep after 71 minutes: %+v %v, want the linear job, its blob, the dedupe record and acknowledged ids", sw, err)
		}
		if f := footprintOf(t, r.store, kept); f != (footprint{}) {
			t.Errorf("the linear job after its retention: %+v", f)
		}
		if v, c := blobsHeld(t, r.store); v != 0 || c != 0 {
			t.Errorf("blobs after the last job with it went: %d values, %d counts", v, c)
		}
		if fresh, err := dedupe.PutIfAbsent(ctx, "charge-9", time.Minute); err != nil || !fresh {
			t.Errorf("a dedupe key past its TTL and swept: fresh %v %v", fresh, err)
		}
		// The job key is free again: a start under it makes a new job.
		again, created, err := e.StartOnce(ctx, "linear", "order-1", json.RawMessage(`{"n":2}`))
		if err != nil || !created || again == kept {
			t.Errorf("start under the key of a swept job: %s created %v %v", again, created, err)
		}
		// The job waiting at its checkpoint is running: never swept.
		if st, err := e.Status(ctx, waiting); err != nil || st.State != runtime.StateRunning {
			t.Errorf("the waiting job: %+v %v", st, err)
		}
		if _, err := e.Signal(ctx, waiting, "approve", runtime.Decision{Approved: true, By: "test"}); err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Status(ctx, waiting); err != nil || st.State != runtime.StateSucceeded {
			t.Errorf("the waiting job after its decision: %+v %v", st, err)
		}
	})
}

// TestSweepersTakeTurns: of two engines sweeping the same store at
// once, one sweeps and the other is told the store is busy; together they
// delete each job once.
func TestSweepersTakeTurns(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		a, c := retentionRig(t, r, "a", nil), retentionRig(t, r, "c", nil)
		var jobs []runtime.JobID
		for i := range 5 {
			j, err := a.Start(ctx, "linear", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		if err := drain(t, a); err != nil {
			t.Fatal(err)
		}
		r.clock.Advance(2 * time.Hour)
		type outcome struct {
			sw  runtime.Swept
			err error
		}
		results := make(chan outcome, 2)
		for _, e := range []*Engine{a, c} {
			go func() {
				sw, err := e.Sweep(ctx)
				results <- outcome{sw, err}
			}()
		}
		total := 0
		for range 2 {
			o := <-results
			if o.err != nil {
				t.Fatal(o.err)
			}
			total += o.sw.Jobs
		}
		// The sweep that lost the race may have come after the other
		// finished and found nothing left: either way, five in all.
		if total != len(jobs) {
			t.Fatalf("the two sweepers deleted %d jobs, want %d", total, len(jobs))
		}
		for _, j := range jobs {
			if f := footprintOf(t, r.store, j); f != (footprint{}) {
				t.Errorf("job %s after the sweeps: %+v", j, f)
			}
		}
	})
}

// TestSweepSurvivesEveryCrashPoint: a sweeper that dies after any of its
// commits leaves a store the next sweep finishes cleaning, with the blob
// the swept job shared with a younger one still there.
func TestSweepSurvivesEveryCrashPoint(t *testing.T) {
	crashEnumerate(t, []string{CrashSwept},
		func(t *testing.T, r *rig, hook func(string) error) (func(), error) {
			ctx := context.Background()
			e := retentionRig(t, r, "doomed", nil)
			old, _, err := e.StartOnce(ctx, "brief", "old", bigInput)
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(5 * time.Minute)
			young, err := e.Start(ctx, "brief", bigInput)
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(6 * time.Minute) // old is due, young is not
			_, err = retentionRig(t, r, "doomed", hook).Sweep(ctx)
			return func() {
				r.reopen()
				r.clock.Advance(11 * time.Second) // the dead sweeper's lease expires
				heir := retentionRig(t, r, "heir", nil)
				if _, err := heir.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
				if f := footprintOf(t, r.store, old); f != (footprint{}) {
					t.Errorf("the old job after the sweeps: %+v", f)
				}
				if st, err := heir.Status(ctx, young); err != nil || st.State != runtime.StateSucceeded {
					t.Errorf("the young job: %+v %v", st, err)
				}
				if v, c := blobsHeld(t, r.store); v != 1 || c != 1 {
					t.Errorf("the blob the young job still has: %d values, %d counts", v, c)
				}
				if _, created, err := heir.StartOnce(ctx, "brief", "old", json.RawMessage(`{"n":2}`)); err != nil || !created {
					t.Errorf("the old job's key after the sweeps: created %v %v", created, err)
				}
			}, err
		})
}

// TestControlPassesOverSweptSubflows: a parent still running (waiting at a
// checkpoint) outlives the subflow job it started, whose flow keeps
// finished jobs for less time. Once the child is swept, pausing,
// resuming, inspecting and killing the parent work as before.
func TestControlPassesOverSweptSubflows(t *testing.T) {
	onEachBackend(t, func(t *testing.T, b backend, r *rig) {
		ctx := context.Background()
		e := retentionRig(t, r, "w", nil)
		echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo", Effects: runtime.Pure, Determinism: runtime.Strict}, func(_ *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) { return in, nil })
		parent := &runtime.Flow{Name: "parent",
			Nodes: []*runtime.FlowNode{
				{Alias: "child", Subflow: &runtime.Subflow{Flow: "brief", Inputs: []string{"a"}}},
				{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "go on?"}},
				{Alias: "done", Runner: echo},
			},
			Edges: []runtime.Edge{{From: "child", FromPort: "out", To: "approve"}, {From: "approve", FromPort: "approved", To: "done"}}}
		if err := e.Register(parent); err != nil {
			t.Fatal(err)
		}
		job, err := e.Start(ctx, "parent", json.RawMessage(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if w, err := e.Waiting(ctx, job); err != nil || len(w) != 1 {
			t.Fatalf("the parent should wait at approve: %v %v", w, err)
		}
		r.clock.Advance(11 * time.Minute) // past brief's retention
		if sw, err := e.Sweep(ctx); err != nil || sw.Jobs != 1 {
			t.Fatalf("sweep: %+v %v, want the child job", sw, err)
		}
		for _, act := range []func() error{
			func() error { return e.Pause(ctx, job) },
			func() error { return e.Resume(ctx, job) },
			func() error { _, err := e.Inspect(ctx, job); return err },
			func() error { return e.Kill(ctx, job, "no longer wanted") },
		} {
			if err := act(); err != nil {
				t.Fatal(err)
			}
		}
		if err := drain(t, e); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Status(ctx, job); err != nil || st.State != runtime.StateKilled {
			t.Fatalf("parent %+v %v, want killed", st, err)
		}
	})
}
