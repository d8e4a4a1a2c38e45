package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestJobListing starts jobs of three flows (one waiting at a checkpoint,
// one with a subflow, one killed) and lists them with every filter, page
// by page, on every backend.
func TestJobListing(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			e := New(r.store, Options{Now: r.clock.Now})
			for _, f := range append(subflowFlows(r.sink, 3), approvalFlow()) {
				if err := e.Register(f); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			start := func(flow, input string) runtime.JobID {
				t.Helper()
				r.clock.Advance(time.Second)
				job, err := e.Start(ctx, flow, json.RawMessage(input))
				if err != nil {
					t.Fatal(err)
				}
				return job
			}
			var approvals []runtime.JobID
			for i := range 5 {
				approvals = append(approvals, start("approval", fmt.Sprintf(`{"order":"o-%d","customer":{"id":"c-%d"}}`, i, i%2)))
			}
			outer := start("outer", `{"note":"hi"}`)
			mid := r.clock.Now().Add(500 * time.Millisecond)
			killed := start("approval", `{"order":"o-k"}`)
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			if err := e.Kill(ctx, killed, "test"); err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			ids := func(l runtime.JobList) []string {
				var out []string
				for _, j := range l.Jobs {
					out = append(out, j.Job)
				}
				return out
			}
			str := func(jobs ...runtime.JobID) []string {
				var out []string
				for _, j := range jobs {
					out = append(out, j.String())
				}
				return out
			}
			list := func(q runtime.JobQuery) runtime.JobList {
				t.Helper()
				l, err := e.Jobs(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			newestFirst := str(killed, outer, approvals[4], approvals[3], approvals[2], approvals[1], approvals[0])
			if got := ids(list(runtime.JobQuery{})); !slices.Equal(got, newestFirst) {
				t.Fatalf("all jobs: %v, want %v", got, newestFirst)
			}
			all := list(runtime.JobQuery{Subflows: true})
			if len(all.Jobs) != 8 || all.Jobs[0].Parent != outer.String() || all.Jobs[0].Flow != "inner" {
				t.Fatalf("with subflows: %+v", all.Jobs)
			}
			// Pages of two, following Next, give the same order.
			var paged []string
			for q := (runtime.JobQuery{Limit: 2}); ; {
				l := list(q)
				paged = append(paged, ids(l)...)
				if l.Next == "" {
					break
				}
				q.After = l.Next
			}
			if !slices.Equal(paged, newestFirst) {
				t.Fatalf("pages: %v, want %v", paged, newestFirst)
			}
			first := list(runtime.JobQuery{})
			if k := first.Jobs[0]; k.State != runtime.StateKilled || k.Finished.IsZero() {
				t.Fatalf("killed job: %+v", k)
			}
			if w := first.Jobs[2]; w.State != runtime.StateRunning || !slices.Equal(w.Waiting, []string{"approve"}) {
				t.Fatalf("waiting job: %+v", w)
			}
			for _, c := range []struct {
				q    runtime.JobQuery
				want []string
			}{
				{runtime.JobQuery{State: "waiting"}, newestFirst[2:]},
				{runtime.JobQuery{State: "succeeded"}, str(outer)},
				{runtime.JobQuery{State: "killed"}, str(killed)},
				{runtime.JobQuery{Flow: "outer"}, str(outer)},
				{runtime.JobQuery{Since: mid}, str(killed)},
				{runtime.JobQuery{Until: mid, Flow: "approval"}, newestFirst[2:]},
				{runtime.JobQuery{Where: map[string]string{"customer.id": "c-1"}}, str(approvals[3], approvals[1])},
				{runtime.JobQuery{Where: map[string]string{"customer.id": "c-1", "order": "o-3"}}, str(approvals[3])},
				{runtime.JobQuery{Where: map[string]string{"customer": "c-1"}}, nil},
			} {
				if got := ids(list(c.q)); !slices.Equal(got, c.want) {
					t.Errorf("%+v: %v, want %v", c.q, got, c.want)
				}
			}
			if err := e.Pause(ctx, approvals[0]); err != nil {
				t.Fatal(err)
			}
			if got := ids(list(runtime.JobQuery{State: "paused"})); !slices.Equal(got, str(approvals[0])) {
				t.Errorf("paused: %v", got)
			}
			if _, err := e.Jobs(ctx, runtime.JobQuery{State: "sleeping"}); err == nil {
				t.Error("an unknown state was accepted")
			}
			if w, err := e.Waiting(ctx, outer); err != nil || len(w) != 0 {
				t.Errorf("a finished job waits at %v (%v)", w, err)
			}
		})
	}
}
