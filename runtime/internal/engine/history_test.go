package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// TestOutcomesAreTheirResults: an activation's outcome event is its
// result, and a job's started and finished events its record and its
// final status, with no value of their own under hist/, and the history lists them at their places all the
// same; a store written before they were events (a result or record
// without its place, the event a value of its own) gives the same
// history.
func TestOutcomesAreTheirResults(t *testing.T) {
	t.Parallel()
	s, e, job := startTwoSteps(t)
	ctx := context.Background()
	stepUntilIdle(t, e, 1)
	now, err := InspectJob(ctx, s, job)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range now.History {
		got = append(got, string(ev.Event)+" "+ev.Act)
	}
	if want := []string{"started ", "succeeded a@", "succeeded b@<a", "finished "}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	for _, en := range now.Entries {
		if strings.HasPrefix(en.Key, "hist/") && (strings.Contains(en.Key, "/succeeded/") || strings.HasSuffix(en.Key, "/started") || strings.HasSuffix(en.Key, "/finished")) {
			t.Errorf("an event has a value of its own: %s", en.Key)
		}
	}

	// Rewrite the job as an earlier version wrote it.
	err = s.Update(ctx, func(tx store.Tx) error {
		for _, en := range now.Entries {
			if en.Key == "status" {
				var end endRecord
				if err := json.Unmarshal(en.Value, &end); err != nil {
					return err
				}
				ev, err := json.Marshal(finishedEvent(end.JobStatus))
				if err != nil {
					return err
				}
				if err := tx.Put(protocol.JobKey(job, "hist", end.Recorded, string(runtype.EventFinished)), ev); err != nil {
					return err
				}
				raw, err := json.Marshal(end.JobStatus)
				if err != nil {
					return err
				}
				if err := tx.Put(protocol.StatusKey(job), raw); err != nil {
					return err
				}
			}
			if en.Key == "meta" {
				var meta jobMeta
				if err := json.Unmarshal(en.Value, &meta); err != nil {
					return err
				}
				ev, err := json.Marshal(startedEvent(meta))
				if err != nil {
					return err
				}
				if err := tx.Put(protocol.JobKey(job, "hist", meta.Recorded, string(runtype.EventStarted)), ev); err != nil {
					return err
				}
				meta.Recorded = ""
				raw, err := json.Marshal(meta)
				if err != nil {
					return err
				}
				if err := tx.Put(protocol.MetaKey(job), raw); err != nil {
					return err
				}
			}
			if !strings.HasPrefix(en.Key, "res/") {
				continue
			}
			var r result
			if err := json.Unmarshal(en.Value, &r); err != nil {
				return err
			}
			ev, err := json.Marshal(outcomeEvent(&r))
			if err != nil {
				return err
			}
			if err := tx.Put(protocol.JobKey(job, "hist", r.Recorded, string(runtype.EventSucceeded), r.Act), ev); err != nil {
				return err
			}
			r.Recorded, r.Since = "", time.Time{}
			raw, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := tx.Put(protocol.ResultKey(job, r.Act), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before, err := InspectJob(ctx, s, job)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before.History, now.History) {
		t.Fatalf("history of a store written before results were events:\n%+v\nwant\n%+v", before.History, now.History)
	}
}

// TestRunningJobsHaveNoStatusRecord: a start writes no status; while the
// job runs, its status, its inspection and the job list read it as
// running since its start, and it gets a status record when it ends.
func TestRunningJobsHaveNoStatusRecord(t *testing.T) {
	t.Parallel()
	s, e, job := startTwoSteps(t)
	ctx := context.Background()
	in, err := InspectJob(ctx, s, job)
	if err != nil {
		t.Fatal(err)
	}
	var meta jobMeta
	for _, en := range in.Entries {
		switch en.Key {
		case "status":
			t.Errorf("a start wrote a status: %s", en.Value)
		case "meta":
			if err := json.Unmarshal(en.Value, &meta); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := runtype.JobStatus{State: runtype.StateRunning, Started: meta.Started}
	st, err := e.Status(ctx, job)
	if err != nil || !reflect.DeepEqual(st, want) || meta.Started.IsZero() {
		t.Errorf("status %+v (%v), want %+v", st, err, want)
	}
	if !reflect.DeepEqual(in.Status, want) {
		t.Errorf("inspected status %+v, want %+v", in.Status, want)
	}
	list, err := e.Jobs(ctx, runtype.JobQuery{})
	if err != nil || len(list.Jobs) != 1 || list.Jobs[0].State != runtype.StateRunning {
		t.Errorf("job list %+v (%v), want the job running", list, err)
	}
	stepUntilIdle(t, e, 1)
	if st, err := e.Status(ctx, job); err != nil || st.State != runtype.StateSucceeded || !st.Started.Equal(meta.Started) {
		t.Errorf("status after the job ended %+v (%v)", st, err)
	}
}
