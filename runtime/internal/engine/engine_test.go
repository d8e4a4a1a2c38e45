package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/fxamacker/cbor/v2"
)

// The engine's own tests: what only the protocol's internals can show.
// Behaviour through the node API is tested in package runtime.

// openStore is a fresh embedded store for one test.
func openStore(t *testing.T) store.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "flowgen.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestEnterDerivesTheKindOfOldMessages: a message published before tasks
// carried their kind gets it from its activation id, and one whose id does
// not parse is poison.
func TestEnterDerivesTheKindOfOldMessages(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	job, err := runtype.NewJobID()
	if err != nil {
		t.Fatal(err)
	}
	for act, want := range map[string]runtype.Kind{"n@": runtype.Entry, "n@/2<m": runtype.Step, "e#join@": runtype.Join, "n@<m#undo": runtype.Undo, "garbage": 0} {
		payload, err := cbor.Marshal(task{Flow: "f", Node: "n", Act: act})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(context.Background(), func(tx store.Tx) error {
			en, err := e.enter(tx, store.Message{ID: messageID(job, act), Job: job[:], Payload: payload, Attempt: 1})
			if err != nil {
				return err
			}
			if en.t.Kind != want {
				t.Errorf("%s: kind %s, want %s", act, en.t.Kind, want)
			}
			return nil
		})
		if want == 0 {
			if !errors.Is(err, errPoison) {
				t.Errorf("%s: %v, want poison", act, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", act, err)
		}
	}
}

// TestJobIndexBackfill lists jobs written before the index existed.
func TestJobIndexBackfill(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	if err := e.Register(&Flow{Name: "approval", Nodes: []*Node{{Alias: "ok", Checkpoint: &runtype.Checkpoint{}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var jobs []runtype.JobID
	for range 3 {
		job, err := e.Start(ctx, "approval", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	// Remove the index, as a store from before it would be.
	err := s.Update(ctx, func(tx store.Tx) error {
		for _, j := range jobs {
			if err := tx.Delete(jobIndexKey(j)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.Jobs(ctx, runtype.JobQuery{})
	if err != nil || len(l.Jobs) != 3 || l.Jobs[0].Job != jobs[2].String() {
		t.Fatalf("after backfill: %+v %v", l, err)
	}
}
