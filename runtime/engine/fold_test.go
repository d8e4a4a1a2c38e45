package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/pgwire"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestEntryFoldsOnlyWithoutEffects looks, from another connection, at a
// node's own activity ledger while the node runs, and, on PostgreSQL, at
// how many of the store's connections are inside a transaction (from the
// server's own answers, internal/pgwire). An Effectful or ReadOnly node
// must find its leg 2 entry already committed (the durable "launched"
// marker before the call) and, on PostgreSQL, no transaction of the
// store open: no row lock or connection waits on its provider. On
// PostgreSQL a Pure node runs inside the transaction of its entry, which
// commits with its steps, so it finds none yet, also when its entry took
// the job's lease (the job's first activation). On bbolt (one writer) the
// first activation's entry commits first, and the steps without effects
// after it run ahead of their entries, outside any transaction, which
// commit with their steps (ahead.go).
func TestEntryFoldsOnlyWithoutEffects(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var wire pgwire.Counter
			if b.name == "postgres" {
				url := pgtest.FreshSchema(t)
				b.open = func(*testing.T) func(now func() time.Time) (store.Store, error) {
					return func(now func() time.Time) (store.Store, error) {
						return pgstore.Open(context.Background(), url, pgstore.Options{Now: now, Dialer: &wire})
					}
				}
			}
			r := newRigOn(t, b)
			var job runtime.JobID
			seen, inTx := map[string]int64{}, map[string]int64{}
			probe := func(alias string, effects runtime.Effects) *runtime.FlowNode {
				info := runtime.NodeInfo{ID: "probe." + alias, Effects: effects, Determinism: runtime.BestEffort}
				if effects == runtime.Effectful {
					info.KeySchema, info.KeyFields = "probe@1", []string{"n"}
				}
				return &runtime.FlowNode{Alias: alias, Runner: runtime.Typed(info, func(_ *runtime.Context, _ noParams, in json.RawMessage) (json.RawMessage, error) {
					inTx[alias] = wire.InTransaction()
					for k, v := range counters(t, r.store, job) {
						if strings.HasPrefix(k, "act/"+alias+"@") {
							seen[alias] = v % 100_000_000 // leg 2 entries
						}
					}
					return in, nil
				})}
			}
			flow := &runtime.Flow{
				Name:  "probes",
				Nodes: []*runtime.FlowNode{probe("first", runtime.Pure), probe("pure", runtime.Pure), probe("reads", runtime.ReadOnly), probe("writes", runtime.Effectful)},
				Edges: []runtime.Edge{{From: "first", FromPort: "out", To: "pure"}, {From: "pure", FromPort: "out", To: "reads"}, {From: "reads", FromPort: "out", To: "writes"}},
			}
			// The engine reads leases on the store's clock, as in production.
			e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			var err error
			if job, err = e.Start(context.Background(), "probes", json.RawMessage(`{"n":1}`)); err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			if st, _ := e.Status(context.Background(), job); st.State != runtime.StateSucceeded {
				t.Fatalf("job %s: %+v", job, st)
			}
			first := int64(1)
			if b.name == "postgres" {
				first = 0
			}
			reads := int64(0) // run ahead on bbolt
			if b.name == "postgres" {
				reads = 1 // never folded
			}
			want := map[string]int64{"first": first, "pure": 0, "reads": reads, "writes": 1}
			for alias, n := range want {
				if seen[alias] != n {
					t.Errorf("%s saw %d committed leg 2 entries of its own during its call, want %d (all: %v)", alias, seen[alias], n, seen)
				}
			}
			if b.name == "postgres" {
				wantTx := map[string]int64{"first": 1, "pure": 1, "reads": 0, "writes": 0}
				for alias, n := range wantTx {
					if inTx[alias] != n {
						t.Errorf("%s ran while %d of the store's transactions were open, want %d (all: %v)", alias, inTx[alias], n, inTx)
					}
				}
			}
			for act, v := range activityLedgers(t, r.store, job) {
				if v%100_000_000 != 1 {
					t.Errorf("%s: activity ledger %d after the job, want one leg 2 entry", act, v)
				}
			}
		})
	}
}

// TestBatchUndoesOnlyTheDeliveryThatFails claims the second node of three
// jobs in one batch, after planting a different result where one of them
// will write its own, so that delivery's steps are refused. On PostgreSQL
// the three run folded in one transaction, first without savepoints: the
// refusal fails that attempt whole, and the batch is claimed again with a
// savepoint around each unit. The refused one is then undone alone and
// goes on by itself (and fails again, reporting the conflict), while the
// other two finish in the batch's commit. On bbolt nothing
// folds and each delivery commits alone after the batch's entry commit;
// the outcome is the same.
func TestBatchUndoesOnlyTheDeliveryThatFails(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			r := newRigOn(t, b)
			ctx := context.Background()
			flow := &runtime.Flow{
				Name:  "two",
				Nodes: []*runtime.FlowNode{{Alias: "a", Runner: noop}, {Alias: "b", Runner: noop}},
				Edges: []runtime.Edge{{From: "a", FromPort: "out", To: "b"}},
			}
			var logged bytes.Buffer
			e := New(r.store, Options{Owner: "w", Now: r.clock.Now, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err := e.Register(flow); err != nil {
				t.Fatal(err)
			}
			var jobs []runtime.JobID
			for range 3 {
				job, err := e.Start(ctx, "two", json.RawMessage(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, job)
			}
			doomed := jobs[1]
			act := runtype.StepOf("b", "", "a").String()
			err := r.store.Update(ctx, func(tx store.Tx) error {
				return tx.Put([]byte("pid/"+doomed.String()+"/res/"+act), []byte(`{"planted":true}`))
			})
			if err != nil {
				t.Fatal(err)
			}
			// On PostgreSQL b chains onto a in the first batch (chain.go);
			// on bbolt the second batch takes the b's.
			for batch := 1; err == nil && batch <= 2; batch++ {
				var n int
				if n, err = e.StepBatch(ctx, 3); n != 3 {
					t.Fatalf("batch %d: %d claimed, %v; want 3", batch, n, err)
				}
			}
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("batches: %v, want the planted result's conflict", err)
			}
			if _, ok := activityLedgers(t, r.store, doomed)[act]; !ok {
				t.Fatalf("no activation %s in %v", act, activityLedgers(t, r.store, doomed))
			}
			// On PostgreSQL the batch first folds without savepoints, fails
			// whole, and claims again with a savepoint around each unit.
			again := strings.Count(logged.String(), "claiming again")
			undone := strings.Count(logged.String(), "did not commit with its batch")
			if want := map[string]int{"postgres": 1, "bolt": 0}[b.name]; undone != want || again != want {
				t.Errorf("%d batches claimed again and %d folded deliveries undone alone, want %d of each; log:\n%s", again, undone, want, &logged)
			}
			for _, job := range jobs {
				st, err := e.Status(ctx, job)
				if err != nil {
					t.Fatal(err)
				}
				if job == doomed {
					if st.Done() {
						t.Errorf("the refused job finished: %+v", st)
					}
					if got := activityLedgers(t, r.store, job)[act] % 100_000_000; got != 1 {
						t.Errorf("the refused delivery's entry: %d leg 2 entries committed, want 1", got)
					}
					continue
				}
				if st.State != runtime.StateSucceeded {
					t.Errorf("job %s beside the refused one: %+v", job, st)
				}
			}
			err = r.store.View(ctx, func(tx store.ReadTx) error {
				pending, err := tx.Pending(WorkStream)
				if err == nil && (len(pending) != 1 || !bytes.Equal(pending[0].Job, doomed[:])) {
					err = fmt.Errorf("%d messages pending, want only the refused job's", len(pending))
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
