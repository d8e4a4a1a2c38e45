package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// TestStoreFormatIsRecordedAndANewerOneRefused: the first start records
// the store's format version; a store without one (written before
// versions were kept) is read and recorded; a store a newer release wrote
// is refused by Start and Run with ErrNewerFormat, and nothing is
// written. Both stores.
func TestStoreFormatIsRecordedAndANewerOneRefused(t *testing.T) {
	onEachBackend(t, func(t *testing.T, _ backend, r *rig) {
		ctx := context.Background()
		format := func() string {
			t.Helper()
			var v string
			err := r.store.View(ctx, func(tx store.ReadTx) error {
				b, err := tx.Get([]byte("format"))
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				v = string(b)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if v := format(); v != "" {
			t.Fatalf("a new store has format %q before any start", v)
		}
		e := New(r.store, Options{Owner: "w", Now: r.clock.Now})
		if err := e.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Start(ctx, "linear", json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if v := format(); v != "1" {
			t.Fatalf("format after the first start %q, want 1", v)
		}

		// A newer release wrote the store.
		if err := r.store.Update(ctx, func(tx store.Tx) error { return tx.Put([]byte("format"), []byte("2")) }); err != nil {
			t.Fatal(err)
		}
		later := New(r.store, Options{Owner: "later", Now: r.clock.Now})
		if err := later.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		jobs, err := later.Jobs(ctx, runtime.JobQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := later.Start(ctx, "linear", json.RawMessage(`{"n":1}`)); !errors.Is(err, ErrNewerFormat) {
			t.Fatalf("start on a newer store: %v, want ErrNewerFormat", err)
		}
		if err := later.Run(ctx, 1); !errors.Is(err, ErrNewerFormat) {
			t.Fatalf("run on a newer store: %v, want ErrNewerFormat", err)
		}
		after, err := later.Jobs(ctx, runtime.JobQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Jobs) != len(jobs.Jobs) || format() != "2" {
			t.Fatalf("a refused start wrote: %d jobs, then %d; format %q", len(jobs.Jobs), len(after.Jobs), format())
		}

		// A store from before versions were kept is format 1.
		if err := r.store.Update(ctx, func(tx store.Tx) error { return tx.Delete([]byte("format")) }); err != nil {
			t.Fatal(err)
		}
		old := New(r.store, Options{Owner: "old", Now: r.clock.Now})
		if err := old.Register(linearFlow()); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Start(ctx, "linear", json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		if v := format(); v != "1" {
			t.Fatalf("format of an unversioned store after a start %q, want 1", v)
		}
	})
}
